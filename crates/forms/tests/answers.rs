//! Answers to content: render answers (labels), typed JSON and validation messages. The cases are data
//! in `tests/fixtures/answers.json`, each run through [`check`].

#![allow(clippy::unwrap_used)]

mod common;

use common::{fixture, form};
use formwork_forms::render::RenderAnswers;
use formwork_forms::{Content, ValidationErrors};
use serde_json::Value;

/// Runs one case: converts `render` answers, `typed` content or `validate`s content for the request
/// fixture `form`, and compares with `content` (same keys in the same order) or `errors` (the
/// `Display` lines of the errors).
fn check(case: &Value) {
    let name = case["name"].as_str().unwrap();
    let form = form(case["form"].as_str().unwrap());
    let result: Result<Option<Content>, ValidationErrors> = if let Some(render) = case.get("render")
    {
        let answers: RenderAnswers = serde_json::from_value(render.clone()).unwrap();
        form.content_from_render_answers(&answers).map(Some)
    } else if let Some(typed) = case.get("typed") {
        form.content_from_typed(typed.as_object().unwrap())
            .map(Some)
    } else if let Some(content) = case.get("validate") {
        form.validate(content.as_object().unwrap()).map(|()| None)
    } else {
        panic!("{name}: needs render, typed or validate")
    };
    match (result, case.get("content"), case.get("errors")) {
        (Ok(Some(content)), Some(expected), None) => {
            assert_eq!(
                serde_json::to_string(&content).unwrap(),
                serde_json::to_string(expected).unwrap(),
                "{name}"
            );
            // Whatever we produce passes our own validation.
            form.validate(&content).unwrap();
        }
        (Ok(None), None, None) => assert_eq!(case["valid"], Value::Bool(true), "{name}"),
        (Err(errors), None, Some(expected)) => {
            let lines: Vec<String> = errors.to_string().lines().map(str::to_owned).collect();
            let expected: Vec<String> = serde_json::from_value(expected.clone()).unwrap();
            assert_eq!(lines, expected, "{name}");
        }
        (result, content, errors) => {
            panic!("{name}: got {result:?}, expected content {content:?} / errors {errors:?}")
        }
    }
}

#[test]
fn answer_table() {
    let cases = fixture("answers.json");
    for case in cases.as_array().unwrap() {
        check(case);
    }
}

#[test]
fn every_label_round_trips_to_its_value() {
    for name in [
        "server_everything",
        "ts_sdk",
        "openai_extensions",
        "seed_strategy",
    ] {
        let form = form(name);
        let block = form.render("m");
        for question in &block.questions {
            for option in question.options.iter().flatten() {
                let mut answers =
                    RenderAnswers::from_pairs([(question.id.clone(), [option.label.clone()])]);
                // Fill the other required fields with something valid: their defaults or a
                // known-good value.
                for other in form.fields() {
                    if other.required && other.default.is_none() && other.key != question.id {
                        let text = match other.key.as_str() {
                            "email" => "a@b.example",
                            "code" => "ABC-1234",
                            "quantity" => "5",
                            "strategy" => "Fast",
                            _ => "Ada",
                        };
                        answers.answers.insert(
                            other.key.clone(),
                            formwork_forms::render::RenderAnswer {
                                answers: vec![text.to_owned()],
                            },
                        );
                    }
                }
                let content = form
                    .content_from_render_answers(&answers)
                    .unwrap_or_else(|e| panic!("{name}/{}: {e}", question.id));
                let expected = if question.multi_select {
                    Value::Array(vec![option.value.clone()])
                } else {
                    option.value.clone()
                };
                assert_eq!(
                    content[&question.id], expected,
                    "{name}/{}/{}",
                    question.id, option.label
                );
            }
        }
    }
}
