//! Property tests: random valid schemas parse, render, and accept their own defaults and valid
//! answers by every route; arbitrary JSON never panics the parser.

#![allow(clippy::unwrap_used)]

use formwork_forms::render::{InputKind, RenderAnswer, RenderAnswers};
use formwork_forms::{Content, ElicitationRequest, parse_request, parse_schema};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// One generated property: its schema, a valid typed value, and the texts a UI would send for it.
#[derive(Debug, Clone)]
struct Prop {
    schema: Value,
    value: Value,
    texts: Vec<String>,
}

fn with_annotations(
    mut schema: Value,
    title: Option<String>,
    description: Option<String>,
) -> Value {
    if let Some(title) = title {
        schema["title"] = json!(title);
    }
    if let Some(description) = description {
        schema["description"] = json!(description);
    }
    schema
}

fn text_prop() -> impl Strategy<Value = Prop> {
    let plain = (0u64..4, 0u64..8, "[a-zé😀 ]{0,12}").prop_map(|(min, extra, seed)| {
        // A lone "" is "explicitly empty" on the render route, so values are never empty here
        // (tests/answers.rs covers that rule).
        let max = (min + extra).max(1);
        let mut value: String = seed.chars().take(max as usize).collect();
        while (value.chars().count() as u64) < min.max(1) {
            value.push('x');
        }
        let schema = json!({"type": "string", "minLength": min, "maxLength": max});
        (schema, value)
    });
    let formatted = prop::sample::select(vec![
        ("email", "ada@example.com"),
        ("uri", "https://example.com/a?b=c#d"),
        ("uri", "urn:isbn:0451450523"),
        ("date", "2024-02-29"),
        ("date-time", "2026-01-31T09:30:00.5+01:00"),
    ])
    .prop_map(|(format, value)| {
        (
            json!({"type": "string", "format": format}),
            value.to_owned(),
        )
    });
    let patterned = prop::sample::select(vec![
        ("^[a-z]+$", "abc"),
        ("\\d{3}", "x123y"),
        ("^\\p{L}+$", "héllo"),
        ("^(?:yes|no)$", "no"),
    ])
    .prop_map(|(pattern, value)| {
        (
            json!({"type": "string", "pattern": pattern}),
            value.to_owned(),
        )
    });
    (prop_oneof![plain, formatted, patterned], any::<bool>()).prop_map(
        |((mut schema, value), with_default)| {
            if with_default {
                schema["default"] = json!(value);
            }
            let texts = vec![value.clone()];
            Prop {
                schema,
                value: json!(value),
                texts,
            }
        },
    )
}

fn number_prop() -> impl Strategy<Value = Prop> {
    (
        any::<bool>(),
        -50i64..50,
        0i64..100,
        0i64..100,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(integer, min, span, offset, bounded, with_default)| {
            let max = min + span;
            let type_name = if integer { "integer" } else { "number" };
            let mut schema = json!({"type": type_name});
            if bounded {
                schema["minimum"] = json!(min);
                schema["maximum"] = json!(max);
            }
            let base = min + offset.min(span);
            let value = if integer {
                json!(base)
            } else {
                json!(base as f64 + if base < max { 0.5 } else { 0.0 })
            };
            if with_default {
                schema["default"] = value.clone();
            }
            Prop {
                texts: vec![value.to_string()],
                schema,
                value,
            }
        })
}

fn boolean_prop() -> impl Strategy<Value = Prop> {
    (any::<bool>(), any::<bool>()).prop_map(|(value, with_default)| {
        let mut schema = json!({"type": "boolean"});
        if with_default {
            schema["default"] = json!(!value);
        }
        Prop {
            schema,
            value: json!(value),
            texts: vec![value.to_string()],
        }
    })
}

/// Option shapes: 0 untitled enum, 1 titled oneOf, 2 legacy enum + enumNames.
fn options_schema(shape: u8, count: usize, multi: bool) -> (Value, Vec<(String, String)>) {
    let options: Vec<(String, String)> = (0..count)
        .map(|i| {
            (
                format!("v{i}"),
                if shape == 0 {
                    format!("v{i}")
                } else {
                    format!("Option {i}")
                },
            )
        })
        .collect();
    let values: Vec<&String> = options.iter().map(|(v, _)| v).collect();
    let labels: Vec<&String> = options.iter().map(|(_, l)| l).collect();
    let consts: Vec<Value> = options
        .iter()
        .map(|(v, l)| json!({"const": v, "title": l}))
        .collect();
    let schema = match (multi, shape) {
        (false, 0) => json!({"type": "string", "enum": values}),
        (false, 1) => json!({"type": "string", "oneOf": consts}),
        (false, _) => json!({"type": "string", "enum": values, "enumNames": labels}),
        (true, 0) => json!({"type": "array", "items": {"type": "string", "enum": values}}),
        (true, _) => json!({"type": "array", "items": {"anyOf": consts}}),
    };
    (schema, options)
}

