//! OpenAI's form extension (`ParseOptions::openai_elicitation`): the request shapes, option
//! thumbnails, free-text lists with suggestions and `x-openai-input` resource pickers — the exact
//! questions they render to, the content their answers give, and the declines, each checked
//! with and without the extension.

#![allow(clippy::unwrap_used)]

use formwork_forms::render::RenderAnswers;
use formwork_forms::{ElicitationRequest, FormRequest, ParseOptions, parse_request_with};
use serde_json::{Value, json};

const OPENAI: ParseOptions = ParseOptions {
    openai_elicitation: true,
};

fn params(property: Value) -> Value {
    json!({"message": "m", "requestedSchema": {"type": "object", "properties": {"field": property}}})
}

fn form(params: &Value, options: ParseOptions) -> FormRequest {
    match parse_request_with(params, options) {
        Ok(ElicitationRequest::Form(request)) => request,
        other => panic!("{params}: {other:?}"),
    }
}

/// The one question of a one-property form, with its `schema` left out (it is the property
/// schema as sent, checked once in `every_question_keeps_its_schema`).
fn question(property: Value) -> Value {
    let request = form(&params(property), OPENAI);
    let mut block = serde_json::to_value(&request.render).unwrap();
    let mut question = block["questions"][0].take();
    question.as_object_mut().unwrap().remove("schema");
    question
}

/// The decline of a one-property form: `rule: text`.
fn declined(property: Value, options: ParseOptions) -> String {
    match parse_request_with(&params(property), options) {
        Err(decline) => format!("{}: {decline}", decline.rule),
        other => panic!("expected a decline, got {other:?}"),
    }
}

/// The content of a one-property form for render `answers`, or the error lines.
fn answered(property: Value, answers: Value) -> Value {
    let request = form(&params(property), OPENAI);
    let answers: RenderAnswers =
        serde_json::from_value(json!({"answers": {"field": {"answers": answers}}})).unwrap();
    match request
        .form
        .as_ref()
        .unwrap()
        .content_from_render_answers(&answers)
    {
        Ok(content) => Value::Object(content),
        Err(errors) => json!(errors.to_string()),
    }
}

fn parts_picker(extra: Value) -> Value {
    let mut input = json!({"type": "resource", "options": [
        {"uri": "cad://parts/hex-bolt", "name": "hex-bolt", "title": "M6 hex bolt",
         "description": "A fastener", "mimeType": "model/stl",
         "_meta": {"openai/thumbnail": {"src": "https://example.com/bolt.png"}}},
        {"uri": "cad://parts/washer", "name": "washer"}
    ]});
    input
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    input
}

fn multi_picker(extra: Value) -> Value {
    json!({"type": "array", "title": "Parts", "items": {"type": "string", "format": "uri"},
           "x-openai-input": parts_picker(extra)})
}

fn single_picker(extra: Value) -> Value {
    json!({"type": "string", "format": "uri", "title": "Part", "x-openai-input": parts_picker(extra)})
}

#[test]
fn option_descriptions_and_thumbnails() {
    let property = json!({"type": "string", "title": "Finish", "oneOf": [
        {"const": "matte", "title": "Matte", "description": "No shine",
         "x-openai-thumbnail": {"src": "https://example.com/matte.png", "mimeType": "image/png"}},
        {"const": "gloss", "title": "Gloss", "x-openai-preview": {"src": "data:image/png;base64,iVBORw0KGgo="}},
        {"const": "raw", "title": "Raw"}
    ]});
    assert_eq!(
        question(property.clone()),
        json!({"id": "field", "header": "Finish", "question": "Finish", "isOther": false,
               "isSecret": false, "options": [
                   {"label": "Matte", "description": "No shine", "value": "matte",
                    "thumbnail": {"src": "https://example.com/matte.png", "mimeType": "image/png"}},
                   {"label": "Gloss", "description": "", "value": "gloss",
                    "thumbnail": {"src": "data:image/png;base64,iVBORw0KGgo="}},
                   {"label": "Raw", "description": "", "value": "raw"}],
               "input": "single_select", "multiSelect": false, "required": false,
               "optionImages": true})
    );
    // Without the extension the thumbnails are unknown keywords, kept only in `schema`.
    let plain = form(&params(property), ParseOptions::default());
    let plain = serde_json::to_value(&plain.render.block().unwrap().questions[0]).unwrap();
    assert_eq!(plain["options"][0].get("thumbnail"), None);
    assert_eq!(plain.get("optionImages"), None);
}

