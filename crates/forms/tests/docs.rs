//! The worked example in `docs/render-protocol.md` is what the crate really does.

#![allow(clippy::unwrap_used)]

use formwork_forms::render::RenderAnswers;
use formwork_forms::{ElicitationRequest, parse_request};
use serde_json::Value;

/// The ```json blocks of the doc's "## Example" section, in order.
fn example_blocks() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/render-protocol.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let section = doc
        .split("\n## Example\n")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    section
        .split("```json\n")
        .skip(1)
        .map(|rest| serde_json::from_str(rest.split("\n```").next().unwrap()).unwrap())
        .collect()
}

#[test]
fn render_protocol_example_is_accurate() {
    let blocks = example_blocks();
    let [params, block, answers, content, ..] = blocks.as_slice() else {
        panic!("expected request, block, answers and content blocks");
    };
    let Ok(ElicitationRequest::Form(request)) = parse_request(params) else {
        panic!("the example request must parse");
    };
    assert_eq!(&serde_json::to_value(&*request.render).unwrap(), block);
    let answers: RenderAnswers = serde_json::from_value(answers.clone()).unwrap();
    let actual = request
        .form
        .as_ref()
        .unwrap()
        .content_from_render_answers(&answers)
        .unwrap();
    assert_eq!(
        serde_json::to_string(&actual).unwrap(),
        serde_json::to_string(content).unwrap()
    );
}
