//! Wire types of the render protocol: the `request_user_input` block a UI draws, and the answers it
//! sends back. `docs/render-protocol.md` documents every field.
//!
//! The question shape follows Codex's `item/tool/requestUserInput` (`id`, `header`, `question`,
//! `isOther`, `isSecret`, `options[{label, description}]`) and adds what a form UI needs: the input
//! kind, option values, constraints, the default and the original property schema.

pub use indexmap::IndexMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Number, Value};

use crate::field::{
    Choice, Field, FieldKind, Form, JsonText, NumberRules, ResourcePicker, StringFormat, TextRules,
    Thumbnail,
};

/// The block a UI renders for one form: `{"type": "request_user_input", "message", "questions"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderBlock {
    /// Always [`BlockType::RequestUserInput`].
    #[serde(rename = "type")]
    pub block_type: BlockType,
    /// The request's `message`, shown above the questions.
    pub message: String,
    /// One question per property, in property order.
    pub questions: Vec<Question>,
}

/// A render block as the JSON a UI receives: compact text that clones share.
///
/// A host keeps a pending form's block for as long as the person takes to answer, and shows it
/// to every UI that joins; as text it costs a fraction of the parsed block (which holds a few
/// strings and maps per question). [`RenderText::block`] reads it back.
#[derive(Clone, PartialEq)]
pub struct RenderText(JsonText);

impl RenderText {
    /// The text of `block`.
    pub fn new(block: &RenderBlock) -> RenderText {
        RenderText(JsonText::of(block))
    }

    /// The block, read back from its text.
    pub fn block(&self) -> Result<RenderBlock, serde_json::Error> {
        serde_json::from_str(self.0.as_str())
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl std::fmt::Debug for RenderText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for RenderText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RenderText {
    /// As a [`RenderBlock`], so that only a block is taken.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RenderText, D::Error> {
        RenderBlock::deserialize(deserializer).map(|block| RenderText::new(&block))
    }
}

/// The `type` tag of a [`RenderBlock`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockType {
    /// `"request_user_input"`.
    #[serde(rename = "request_user_input")]
    RequestUserInput,
}

/// One question, made from one property.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// The property key; also the key of this question's answer.
    pub id: String,
    /// A short heading: the property's `title`, else its key.
    pub header: String,
    /// The question text: the property's `description`, else its `title`, else its key.
    pub question: String,
    /// Whether free text is allowed beside the listed `suggestions`.
    pub is_other: bool,
    /// Always `false`: forms never carry secrets (see `sensitive`).
    pub is_secret: bool,
    /// `true` when the key or title names a secret (a password, a token, a card number...),
    /// which a plugin must not ask for in a form: a UI warns the person. Absent when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
    /// The choices of a select question (or of a boolean: "true" and "false"); absent for text input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
    /// Which control to draw.
    pub input: InputKind,
    /// Whether several options may be chosen.
    pub multi_select: bool,
    /// Whether the schema's `required` names this property.
    pub required: bool,
    /// The default as typed JSON (a string, number, boolean, or array of option values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Inclusive lower bound of a number or integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<Number>,
    /// Inclusive upper bound of a number or integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<Number>,
    /// Exclusive lower bound of a number or integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_minimum: Option<Number>,
    /// Exclusive upper bound of a number or integer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_maximum: Option<Number>,
    /// The number must be a multiple of this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<Number>,
    /// Fewest Unicode code points of a text answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    /// Most Unicode code points of a text answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// Fewest options of a multi-select answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    /// Most options of a multi-select answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// An ECMAScript regex (flag `u`) the text must match somewhere (unanchored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// Proposed values of a text or text-list question (`x-openai-suggestions`); free text
    /// stays allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<QuestionOption>>,
    /// `true` when an option or suggestion has a `thumbnail`: every one of them then gets an
    /// image slot, a placeholder where it has no image. Absent when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub option_images: bool,
    /// How a `resource` question picks (absent for other inputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<ResourceInput>,
    /// The property schema as the server sent it, unknown keywords included (shared with the
    /// form's field, not copied).
    pub schema: JsonText,
}

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    /// The text shown to the person, and what the UI answers with.
    pub label: String,
    /// A sentence about the option; `""` when the schema has none.
    pub description: String,
    /// The typed value this option stands for in `content` (a string, or a boolean for
    /// boolean questions, or the resource URI of a `resource` question).
    pub value: Value,
    /// The option's image (`x-openai-thumbnail`, or a resource's `_meta["openai/thumbnail"]`):
    /// an `https://` URL or a base64 `data:image/...` URI, nothing else. Absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbnail: Option<Image>,
}

