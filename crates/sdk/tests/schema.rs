//! The schemas types produce: exact JSON, and the shapes refused with the field named.

use std::collections::BTreeSet;

use formwork_sdk::openai::{ResourceInput, ResourceOption, Suggestion, Thumbnail};
use formwork_sdk::{Elicit, FormSchema, SchemaError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Plain {
    Red,
    Green,
}

#[derive(Deserialize, serde::Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
enum Titled {
    /// Small
    Small,
    #[schemars(title = "Large size")]
    Large,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Everything {
    #[schemars(title = "Name", length(min = 1, max = 20))]
    name: String,
    #[schemars(email)]
    email: String,
    #[schemars(url)]
    site: Option<String>,
    #[schemars(extend("format" = "date"))]
    day: String,
    #[schemars(extend("format" = "date-time"))]
    at: String,
    #[schemars(range(min = 0.5, max = 2.5))]
    ratio: f64,
    count: i32,
    colours: Vec<Plain>,
    #[schemars(length(min = 1, max = 2))]
    sizes: BTreeSet<Titled>,
    size: Option<Titled>,
    #[serde(default = "yes")]
    ok: bool,
    #[serde(default = "small")]
    fallback: Titled,
    #[serde(default = "both")]
    picked: Vec<Titled>,
    #[serde(default = "greeting")]
    hello: String,
}

fn small() -> Titled {
    Titled::Small
}

fn both() -> Vec<Titled> {
    vec![Titled::Small, Titled::Large]
}

fn greeting() -> String {
    "hi".into()
}

fn yes() -> bool {
    true
}

impl Elicit for Everything {}

#[test]
fn every_field_kind_lowers_to_the_flat_grammar_in_declaration_order() {
    let form = Everything::form().expect("a form");
    assert_eq!(
        form.to_value(),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 20},
                "email": {"type": "string", "format": "email"},
                "site": {"type": "string", "format": "uri"},
                "day": {"type": "string", "format": "date"},
                "at": {"type": "string", "format": "date-time"},
                "ratio": {"type": "number", "minimum": 0.5, "maximum": 2.5},
                "count": {"type": "integer"},
                "colours": {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}},
                "sizes": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"anyOf": [
                    {"const": "small", "title": "Small"},
                    {"const": "large", "title": "Large size"},
                ]}},
                "size": {"type": "string", "oneOf": [
                    {"const": "small", "title": "Small"},
                    {"const": "large", "title": "Large size"},
                ]},
                "ok": {"type": "boolean", "default": true},
                "fallback": {"type": "string", "oneOf": [
                    {"const": "small", "title": "Small"},
                    {"const": "large", "title": "Large size"},
                ], "default": "small"},
                "picked": {"type": "array", "items": {"anyOf": [
                    {"const": "small", "title": "Small"},
                    {"const": "large", "title": "Large size"},
                ]}, "default": ["small", "large"]},
                "hello": {"type": "string", "default": "hi"},
            },
            "required": ["name", "email", "day", "at", "ratio", "count", "colours", "sizes"],
        })
    );
    let keys: Vec<String> = form.to_value()["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "name", "email", "site", "day", "at", "ratio", "count", "colours", "sizes", "size",
            "ok", "fallback", "picked", "hello",
        ]
    );
    assert!(!form.uses_openai_vocabulary());
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Inner {
    a: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Nested {
    inner: Inner,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Strings {
    tags: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Numbers {
    scores: Vec<u8>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
enum WithData {
    A(String),
    B,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Variant {
    pick: WithData,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Uuid {
    #[schemars(extend("format" = "uuid"))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Extra {
    #[schemars(extend("x-openai-suggestions" = []))]
    code: String,
}

fn error<T: Elicit>() -> String {
    match T::form() {
        Ok(form) => panic!("expected an error, got {}", form.to_value()),
        Err(error) => error.to_string(),
    }
}

impl Elicit for Nested {}
impl Elicit for Strings {}
impl Elicit for Numbers {}
impl Elicit for Variant {}
impl Elicit for Uuid {}
impl Elicit for Extra {}

#[test]
fn what_elicitation_cannot_express_is_an_error_naming_the_field() {
    assert_eq!(
        error::<Nested>(),
        "field `inner` is a nested object; forms hold only flat fields"
    );
    assert_eq!(
        error::<Strings>(),
        "field `tags` is an array of something other than enum options; a multi-select lists its options"
    );
    assert_eq!(
        error::<Numbers>(),
        "field `scores` is an array of something other than enum options; a multi-select lists its options"
    );
    assert_eq!(
        error::<Variant>(),
        "field `pick` has an enum variant that carries data; options are unit variants"
    );
    assert_eq!(
        error::<Uuid>(),
        "field `id` has format \"uuid\"; forms know email, uri, date and date-time"
    );
    assert_eq!(
        error::<Extra>(),
        "field `code` uses `x-openai-suggestions`, which elicitation cannot express"
    );
    assert_eq!(
        FormSchema::of::<String>().map(|form| form.to_value()),
        Err(SchemaError::NotAnObject(
            "its schema has type \"string\"".into()
        ))
    );
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum Bolt {
    /// M6 hex bolt
    ///
    /// A fastener for the main joint
    HexBolt,
    /// M6 washer
    Washer,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Part {
    part: Bolt,
    #[schemars(regex(pattern = r"^[A-Z]{3}-[0-9]+$"))]
    code: String,
    file: String,
}

impl Elicit for Part {
    fn customize(form: &mut FormSchema) -> Result<(), SchemaError> {
        form.thumbnail(
            "part",
            "hex-bolt",
            Thumbnail::new("https://example.com/hex-bolt.png").mime_type("image/png"),
        )?
        .suggestions(
            "code",
            vec![Suggestion::new("CAD-1", "The first part").description("Ships today")],
        )?
        .resource_input(
            "file",
            ResourceInput::new(vec![
                ResourceOption::new("cad://parts/hex-bolt.stl", "hex-bolt.stl").title("Hex bolt"),
            ]),
        )?;
        Ok(())
    }
}

#[test]
fn the_openai_vocabulary_is_typed_and_marks_the_form() {
    let form = Part::form().expect("a form");
    assert_eq!(
        form.to_value(),
        json!({
            "type": "object",
            "properties": {
                "part": {"type": "string", "oneOf": [
                    {"const": "hex-bolt", "title": "M6 hex bolt", "description": "A fastener for the main joint",
                     "x-openai-thumbnail": {"src": "https://example.com/hex-bolt.png", "mimeType": "image/png"}},
                    {"const": "washer", "title": "M6 washer"},
                ]},
                "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$", "x-openai-suggestions": [
                    {"const": "CAD-1", "title": "The first part", "description": "Ships today"},
                ]},
                "file": {"type": "string", "format": "uri", "x-openai-input": {
                    "type": "resource",
                    "options": [{"uri": "cad://parts/hex-bolt.stl", "name": "hex-bolt.stl", "title": "Hex bolt"}],
                }},
            },
            "required": ["part", "code", "file"],
        })
    );
    assert!(form.uses_openai_vocabulary());
}

#[test]
fn openai_additions_are_checked_where_they_go() {
    let mut form = FormSchema::of::<Part>().expect("a form");
    assert_eq!(
        form.thumbnail("part", "hex-bolt", Thumbnail::new("http://example.com/a.png"))
            .map(|_| ())
            .map_err(|error| error.to_string()),
        Err("field `part` has a thumbnail at \"http://example.com/a.png\"; it must be https:// or a data:image/ URI".into())
    );
    assert_eq!(
        form.thumbnail("part", "nut", Thumbnail::new("https://example.com/a.png"))
            .map(|_| ())
            .map_err(|error| error.to_string()),
        Err("field `part` has no option `nut`".into())
    );
    assert_eq!(
        form.suggestions("part", vec![])
            .map(|_| ())
            .map_err(|error| error.to_string()),
        Err("field `part` takes suggestions only as a free-text string or a list of them".into())
    );
    assert_eq!(
        form.resource_input("nope", ResourceInput::new(vec![]))
            .map(|_| ())
            .map_err(|error| error.to_string()),
        Err("field `nope` is not a field of this form".into())
    );
}

/// On 2026-07-28 the question travels inside rmcp's typed `InputRequest`; every field kind must come
/// out of it exactly as written (`Forms::run` refuses to send a question rmcp would change).
#[test]
fn every_field_kind_survives_rmcps_typed_input_request() {
    let question = json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": "Everything?",
        "requestedSchema": Everything::form().expect("a form").to_value(),
    }});
    let typed: rmcp::model::InputRequest =
        serde_json::from_value(question.clone()).expect("an input request");
    assert_eq!(serde_json::to_value(&typed).expect("JSON"), question);
}
