//! The worked example in `docs/render-protocol.md` is what the crate really does.

#![allow(clippy::unwrap_used)]

use formwork_forms::render::RenderAnswers;
use formwork_forms::{ElicitationRequest, ParseOptions, parse_request, parse_request_with};
use serde_json::{Value, json};

/// The ```json blocks of the doc's "## Example" section, in order.
fn example_blocks() -> Vec<Value> {
    blocks_of("Example")
}

/// The ```json blocks of the doc's section `## <title>`, in order.
fn blocks_of(title: &str) -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/render-protocol.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let section = doc
        .split(&format!("\n## {title}\n"))
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
    assert_eq!(&serde_json::to_value(&request.render).unwrap(), block);
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

/// The OpenAI section's examples come in pairs: a property, then the question it renders to
/// (with the extension on), its `schema` left out.
#[test]
fn openai_extension_examples_are_accurate() {
    let blocks = blocks_of("OpenAI's form extension");
    assert_eq!(blocks.len(), 4);
    for pair in blocks.chunks(2) {
        let [property, expected] = pair else {
            unreachable!()
        };
        let id = expected["id"].as_str().unwrap();
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {id: property}}});
        let options = ParseOptions {
            openai_elicitation: true,
        };
        let Ok(ElicitationRequest::Form(request)) = parse_request_with(&params, options) else {
            panic!("{property} must parse");
        };
        let mut question =
            serde_json::to_value(&request.render.block().unwrap().questions[0]).unwrap();
        assert_eq!(
            question.as_object_mut().unwrap().remove("schema").unwrap(),
            *property
        );
        assert_eq!(&question, expected);
    }
}