/// An image to show: `{"src", "mimeType"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// An `https://` URL or a base64 `data:image/...` URI.
    pub src: String,
    /// The image type, when the plugin gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// How a `resource` question picks: `{"selection"?, "uploads"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceInput {
    /// `"explicit"` (select and deselect options) or `"implicit"` (every option starts
    /// selected; what remains is the answer); absent when one resource is picked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
    /// Present when the person may add local files; the answer then holds the `file://` URI
    /// of the host's copy of each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uploads: Option<UploadRules>,
}

/// Which local files the person may add: `{"accept": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRules {
    /// HTML `accept` tokens (`.stl`, `image/*`); empty means any file.
    pub accept: Vec<String>,
}

impl UploadRules {
    /// Whether a file named `name` may be added: its ending matches a file-ending token
    /// (`.stl`, case aside), or a media-type token (`image/*`, which a name cannot show) or no
    /// token at all lets any file through. The answer is checked the same way.
    pub fn accepts(&self, name: &str) -> bool {
        crate::resource::accepts(&self.accept, name)
    }
}

/// The control a question needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// A one-line text box.
    Text,
    /// A text box for a decimal number.
    Number,
    /// A text box for a whole number.
    Integer,
    /// A choice between "true" and "false".
    Boolean,
    /// Pick exactly one option.
    SingleSelect,
    /// Pick any number of distinct options.
    MultiSelect,
    /// Type any number of strings, each following the question's text rules.
    TextList,
    /// Pick resources (`options`, valued by URI) and, with `resource.uploads`, add local files.
    Resource,
}

/// What the UI sends back: `{"answers": {"<question id>": {"answers": ["..."]}}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderAnswers {
    /// Answers by question id.
    pub answers: IndexMap<String, RenderAnswer>,
}

/// The answer to one question: option labels, or the typed text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenderAnswer {
    /// Chosen option labels (select and boolean questions) or one raw text (text, number and integer
    /// questions). An empty list means "left untouched".
    pub answers: Vec<String>,
}

impl RenderAnswers {
    /// Builds answers from `(question id, answers)` pairs; a convenience for hosts and tests.
    pub fn from_pairs<I, K, A, S>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, A)>,
        K: Into<String>,
        A: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let answers = pairs
            .into_iter()
            .map(|(id, list)| {
                (
                    id.into(),
                    RenderAnswer {
                        answers: list.into_iter().map(Into::into).collect(),
                    },
                )
            })
            .collect();
        RenderAnswers { answers }
    }
}

impl Form {
    /// The `request_user_input` block for this form, with `message` shown above the questions.
    pub fn render(&self, message: &str) -> RenderBlock {
        RenderBlock {
            block_type: BlockType::RequestUserInput,
            message: message.to_owned(),
            questions: self.fields.iter().map(question_for).collect(),
        }
    }
}

