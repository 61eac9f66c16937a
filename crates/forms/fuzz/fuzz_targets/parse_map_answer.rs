//! Fuzz target: the form engine, from request params to validated content. The check itself is
//! `formwork_forms::fuzzing::parse_map_answer`, which the crate's tests also run over the saved corpus.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| formwork_forms::fuzzing::parse_map_answer(data));