#[test]
fn thumbnails_load_only_from_https_or_data_images() {
    for (src, why) in [
        (
            "http://example.com/a.png",
            "\"http://example.com/a.png\" must be an https:// URL or a data:image URI",
        ),
        (
            "javascript:alert(1)",
            "\"javascript:alert(1)\" must be an https:// URL or a data:image URI",
        ),
        (
            "/a.png",
            "\"/a.png\" must be an https:// URL or a data:image URI",
        ),
        (
            "data:text/html;base64,PGI+",
            "must be a base64 `data:image/<type>;base64,...` URI",
        ),
        (
            "data:image/png,raw",
            "must be a base64 `data:image/<type>;base64,...` URI",
        ),
        (
            "data:image/png;base64,a b",
            "must be a base64 `data:image/<type>;base64,...` URI",
        ),
        (
            "https://exa mple.com/a.png",
            "contains whitespace or control characters",
        ),
    ] {
        let property = json!({"type": "array", "items": {"anyOf": [
            {"const": "a", "title": "A", "x-openai-thumbnail": {"src": src}}]}});
        assert_eq!(
            declined(property.clone(), OPENAI),
            format!(
                "invalid-thumbnail: property `field`: `items.anyOf[0].x-openai-thumbnail.src` {why}"
            ),
            "{src}"
        );
        // Without the extension the keyword is not read, so nothing is declined.
        form(&params(property), ParseOptions::default());
    }
    assert_eq!(
        declined(
            json!({"type": "string", "oneOf": [{"const": "a", "x-openai-thumbnail": "https://example.com/a.png"}]}),
            OPENAI
        ),
        "invalid-thumbnail: property `field`: `oneOf[0].x-openai-thumbnail` must be an icon object \
         with `src`, not a string"
    );
}

#[test]
fn suggestions_on_a_string_array() {
    let property = json!({"type": "array", "title": "Accessories", "maxItems": 3, "items": {
        "type": "string", "maxLength": 14, "x-openai-suggestions": [
            {"const": "washer", "title": "Washer", "description": "M6 steel"},
            {"const": "spacer", "title": "Spacer"}]}});
    assert_eq!(
        question(property.clone()),
        json!({"id": "field", "header": "Accessories", "question": "Accessories", "isOther": true,
               "isSecret": false, "input": "text_list", "multiSelect": true, "required": false,
               "maxLength": 14, "maxItems": 3,
               "suggestions": [
                   {"label": "Washer", "description": "M6 steel", "value": "washer"},
                   {"label": "Spacer", "description": "", "value": "spacer"}]})
    );
    // Suggestions by label or value, and free text; the item rules still apply.
    assert_eq!(
        answered(
            property.clone(),
            json!(["Washer", "custom-spacer", "spacer"])
        ),
        json!({"field": ["washer", "custom-spacer", "spacer"]})
    );
    assert_eq!(
        answered(property.clone(), json!([""])),
        json!({"field": []})
    );
    assert_eq!(
        answered(
            property.clone(),
            json!(["a very long gasket", "b", "c", "d"])
        ),
        json!("field: item 0 must be at most 14 characters long\nfield: must have at most 3 items")
    );
    // Without the extension a list without options is declined, as before.
    assert_eq!(
        declined(property, ParseOptions::default()),
        "unsupported-type: property `field`: is an array whose `items` have no `enum` or `anyOf`; \
         free-form lists are not supported"
    );
}

#[test]
fn a_string_list_may_ask_for_unique_items() {
    let property = json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
    assert_eq!(
        answered(property, json!(["a", "a"])),
        json!("field: must not list \"a\" twice")
    );
}