fn select_prop() -> impl Strategy<Value = Prop> {
    (
        0u8..3,
        1usize..6,
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(shape, count, pick, with_default)| {
            let (mut schema, options) = options_schema(shape, count, false);
            let (value, label) = options[pick.index(count)].clone();
            if with_default {
                schema["default"] = json!(options[0].0);
            }
            Prop {
                schema,
                value: json!(value),
                texts: vec![label],
            }
        })
}

fn multi_prop() -> impl Strategy<Value = Prop> {
    (
        0u8..2,
        1usize..6,
        prop::collection::vec(any::<bool>(), 6),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(shape, count, chosen, bounded, with_default)| {
            let (mut schema, options) = options_schema(shape, count, true);
            let picked: Vec<&(String, String)> = options
                .iter()
                .zip(&chosen)
                .filter(|(_, c)| **c)
                .map(|(o, _)| o)
                .collect();
            if bounded {
                schema["minItems"] = json!(picked.len().min(1));
                schema["maxItems"] = json!(picked.len().max(1));
            }
            if with_default {
                schema["default"] = json!([options[0].0]);
            }
            let texts = if picked.is_empty() {
                vec![String::new()]
            } else {
                picked.iter().map(|(_, l)| l.clone()).collect()
            };
            let value = json!(picked.iter().map(|(v, _)| v.clone()).collect::<Vec<_>>());
            Prop {
                schema,
                value,
                texts,
            }
        })
}

fn prop_strategy() -> impl Strategy<Value = Prop> {
    let kind = prop_oneof![
        text_prop(),
        number_prop(),
        boolean_prop(),
        select_prop(),
        multi_prop()
    ];
    (
        kind,
        prop::option::of("[A-Za-z ]{1,12}"),
        prop::option::of("[A-Za-z ,.?]{1,30}"),
    )
        .prop_map(|(mut prop, title, description)| {
            prop.schema = with_annotations(prop.schema, title, description);
            prop
        })
}

