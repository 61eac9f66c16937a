//! The `openai/elicitation` vocabulary as Rust types: option thumbnails, suggestions and the
//! resource picker. Attach them to a form with [`FormSchema`](crate::FormSchema)'s methods in
//! [`Elicit::customize`](crate::Elicit::customize).
//!
//! A form that uses any of them (or a `pattern`, or an option description) is an *OpenAI form*: it
//! is shown only by clients that declare `extensions["openai/elicitation"].form`.

use serde::Serialize;

/// An image shown with a choice option (`x-openai-thumbnail`, an MCP `Icon`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Thumbnail {
    /// `https://…` or `data:image/<type>;base64,…`.
    pub src: String,
    /// The image's media type, e.g. `image/png`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl Thumbnail {
    /// A thumbnail at `src`, without a media type.
    pub fn new(src: impl Into<String>) -> Self {
        Thumbnail {
            src: src.into(),
            mime_type: None,
        }
    }

    /// Sets the media type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A suggested value for a free-text field (`x-openai-suggestions`). Suggestions do not restrict
/// what the person may type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// The value the field takes when the suggestion is picked.
    #[serde(rename = "const")]
    pub value: String,
    /// What the person sees.
    pub title: String,
    /// Text under the suggestion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An image for the suggestion.
    #[serde(rename = "x-openai-thumbnail", skip_serializing_if = "Option::is_none")]
    pub thumbnail: Option<Thumbnail>,
}

impl Suggestion {
    /// A suggestion of `value`, shown as `title`.
    pub fn new(value: impl Into<String>, title: impl Into<String>) -> Self {
        Suggestion {
            value: value.into(),
            title: title.into(),
            description: None,
            thumbnail: None,
        }
    }

    /// Sets the text under the suggestion.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the suggestion's image.
    pub fn thumbnail(mut self, thumbnail: Thumbnail) -> Self {
        self.thumbnail = Some(thumbnail);
        self
    }
}

/// A resource the person may pick in a resource picker (an MCP `Resource`, reduced to what a picker
/// shows).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceOption {
    /// The URI the field takes when this resource is picked.
    pub uri: String,
    /// The resource's name.
    pub name: String,
    /// What the person sees, when it differs from `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A longer text about the resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The resource's media type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceOption {
    /// The resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceOption {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
        }
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the media type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// What the person may add to a resource picker besides its options (`userOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserOptions {
    /// Files or directories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<UploadKind>,
    /// HTML `accept` tokens, e.g. `.stl` or `image/*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accept: Option<Vec<String>>,
}

impl UserOptions {
    /// Uploads of files of any type.
    pub fn files() -> Self {
        UserOptions {
            kind: Some(UploadKind::File),
            accept: None,
        }
    }

    /// Uploads of directories.
    pub fn directories() -> Self {
        UserOptions {
            kind: Some(UploadKind::Directory),
            accept: None,
        }
    }

    /// Limits uploads to these HTML `accept` tokens.
    pub fn accept<I, S>(mut self, tokens: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.accept = Some(tokens.into_iter().map(Into::into).collect());
        self
    }
}

/// What the person may upload into a resource picker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UploadKind {
    /// Files (the default).
    File,
    /// Directories.
    Directory,
}

/// How a list picker's answer is formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    /// The person selects and deselects options; without uploads the answer holds offered URIs
    /// only.
    Explicit,
    /// Every resource still listed when the form is submitted is the answer; uploads are always
    /// allowed.
    Implicit,
}

/// A resource picker (`x-openai-input`) on a `format: "uri"` string field, whose answer is the URI
/// of the picked resource, or on a list of them, whose answer lists the picked URIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInput {
    #[serde(rename = "type")]
    kind: &'static str,
    /// How a list picker's answer is formed (list pickers only; the client's default is explicit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
    /// The resources offered.
    pub options: Vec<ResourceOption>,
    /// Uploads the person may add; without them the answer must be one of `options`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_options: Option<UserOptions>,
}

impl ResourceInput {
    /// A picker over `options`, without uploads.
    pub fn new(options: Vec<ResourceOption>) -> Self {
        ResourceInput {
            kind: "resource",
            selection: None,
            options,
            user_options: None,
        }
    }

    /// Sets how a list picker's answer is formed.
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = Some(selection);
        self
    }

    /// Lets the person add resources of their own.
    pub fn user_options(mut self, user_options: UserOptions) -> Self {
        self.user_options = Some(user_options);
        self
    }
}