#[test]
fn a_single_resource_picker() {
    assert_eq!(
        question(single_picker(json!({}))),
        json!({"id": "field", "header": "Part", "question": "Part", "isOther": false,
               "isSecret": false, "options": [
                   {"label": "M6 hex bolt", "description": "A fastener", "value": "cad://parts/hex-bolt",
                    "thumbnail": {"src": "https://example.com/bolt.png"}},
                   {"label": "washer", "description": "", "value": "cad://parts/washer"}],
               "input": "resource", "multiSelect": false, "required": false, "format": "uri",
               "optionImages": true, "resource": {}})
    );
    let property = single_picker(json!({}));
    assert_eq!(
        answered(property.clone(), json!(["M6 hex bolt"])),
        json!({"field": "cad://parts/hex-bolt"})
    );
    assert_eq!(
        answered(property.clone(), json!(["cad://parts/washer"])),
        json!({"field": "cad://parts/washer"})
    );
    // No uploads: only the offered resources.
    assert_eq!(
        answered(property, json!(["file:///tmp/mine.stl"])),
        json!("field: must be one of the offered resources, not \"file:///tmp/mine.stl\"")
    );
    let uploads = single_picker(json!({"userOptions": {"accept": [".stl"]}}));
    assert_eq!(
        question(uploads.clone())["resource"],
        json!({"uploads": {"accept": [".stl"]}})
    );
    assert_eq!(
        answered(
            uploads.clone(),
            json!(["file:///home/me/.local/share/formwork/uploads/1/mine.stl"])
        ),
        json!({"field": "file:///home/me/.local/share/formwork/uploads/1/mine.stl"})
    );
    // An added file must be of a kind the picker takes.
    assert_eq!(
        answered(
            uploads.clone(),
            json!(["file:///tmp/formwork/uploads/s1/1-notes.txt"])
        ),
        json!(
            "field: names a file this picker does not take (it takes .stl): \"file:///tmp/formwork/uploads/s1/1-notes.txt\""
        )
    );
    assert_eq!(
        answered(
            uploads.clone(),
            json!(["file:///tmp/formwork/uploads/s1/1-PART.STL"])
        ),
        json!({"field": "file:///tmp/formwork/uploads/s1/1-PART.STL"})
    );
    assert_eq!(
        answered(uploads, json!(["https://elsewhere.example/x.stl"])),
        json!(
            "field: must be an offered resource or a file:/// URI of an added file, not \"https://elsewhere.example/x.stl\""
        )
    );
}

#[test]
fn a_multi_resource_picker() {
    let explicit = multi_picker(json!({"selection": "explicit"}));
    let rendered = question(explicit.clone());
    assert_eq!(rendered["input"], "resource");
    assert_eq!(rendered["multiSelect"], true);
    assert_eq!(rendered["resource"], json!({"selection": "explicit"}));
    assert_eq!(
        answered(explicit.clone(), json!(["washer", "M6 hex bolt"])),
        json!({"field": ["cad://parts/washer", "cad://parts/hex-bolt"]})
    );
    assert_eq!(
        answered(explicit.clone(), json!([""])),
        json!({"field": []})
    );
    assert_eq!(
        answered(explicit, json!(["washer", "washer"])),
        json!("field: must not list \"cad://parts/washer\" twice")
    );
    // Implicit selection starts with every resource and always takes files.
    let implicit = multi_picker(json!({"selection": "implicit"}));
    let rendered = question(implicit.clone());
    assert_eq!(
        rendered["resource"],
        json!({"selection": "implicit", "uploads": {"accept": []}})
    );
    assert_eq!(
        rendered["default"],
        json!(["cad://parts/hex-bolt", "cad://parts/washer"])
    );
    assert_eq!(
        answered(implicit.clone(), json!([])),
        json!({"field": ["cad://parts/hex-bolt", "cad://parts/washer"]})
    );
    assert_eq!(
        answered(
            implicit,
            json!(["washer", "file:///tmp/formwork/extra.stl"])
        ),
        json!({"field": ["cad://parts/washer", "file:///tmp/formwork/extra.stl"]})
    );
}

#[test]
fn picker_defaults_name_offered_resources() {
    let mut property = multi_picker(json!({}));
    property["default"] = json!(["cad://parts/washer"]);
    assert_eq!(question(property)["default"], json!(["cad://parts/washer"]));
    let mut property = multi_picker(json!({"userOptions": {}}));
    property["default"] = json!(["file:///tmp/a.stl"]);
    assert_eq!(
        declined(property, OPENAI),
        "default-outside-constraints: property `field`: `default` \"file:///tmp/a.stl\" is not \
         allowed: it must name resources from `options`"
    );
    // A default (named or implied) meets the item counts like any other.
    let mut property = multi_picker(json!({}));
    property["default"] = json!(["cad://parts/washer", "cad://parts/hex-bolt"]);
    property["maxItems"] = json!(1);
    assert_eq!(
        declined(property, OPENAI),
        "default-outside-constraints: property `field`: `default` \
         [\"cad://parts/washer\",\"cad://parts/hex-bolt\"] is not allowed: it must have at most 1 item"
    );
    let mut property = multi_picker(json!({"selection": "implicit"}));
    property["minItems"] = json!(3);
    assert_eq!(
        declined(property, OPENAI),
        "default-outside-constraints: property `field`: `default` \
         [\"cad://parts/hex-bolt\",\"cad://parts/washer\"] is not allowed: it must have at least 3 items"
    );
    let mut property = multi_picker(json!({"selection": "implicit"}));
    property["default"] = json!(["cad://parts/washer"]);
    assert_eq!(
        declined(property, OPENAI),
        "default-outside-constraints: property `field`: has a `default` with implicit selection, \
         which starts with every resource"
    );
}

