//! Fuzz target: the JSON-RPC frame reader and the replies built for what it reads. The check itself
//! is `formwork_host::fuzzing::parse_frame`, which the crate's tests also run over the saved corpus.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| formwork_host::fuzzing::parse_frame(data));