/// A schema of 1..8 generated properties, some required, plus the props by key.
fn form_strategy() -> impl Strategy<Value = (Value, Vec<(String, Prop, bool)>)> {
    prop::collection::vec((prop_strategy(), any::<bool>()), 1..8).prop_map(|props| {
        let fields: Vec<(String, Prop, bool)> = props
            .into_iter()
            .enumerate()
            .map(|(i, (p, r))| (format!("f{i}"), p, r))
            .collect();
        let properties: Map<String, Value> = fields
            .iter()
            .map(|(k, p, _)| (k.clone(), p.schema.clone()))
            .collect();
        let required: Vec<&String> = fields
            .iter()
            .filter(|(_, _, r)| *r)
            .map(|(k, _, _)| k)
            .collect();
        (
            json!({"type": "object", "properties": properties, "required": required}),
            fields,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn valid_schemas_round_trip((schema, fields) in form_strategy()) {
        let form = parse_schema(&schema).unwrap_or_else(|d| panic!("{d}\n{schema:#}"));
        let block = form.render("m");
        prop_assert_eq!(block.questions.len(), fields.len());
        for (question, (key, prop, required)) in block.questions.iter().zip(&fields) {
            prop_assert_eq!(&question.id, key);
            prop_assert_eq!(&question.schema.to_value(), &prop.schema);
            prop_assert_eq!(question.required, *required);
            prop_assert!(!question.is_secret);
            prop_assert_eq!(question.multi_select, question.input == InputKind::MultiSelect);
        }
        let wire = serde_json::to_value(&block).unwrap();
        prop_assert_eq!(serde_json::from_value::<formwork_forms::render::RenderBlock>(wire).unwrap(), block);

        // Defaults: fine unless a required field has none.
        let missing: Vec<&String> = fields.iter().filter(|(_, p, r)| *r && p.schema.get("default").is_none()).map(|(k, _, _)| k).collect();
        match form.default_content() {
            Ok(content) => {
                prop_assert!(missing.is_empty());
                form.validate(&content).unwrap();
            }
            Err(errors) => {
                let fields_with_errors: Vec<&String> = errors.errors.iter().map(|e| &e.field).collect();
                prop_assert_eq!(fields_with_errors, missing);
            }
        }

        // Typed answers for every field.
        let typed: Content = fields.iter().map(|(k, p, _)| (k.clone(), p.value.clone())).collect();
        let from_typed = form.content_from_typed(&typed).unwrap_or_else(|e| panic!("{e}\n{schema:#}\n{typed:?}"));
        prop_assert_eq!(&from_typed, &typed);

        // The same answers as the UI sends them.
        let answers = RenderAnswers {
            answers: fields.iter().map(|(k, p, _)| (k.clone(), RenderAnswer { answers: p.texts.clone() })).collect(),
        };
        let from_render = form.content_from_render_answers(&answers).unwrap_or_else(|e| panic!("{e}\n{schema:#}\n{answers:?}"));
        // Numbers typed as text come back as the same JSON numbers.
        prop_assert_eq!(serde_json::to_string(&from_render).unwrap(), serde_json::to_string(&typed).unwrap());
    }

    #[test]
    fn parse_request_never_panics(params in arbitrary_json(4)) {
        let _ = parse_request(&params);
    }

    #[test]
    fn a_form_gives_back_its_schema_as_sent(params in arbitrary_json(4), properties in prop::collection::vec(("[a-c]{1,2}", arbitrary_property()), 0..5)) {
        let properties: Map<String, Value> = properties.into_iter().collect();
        let form_params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": properties}});
        for params in [params, form_params] {
            if let Ok(ElicitationRequest::Form(request)) = parse_request(&params) {
                prop_assert_eq!(request.form.as_ref().unwrap().schema(), &params["requestedSchema"]);
                for field in request.form.as_ref().unwrap().fields() {
                    prop_assert_eq!(&field.schema.to_value(), &params["requestedSchema"]["properties"][&field.key]);
                }
            }
            if let Some(Ok(form)) = params.get("requestedSchema").map(parse_schema) {
                prop_assert_eq!(form.schema(), &params["requestedSchema"]);
            }
        }
    }

    #[test]
    fn schema_shaped_noise_never_panics(properties in prop::collection::vec(("[a-c]{1,2}", arbitrary_property()), 0..5), required in prop::collection::vec("[a-c]{1,2}", 0..3)) {
        let properties: Map<String, Value> = properties.into_iter().collect();
        let params = json!({"message": "m", "requestedSchema": {"type": "object", "properties": properties, "required": required}});
        if let Ok(ElicitationRequest::Form(request)) = parse_request(&params) {
            let form = request.form.unwrap();
            let _ = form.render("m");
            if let Ok(content) = form.default_content() {
                form.validate(&content).unwrap();
            }
        }
    }
}

/// Any JSON value, nested up to `depth`.
fn arbitrary_json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z\"{}\\[\\]:.$é]{0,8}".prop_map(Value::String),
        prop::sample::select(vec![
            "form",
            "url",
            "object",
            "string",
            "https://a.example/",
            "type",
            "enum"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(depth, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "mode",
                        "message",
                        "requestedSchema",
                        "url",
                        "type",
                        "properties",
                        "required",
                        "enum",
                        "oneOf",
                        "items",
                        "default",
                        "_meta",
                        "x"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|entries| Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect()
            )),
        ]
    })
}

/// Property schemas assembled from real keywords with random values.
fn arbitrary_property() -> impl Strategy<Value = Value> {
    let keyword = prop::sample::select(vec![
        "type",
        "enum",
        "enumNames",
        "oneOf",
        "items",
        "default",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "multipleOf",
        "minItems",
        "maxItems",
        "format",
        "pattern",
        "title",
        "x-openai-suggestions",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "string", "number", "integer", "boolean", "array", "email", "date", "^a+$", "(", "x"
        ])
        .prop_map(|s| json!(s)),
        (-3i64..5).prop_map(|n| json!(n)),
        Just(json!(2.5)),
        Just(json!(["x", "y"])),
        Just(json!([{"const": "x", "title": "X"}, {"const": "y"}])),
        Just(json!({"type": "string", "enum": ["x", "y"]})),
        Just(json!({"anyOf": [{"const": "x", "title": "X"}]})),
        Just(json!(["X", "Y"])),
        Just(json!(true)),
    ];
    prop::collection::vec((keyword, value), 0..6).prop_map(|entries| {
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    })
}
