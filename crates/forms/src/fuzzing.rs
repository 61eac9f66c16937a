//! The fuzz check for `crates/forms/fuzz` (target `parse_map_answer`), kept here so that the saved
//! corpus also runs as a plain unit test and the harness cannot drift from the code it checks.
//!
//! Compiled only for this crate's tests and with the `fuzzing` feature, which only the fuzz workspace
//! turns on; it is hidden from the docs and is no part of the crate's API.
//!
//! The path: bytes → JSON params → [`parse_request_with`] (core MCP, then again with OpenAI's form
//! extension) → [`Form::render`] → render answers, typed content and defaults → [`Form::validate`]. Besides "never panics", it checks the crate's promises: every
//! content the crate returns passes `validate`, and the render block survives a serde round trip.
//!
//! Input layout: the JSON params, then optionally a `0xFF` byte followed by answer records separated by
//! `\n`. A record's first byte picks a question (by index, modulo the question count; `0xFE` picks an
//! id that is not in the form); the rest, split at `\t`, are the answer texts.

use serde_json::Value;

use crate::render::{RenderAnswer, RenderAnswers, RenderBlock};
use crate::{
    Content, ElicitationRequest, Form, ParseOptions, ValidationErrors, parse_request_with,
};

/// Runs one input through the form engine, with and without OpenAI's form extension; panics when
/// a promise is broken.
pub fn parse_map_answer(data: &[u8]) {
    let (json, answers) = match data.iter().position(|b| *b == 0xFF) {
        Some(split) => (&data[..split], &data[split + 1..]),
        None => (data, &[][..]),
    };
    let Ok(params) = serde_json::from_slice::<Value>(json) else {
        return;
    };
    for openai_elicitation in [false, true] {
        check(&params, answers, ParseOptions { openai_elicitation });
    }
}

fn check(params: &Value, answers: &[u8], options: ParseOptions) {
    let Ok(ElicitationRequest::Form(request)) = parse_request_with(params, options) else {
        return;
    };
    let form = request
        .form
        .as_deref()
        .expect("a parsed request has its form");
    let shown = request.render.block().expect("the render text reads back");
    let block = form.render(&shown.message);
    assert_eq!(block, shown, "the request's render block is the form's");
    let wire = serde_json::to_string(&block).expect("render block serializes");
    let back: RenderBlock = serde_json::from_str(&wire).expect("render block deserializes");
    assert_eq!(back, block, "render block round trip");

    assert_valid(form, form.default_content());

    let answers = decode_answers(&block, answers);
    assert_valid(form, form.content_from_render_answers(&answers));

    // The same texts as typed JSON: JSON when they parse, strings otherwise.
    let mut typed = Content::new();
    for (id, answer) in &answers.answers {
        let value = match answer.answers.as_slice() {
            [one] => serde_json::from_str(one).unwrap_or_else(|_| Value::String(one.clone())),
            many => Value::Array(many.iter().cloned().map(Value::String).collect()),
        };
        typed.insert(id.clone(), value);
    }
    assert_valid(form, form.content_from_typed(&typed));
    let _ = form.validate(&typed);
    for (key, value) in &typed {
        let _ = form.validate_field(key, value);
    }
}

fn assert_valid(form: &Form, result: Result<Content, ValidationErrors>) {
    if let Ok(content) = result
        && let Err(errors) = form.validate(&content)
    {
        panic!("content {content:?} fails its own validation: {errors}");
    }
}

fn decode_answers(block: &RenderBlock, bytes: &[u8]) -> RenderAnswers {
    let mut answers = RenderAnswers::default();
    if bytes.is_empty() {
        return answers;
    }
    for record in bytes.split(|b| *b == b'\n') {
        let Some((selector, rest)) = record.split_first() else {
            continue;
        };
        let id = if *selector == 0xFE || block.questions.is_empty() {
            "not-a-question".to_owned()
        } else {
            block.questions[usize::from(*selector) % block.questions.len()]
                .id
                .clone()
        };
        let texts: Vec<String> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split(|b| *b == b'\t')
                .map(|t| String::from_utf8_lossy(t).into_owned())
                .collect()
        };
        answers.answers.insert(id, RenderAnswer { answers: texts });
    }
    answers
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every saved corpus entry and seed, through the fuzz check (the fuzzer finds new ones with
    /// `cargo xtask fuzz`).
    #[test]
    fn saved_corpus_and_seeds_pass_the_fuzz_check() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut count = 0;
        for dir in [fuzz.join("corpus/parse_map_answer"), fuzz.join("seeds")] {
            let entries = std::fs::read_dir(&dir)
                .unwrap_or_else(|err| panic!("reading {}: {err}", dir.display()));
            for entry in entries {
                let path = entry.expect("directory entry").path();
                let data = std::fs::read(&path)
                    .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
                let checked = std::panic::catch_unwind(|| super::parse_map_answer(&data));
                assert!(checked.is_ok(), "{} fails the fuzz check", path.display());
                count += 1;
            }
        }
        assert!(count > 100, "only {count} inputs: is the corpus missing?");
    }
}