#[test]
fn pickers_the_host_cannot_show_are_declined_whole() {
    for (property, expected) in [
        (
            single_picker(json!({"selection": "explicit"})),
            "unsupported-input: property `field`: `x-openai-input.selection` applies only to an \
             array of URIs, not to one",
        ),
        (
            single_picker(json!({"userOptions": {"kind": "directory"}})),
            "unsupported-input: property `field`: asks for a directory (`userOptions.kind: \
             \"directory\"`); formwork can add files only",
        ),
        (
            single_picker(json!({"type": "camera"})),
            "unsupported-input: property `field`: `x-openai-input.type` \"camera\" is not \
             supported; only \"resource\" is",
        ),
        (
            multi_picker(json!({"selection": "sometimes"})),
            "unsupported-input: property `field`: `x-openai-input.selection` must be \"explicit\" \
             or \"implicit\", not \"sometimes\"",
        ),
        (
            json!({"type": "string", "x-openai-input": {"type": "resource", "options": []}}),
            "unsupported-input: property `field`: has `x-openai-input` but is not a `format: \
             \"uri\"` string",
        ),
        (
            json!({"type": "string", "format": "uri", "x-openai-input": {"type": "resource", "options": []}}),
            "empty-enum: property `field`: `x-openai-input` offers no resources and takes no files \
             (`userOptions`)",
        ),
        (
            json!({"type": "string", "format": "uri", "x-openai-input": {"type": "resource",
                "options": [{"uri": "not a uri", "name": "x"}]}}),
            "invalid-option: property `field`: `x-openai-input.options[0].uri` \"not a uri\" is not \
             an absolute URI",
        ),
        (
            json!({"type": "string", "format": "uri", "x-openai-input": {"type": "resource",
                "options": [{"uri": "cad://a", "name": "a"}, {"uri": "cad://a", "name": "b"}]}}),
            "duplicate-option: property `field`: offers the resource \"cad://a\" twice",
        ),
    ] {
        assert_eq!(declined(property, OPENAI), expected);
    }
}

/// Without the extension a picker is what it was before: a `uri` text field.
#[test]
fn without_the_extension_a_picker_is_a_uri_text_field() {
    let request = form(&params(single_picker(json!({}))), ParseOptions::default());
    let question = serde_json::to_value(&request.render.block().unwrap().questions[0]).unwrap();
    assert_eq!(question["input"], "text");
    assert_eq!(question["format"], "uri");
    assert_eq!(question.get("resource"), None);
}

#[test]
fn the_openai_form_mode_and_the_meta_schema() {
    let picker = json!({"type": "object", "properties": {"part": single_picker(json!({}))}});
    let legacy = json!({"mode": "openai/form", "message": "m", "requestedSchema": picker});
    assert_eq!(
        form(&legacy, OPENAI).render.block().unwrap().questions[0].id,
        "part"
    );
    assert_eq!(
        parse_request_with(&legacy, ParseOptions::default())
            .unwrap_err()
            .to_string(),
        "mode \"openai/form\" is not supported; only \"form\" and \"url\" are"
    );
    let meta = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}, "required": []},
                      "_meta": {"openai/elicitation": {"requestedSchema": picker}, "progressToken": 1}});
    let request = form(&meta, OPENAI);
    assert_eq!(request.render.block().unwrap().questions[0].id, "part");
    // The form answers and validates against the schema it shows; `_meta` stays as sent.
    assert_eq!(request.form.as_ref().unwrap().schema(), &picker);
    assert_eq!(request.meta.unwrap().to_value(), meta["_meta"]);
    // A non-empty core schema is the form, whatever `_meta` holds.
    let core = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
                      "_meta": {"openai/elicitation": {"requestedSchema": picker}}});
    assert_eq!(
        form(&core, OPENAI).render.block().unwrap().questions[0].id,
        "x"
    );
    let broken = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}},
                        "_meta": {"openai/elicitation": "form"}});
    assert_eq!(
        parse_request_with(&broken, OPENAI).unwrap_err().to_string(),
        "`_meta[\"openai/elicitation\"]` must be an object, not a string"
    );
}

#[test]
fn every_question_keeps_its_schema() {
    for property in [single_picker(json!({})), multi_picker(json!({}))] {
        let request = form(&params(property.clone()), OPENAI);
        let block = serde_json::to_value(&request.render).unwrap();
        assert_eq!(block["questions"][0]["schema"], property);
        assert_eq!(
            request.form.as_ref().unwrap().schema()["properties"]["field"],
            property
        );
    }
}
