//! Numbers keep their exact value through the form: a default comes back as the very number the
//! server sent, and a bound in the render block reads back as itself. `5.333333333333334e71` is
//! the shortest text of its double; serde_json's default float reader (fast, not always exact)
//! read that text one unit in the last place lower, and the form reads its schema back from text.

#![allow(clippy::unwrap_used)]

use formwork_forms::render::RenderBlock;
use formwork_forms::{ElicitationRequest, parse_request};
use serde_json::json;

#[test]
fn a_number_default_and_bound_keep_their_exact_value() {
    let params = json!({
        "message": "How many?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "n": {"type": "number", "default": 5.333333333333334e71, "maximum": 5.333333333333334e71}
            }
        }
    });
    let Ok(ElicitationRequest::Form(request)) = parse_request(&params) else {
        panic!("not a form");
    };
    let form = request.form.as_deref().unwrap();
    let content = form.default_content().unwrap();
    assert_eq!(
        serde_json::to_string(&content).unwrap(),
        r#"{"n":5.333333333333334e+71}"#
    );

    let block = form.render(&request.render.block().unwrap().message);
    let wire = serde_json::to_string(&block).unwrap();
    assert!(
        wire.contains(r#""default":5.333333333333334e+71"#),
        "{wire}"
    );
    assert!(
        wire.contains(r#""maximum":5.333333333333334e+71"#),
        "{wire}"
    );
    let back: RenderBlock = serde_json::from_str(&wire).unwrap();
    assert_eq!(back, block);
}