fn question_for(field: &Field) -> Question {
    let header = field.title.clone().unwrap_or_else(|| field.key.clone());
    let question = field
        .description
        .clone()
        .or_else(|| field.title.clone())
        .unwrap_or_else(|| field.key.clone());
    let mut q = Question {
        id: field.key.clone(),
        header,
        question,
        is_other: false,
        is_secret: false,
        sensitive: field.sensitive,
        options: None,
        input: InputKind::Text,
        multi_select: false,
        required: field.required,
        default: field.default.clone(),
        minimum: None,
        maximum: None,
        exclusive_minimum: None,
        exclusive_maximum: None,
        multiple_of: None,
        min_length: None,
        max_length: None,
        min_items: None,
        max_items: None,
        format: None,
        pattern: None,
        suggestions: None,
        option_images: false,
        resource: None,
        schema: field.schema.clone(),
    };
    match &field.kind {
        FieldKind::Text(rules) => fill_text(&mut q, rules),
        FieldKind::Number(rules) => fill_number(&mut q, InputKind::Number, rules),
        FieldKind::Integer(rules) => fill_number(&mut q, InputKind::Integer, rules),
        FieldKind::Boolean => {
            q.input = InputKind::Boolean;
            q.options = Some(vec![bool_option(true), bool_option(false)]);
        }
        FieldKind::SingleSelect(select) => {
            q.input = InputKind::SingleSelect;
            q.options = Some(select.options.iter().map(option_for).collect());
        }
        FieldKind::MultiSelect(select) => {
            q.input = InputKind::MultiSelect;
            q.multi_select = true;
            q.options = Some(select.options.iter().map(option_for).collect());
            q.min_items = select.min_items;
            q.max_items = select.max_items;
        }
        FieldKind::TextList(list) => {
            fill_text(&mut q, &list.items);
            q.input = InputKind::TextList;
            q.multi_select = true;
            q.is_other = true;
            q.min_items = list.min_items;
            q.max_items = list.max_items;
        }
        FieldKind::Resource(picker) => fill_resource(&mut q, picker),
    }
    let images = |options: &Option<Vec<QuestionOption>>| {
        options
            .iter()
            .flatten()
            .any(|option| option.thumbnail.is_some())
    };
    q.option_images = images(&q.options) || images(&q.suggestions);
    q
}

fn fill_resource(q: &mut Question, picker: &ResourcePicker) {
    q.input = InputKind::Resource;
    q.multi_select = picker.multiple;
    q.format = Some(StringFormat::Uri.as_str().to_owned());
    q.min_items = picker.min_items;
    q.max_items = picker.max_items;
    q.options = Some(
        picker
            .options
            .iter()
            .map(|option| QuestionOption {
                label: option.label().to_owned(),
                description: option.description.clone().unwrap_or_default(),
                value: Value::String(option.uri.clone()),
                thumbnail: option.thumbnail.as_ref().map(image),
            })
            .collect(),
    );
    q.resource = Some(ResourceInput {
        selection: picker
            .multiple
            .then(|| picker.selection.as_str().to_owned()),
        uploads: picker.uploads.as_ref().map(|uploads| UploadRules {
            accept: uploads.accept.clone(),
        }),
    });
}

fn image(thumbnail: &Thumbnail) -> Image {
    Image {
        src: thumbnail.src.clone(),
        mime_type: thumbnail.mime_type.clone(),
    }
}

fn fill_text(q: &mut Question, rules: &TextRules) {
    q.input = InputKind::Text;
    q.min_length = rules.min_length;
    q.max_length = rules.max_length;
    q.format = rules.format.map(|format| format.as_str().to_owned());
    q.pattern = rules
        .pattern
        .as_ref()
        .map(|pattern| pattern.source().to_owned());
    if !rules.suggestions.is_empty() {
        q.is_other = true;
        q.suggestions = Some(rules.suggestions.iter().map(option_for).collect());
    }
}

fn fill_number(q: &mut Question, input: InputKind, rules: &NumberRules) {
    q.input = input;
    q.minimum = rules.minimum.clone();
    q.maximum = rules.maximum.clone();
    q.exclusive_minimum = rules.exclusive_minimum.clone();
    q.exclusive_maximum = rules.exclusive_maximum.clone();
    q.multiple_of = rules.multiple_of.clone();
}

fn option_for(choice: &Choice) -> QuestionOption {
    QuestionOption {
        label: choice.label.clone(),
        description: choice.description.clone().unwrap_or_default(),
        value: Value::String(choice.value.clone()),
        thumbnail: choice.thumbnail.as_ref().map(image),
    }
}

fn bool_option(value: bool) -> QuestionOption {
    QuestionOption {
        label: value.to_string(),
        description: String::new(),
        value: Value::Bool(value),
        thumbnail: None,
    }
}
