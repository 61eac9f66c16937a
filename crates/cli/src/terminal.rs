//! Forms asked on a terminal, built from the render block exactly as any UI would.
//!
//! Esc declines the form, Ctrl-C cancels it. Plugin text is printed through [`inert`] (one line:
//! titles, labels, help, URLs) or [`inert_block`] (messages and descriptions, quoted with `│ `), so a
//! plugin cannot move the cursor, clear the screen, retitle the window, turn text around with
//! bidirectional controls, or print a line that looks like formwork's own (`── approval ──`).

use formwork_forms::render::{Image, InputKind, Question, QuestionOption, UploadRules};
use formwork_forms::{Content, UrlWarning};
use formwork_host::policy::{ApprovalAnswer, ApprovalCard, ApprovalChoice};
use formwork_host::store::{MAX_UPLOAD_BYTES, Store, UPLOADS_DIR, save_upload};
use formwork_host::{ElicitationRequest, FormPrompt, FormReply};
use inquire::{Confirm, InquireError, MultiSelect, Select, Text};
use serde_json::{Number, Value};

/// Asks the person on the terminal. Runs the prompts on a blocking thread.
pub async fn ask(prompt: FormPrompt) -> FormReply {
    tokio::task::spawn_blocking(move || ask_blocking(&prompt))
        .await
        .unwrap_or_else(|_| FormReply::cancel())
}

/// Asks the person to approve a tool call. Esc denies, Ctrl-C cancels.
pub async fn ask_approval(card: ApprovalCard) -> ApprovalAnswer {
    let fallback = card.clone();
    tokio::task::spawn_blocking(move || {
        eprintln!();
        eprintln!("{}", approval_text(&card));
        let choices = card.choices();
        let labels: Vec<&str> = choices.iter().map(|choice| choice.label()).collect();
        match Select::new("Run this tool?", labels.clone()).prompt() {
            Ok(label) => {
                let index = labels.iter().position(|l| *l == label).unwrap_or(0);
                card.answer(choices.get(index).copied().unwrap_or(ApprovalChoice::Deny))
            }
            Err(InquireError::OperationCanceled) => card.answer(ApprovalChoice::Deny),
            Err(_) => card.cancel("the prompt was interrupted"),
        }
    })
    .await
    .unwrap_or_else(|_| fallback.cancel("the prompt failed"))
}

/// How the person left a form without submitting it.
enum Left {
    Declined,
    Cancelled,
}

impl From<InquireError> for Left {
    fn from(err: InquireError) -> Self {
        match err {
            InquireError::OperationCanceled => Left::Declined,
            _ => Left::Cancelled,
        }
    }
}

fn ask_blocking(prompt: &FormPrompt) -> FormReply {
    eprintln!();
    eprintln!("── {} asks ──", inert(&prompt.plugin));
    let outcome = match (&prompt.request, prompt.request.form()) {
        (ElicitationRequest::Form(_), None) => Err(Left::Cancelled),
        (ElicitationRequest::Form(request), Some(form)) => {
            // The block was written from `form` here, so it reads back.
            let render = request.render.block().unwrap_or_else(|_| form.render(""));
            eprintln!("{}", inert_block(&render.message));
            if let Some(warning) = secret_warning(form) {
                eprintln!("{warning}");
            }
            eprintln!("(Esc declines the form, Ctrl-C cancels it)");
            ask_questions(&render.questions, form).and_then(|typed| {
                form.content_from_typed(&typed).map_err(|errors| {
                    eprintln!("formwork: the answers do not validate:");
                    for error in &errors.errors {
                        eprintln!("  {}: {}", inert(&error.field), inert(&error.message));
                    }
                    Left::Cancelled
                })
            })
        }
        (ElicitationRequest::Url(request), _) => {
            eprintln!(
                "{}",
                url_text(
                    &request.message,
                    &request.url,
                    &request.domain,
                    &request.warnings
                )
            );
            let choices = vec!["I will open it (accept)", "Decline", "Cancel"];
            match Select::new("Open this link?", choices).prompt() {
                Ok("Decline") => Err(Left::Declined),
                Ok("Cancel") => Err(Left::Cancelled),
                Ok(_) => return FormReply::accept_url(),
                Err(err) => Err(err.into()),
            }
        }
    };
    match outcome {
        Ok(content) => FormReply::accept(content),
        Err(Left::Declined) => FormReply::decline(),
        Err(Left::Cancelled) => FormReply::cancel(),
    }
}

fn ask_questions(questions: &[Question], form: &formwork_forms::Form) -> Result<Content, Left> {
    let mut typed = Content::new();
    for question in questions {
        let title = title(question);
        let help = (question.question != question.header).then(|| inert(&question.question));
        let value = match question.input {
            InputKind::SingleSelect => ask_single(question, &title, help.as_deref())?,
            InputKind::MultiSelect => ask_multi(question, &title, help.as_deref())?,
            InputKind::Boolean => {
                let mut confirm = Confirm::new(&title);
                if let Some(default) = question.default.as_ref().and_then(Value::as_bool) {
                    confirm = confirm.with_default(default);
                }
                if let Some(help) = &help {
                    confirm = confirm.with_help_message(help);
                }
                Some(Value::Bool(confirm.prompt()?))
            }
            InputKind::Text if question.suggestions.is_some() => {
                match ask_suggestion(question, &title, help.as_deref())? {
                    Some(value) => Some(value),
                    None => ask_text(question, form, &title, help.as_deref())?,
                }
            }
            InputKind::Text | InputKind::Number | InputKind::Integer => {
                ask_text(question, form, &title, help.as_deref())?
            }
            InputKind::TextList => ask_text_list(question, &title, help.as_deref())?,
            InputKind::Resource => ask_resource(question, &title, help.as_deref())?,
        };
        if let Some(value) = value {
            typed.insert(question.id.clone(), value);
        }
    }
    Ok(typed)
}

fn ask_single(question: &Question, title: &str, help: Option<&str>) -> Result<Option<Value>, Left> {
    let options = question.options.clone().unwrap_or_default();
    let labels = option_lines(&options, question.option_images);
    let start = question
        .default
        .as_ref()
        .and_then(|default| options.iter().position(|option| &option.value == default))
        .unwrap_or(0);
    let mut select = Select::new(title, labels.clone()).with_starting_cursor(start);
    if let Some(help) = help {
        select = select.with_help_message(help);
    }
    let chosen = select.prompt()?;
    let index = labels
        .iter()
        .position(|label| *label == chosen)
        .unwrap_or(0);
    Ok(options.get(index).map(|option| option.value.clone()))
}

fn ask_multi(question: &Question, title: &str, help: Option<&str>) -> Result<Option<Value>, Left> {
    let options = question.options.clone().unwrap_or_default();
    let labels = option_lines(&options, question.option_images);
    let defaults: Vec<usize> = match &question.default {
        Some(Value::Array(values)) => options
            .iter()
            .enumerate()
            .filter(|(_, option)| values.contains(&option.value))
            .map(|(index, _)| index)
            .collect(),
        _ => Vec::new(),
    };
    let (min, max) = (question.min_items, question.max_items);
    let mut select = MultiSelect::new(title, labels.clone())
        .with_default(&defaults)
        .with_validator(
            move |chosen: &[inquire::list_option::ListOption<&String>]| {
                let count = chosen.len() as u64;
                Ok(match (min, max) {
                    (Some(min), _) if count < min => inquire::validator::Validation::Invalid(
                        format!("choose at least {min}").into(),
                    ),
                    (_, Some(max)) if count > max => inquire::validator::Validation::Invalid(
                        format!("choose at most {max}").into(),
                    ),
                    _ => inquire::validator::Validation::Valid,
                })
            },
        );
    if let Some(help) = help {
        select = select.with_help_message(help);
    }
    let chosen = select.prompt()?;
    let values = chosen
        .iter()
        .filter_map(|label| labels.iter().position(|l| l == label))
        .filter_map(|index| options.get(index).map(|option| option.value.clone()))
        .collect();
    Ok(Some(Value::Array(values)))
}

/// The line shown for each option: its label, its description after a dash, and, when the
/// question's options have images, a text stand-in for the image (the terminal draws none).
fn option_lines(options: &[QuestionOption], images: bool) -> Vec<String> {
    options
        .iter()
        .map(|option| {
            let mut line = inert(&option.label);
            if !option.description.is_empty() {
                line.push_str(" — ");
                line.push_str(&inert(&option.description));
            }
            if images {
                line.push(' ');
                line.push_str(&image_stand_in(option.thumbnail.as_ref()));
            }
            line
        })
        .collect()
}

/// `[image: https://…]` for a URL, `[image: image/png data]` for a data URI (never its bytes),
/// `[no image]` for an option without one.
fn image_stand_in(image: Option<&Image>) -> String {
    match image {
        None => "[no image]".to_owned(),
        Some(image) => match image.src.strip_prefix("data:") {
            Some(data) => {
                let media = data.split([';', ',']).next().unwrap_or_default();
                format!("[image: {} data]", inert(media))
            }
            None => format!("[image: {}]", inert(&image.src)),
        },
    }
}

/// The choice that leads from a list of suggestions to typing.
const TYPE_OWN: &str = "(type something else)";

/// A text question with suggestions: pick one, or choose to type (`None`).
fn ask_suggestion(
    question: &Question,
    title: &str,
    help: Option<&str>,
) -> Result<Option<Value>, Left> {
    let suggestions = question.suggestions.clone().unwrap_or_default();
    let mut lines = option_lines(&suggestions, question.option_images);
    lines.push(TYPE_OWN.to_owned());
    let mut select = Select::new(title, lines.clone());
    if let Some(help) = help {
        select = select.with_help_message(help);
    }
    let chosen = select.prompt()?;
    let index = lines.iter().position(|line| *line == chosen);
    Ok(index
        .and_then(|index| suggestions.get(index))
        .map(|option| option.value.clone()))
}

/// A free-text list: one item per prompt (a suggestion, or typed), until an empty line or
/// "done".
fn ask_text_list(
    question: &Question,
    title: &str,
    help: Option<&str>,
) -> Result<Option<Value>, Left> {
    const DONE: &str = "(done)";
    let suggestions = question.suggestions.clone().unwrap_or_default();
    let mut items = Vec::new();
    loop {
        let prompt = format!("{title} — item {}", items.len() + 1);
        if !suggestions.is_empty() {
            let mut lines = option_lines(&suggestions, question.option_images);
            lines.push(TYPE_OWN.to_owned());
            lines.push(DONE.to_owned());
            let mut select = Select::new(&prompt, lines.clone());
            if let Some(help) = help {
                select = select.with_help_message(help);
            }
            let chosen = select.prompt()?;
            if chosen == DONE {
                break;
            }
            let index = lines.iter().position(|line| *line == chosen);
            if let Some(option) = index.and_then(|index| suggestions.get(index)) {
                items.push(option.value.clone());
                continue;
            }
        }
        let help = match help {
            Some(help) => format!("{help}; an empty line ends the list"),
            None => "an empty line ends the list".to_owned(),
        };
        let typed = Text::new(&prompt).with_help_message(&help).prompt()?;
        if typed.is_empty() {
            break;
        }
        items.push(Value::String(typed));
    }
    if items.is_empty() && question.default.is_some() {
        // Nothing typed: the form fills the default in.
        return Ok(None);
    }
    Ok(Some(Value::Array(items)))
}

/// The choice of a single picker that leads to adding a local file.
const ADD_FILE: &str = "(add a file from this computer)";

/// A resource picker: the plugin's resources, listed with their descriptions. For several, the
/// starting selection is the default (every resource for implicit selection). When the picker
/// takes files, the person may name local files too: each is copied (see [`copy_file`]) and
/// answered by the `file://` URI of the copy.
fn ask_resource(
    question: &Question,
    title: &str,
    help: Option<&str>,
) -> Result<Option<Value>, Left> {
    let uploads = question.resource.as_ref().and_then(|r| r.uploads.as_ref());
    let options = question.options.clone().unwrap_or_default();
    if question.multi_select {
        let mut chosen = match options.is_empty() {
            true => Vec::new(),
            false => match ask_multi(question, title, help)? {
                Some(Value::Array(values)) => values,
                _ => Vec::new(),
            },
        };
        if let Some(uploads) = uploads {
            while let Some(uri) = ask_file(title, uploads, true)? {
                chosen.push(Value::String(uri));
            }
        }
        return Ok(Some(Value::Array(chosen)));
    }
    let Some(uploads) = uploads else {
        return ask_single(question, title, help);
    };
    let mut lines = option_lines(&options, question.option_images);
    lines.push(ADD_FILE.to_owned());
    loop {
        let mut select = Select::new(title, lines.clone());
        if let Some(help) = help {
            select = select.with_help_message(help);
        }
        let chosen = select.prompt()?;
        let index = lines.iter().position(|line| *line == chosen);
        if let Some(option) = index.and_then(|index| options.get(index)) {
            return Ok(Some(option.value.clone()));
        }
        if let Some(uri) = ask_file(title, uploads, false)? {
            return Ok(Some(Value::String(uri)));
        }
    }
}

/// Asks for the path of a local file and copies it; `None` when the person enters nothing.
fn ask_file(title: &str, uploads: &UploadRules, several: bool) -> Result<Option<String>, Left> {
    let prompt = format!("{title} — a file from this computer");
    let kinds = match uploads.accept.is_empty() {
        true => String::new(),
        false => format!(" ({})", inert(&uploads.accept.join(", "))),
    };
    let after = match several {
        true => "an empty line adds no more",
        false => "an empty line goes back",
    };
    let help = format!("its path{kinds}; {after}");
    loop {
        let path = Text::new(&prompt).with_help_message(&help).prompt()?;
        if path.is_empty() {
            return Ok(None);
        }
        let copied =
            uploads_root().and_then(|root| copy_file(std::path::Path::new(&path), uploads, &root));
        match copied {
            Ok(uri) => {
                eprintln!("added {}", inert(&uri));
                return Ok(Some(uri));
            }
            Err(problem) => eprintln!("formwork: {}", inert_message(&problem)),
        }
    }
}

/// The uploads beside formwork's database in the data directory `formwork serve` uses.
fn uploads_root() -> Result<std::path::PathBuf, String> {
    Store::default_path()
        .map_err(|err| err.to_string())?
        .parent()
        .map(|dir| dir.join(UPLOADS_DIR))
        .ok_or_else(|| "the data directory has no parent".to_owned())
}

/// Copies a file the person names into `root` (the uploads, [`uploads_root`]), in a folder of
/// this process's own, and returns the `file://` URI of the copy. The file must be one the
/// picker takes ([`UploadRules::accepts`]).
fn copy_file(
    path: &std::path::Path,
    uploads: &UploadRules,
    root: &std::path::Path,
) -> Result<String, String> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .ok_or_else(|| format!("{} is not a file", path.display()))?;
    if !uploads.accepts(&name) {
        return Err(format!(
            "{name} is not one of the files this picker takes ({})",
            uploads.accept.join(", ")
        ));
    }
    let metadata = std::fs::metadata(path).map_err(|err| format!("{}: {err}", path.display()))?;
    if !metadata.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    if metadata.len() > MAX_UPLOAD_BYTES as u64 {
        return Err(format!(
            "{} is {} bytes; at most {MAX_UPLOAD_BYTES} are accepted",
            path.display(),
            metadata.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let folder = format!("call-{}", std::process::id());
    save_upload(root, &folder, &name, &bytes)
        .map(|upload| upload.uri)
        .map_err(|err| err.to_string())
}

fn ask_text(
    question: &Question,
    form: &formwork_forms::Form,
    title: &str,
    help: Option<&str>,
) -> Result<Option<Value>, Left> {
    let default_text = question.default.as_ref().map(|default| match default {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    });
    let hint = constraints_hint(question);
    let help = match (help, hint.is_empty()) {
        (Some(help), false) => Some(format!("{help} ({hint})")),
        (Some(help), true) => Some(help.to_owned()),
        (None, false) => Some(hint),
        (None, true) => None,
    };
    let id = question.id.clone();
    let kind = question.input;
    // A field with a default may be left empty: the form fills the default in.
    let required = question.required && question.default.is_none();
    let escaped_default;
    let validate_form = form.clone();
    let mut text = Text::new(title).with_validator(move |input: &str| {
        Ok(match typed_text(kind, input) {
            Err(message) => inquire::validator::Validation::Invalid(message.into()),
            Ok(None) if required => {
                inquire::validator::Validation::Invalid("this field is required".into())
            }
            Ok(None) => inquire::validator::Validation::Valid,
            Ok(Some(value)) => match validate_form.validate_field(&id, &value) {
                Ok(()) => inquire::validator::Validation::Valid,
                Err(errors) => inquire::validator::Validation::Invalid(
                    errors
                        .iter()
                        .map(|error| inert(&error.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                        .into(),
                ),
            },
        })
    });
    match &default_text {
        // A default that shows as it is: Enter takes it.
        Some(default) if inert(default) == *default => text = text.with_default(default),
        // One that would not (control or invisible characters): shown escaped, never typed in;
        // an empty answer leaves the field out, and the form fills in the real default.
        Some(default) => {
            escaped_default = inert(default);
            text = text.with_placeholder(&escaped_default);
        }
        None => {}
    }
    if let Some(help) = &help {
        text = text.with_help_message(help);
    }
    let answer = text.prompt()?;
    typed_text(kind, &answer).map_err(|_| Left::Cancelled)
}

/// Turns typed text into the JSON value of its kind; empty text means "no value".
fn typed_text(kind: InputKind, input: &str) -> Result<Option<Value>, String> {
    if input.is_empty() {
        return Ok(None);
    }
    match kind {
        InputKind::Integer => input
            .trim()
            .parse::<i64>()
            .map(|n| Some(Value::Number(n.into())))
            .map_err(|_| "enter a whole number".to_owned()),
        InputKind::Number => input
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| "enter a number".to_owned()),
        _ => Ok(Some(Value::String(input.to_owned()))),
    }
}

fn constraints_hint(question: &Question) -> String {
    let mut parts = Vec::new();
    match (&question.minimum, &question.maximum) {
        (Some(min), Some(max)) => parts.push(format!("{min} to {max}")),
        (Some(min), None) => parts.push(format!("at least {min}")),
        (None, Some(max)) => parts.push(format!("at most {max}")),
        (None, None) => {}
    }
    if let Some(format) = &question.format {
        parts.push(format.clone());
    }
    if let Some(pattern) = &question.pattern {
        parts.push(format!("matching {}", inert(pattern)));
    }
    parts.join(", ")
}

fn title(question: &Question) -> String {
    let marker = if question.required { " *" } else { "" };
    format!("{}{marker}", inert(&question.header))
}

/// What the terminal shows of an approval card, before its question.
fn approval_text(card: &ApprovalCard) -> String {
    let mut lines = vec!["── approval ──".to_owned(), inert_block(&card.message)];
    if let Some(description) = &card.tool_description {
        lines.push(inert_block(description));
    }
    lines.push(format!("Arguments: {}", inert(&card.arguments.to_string())));
    lines.join("\n")
}

/// The warning for a form whose fields name a secret, if it has any.
pub fn secret_warning(form: &formwork_forms::Form) -> Option<String> {
    let fields: Vec<String> = form.sensitive_fields().map(inert).collect();
    (!fields.is_empty()).then(|| {
        format!(
            "Warning: this plugin asks for something secret ({}). Plugins must not ask for \
             passwords, keys, tokens or card numbers in a form: what you enter goes to the plugin.",
            fields.join(", ")
        )
    })
}

/// What the terminal shows of a URL-mode request, before its question: the host's warnings last,
/// next to the question.
fn url_text(message: &str, url: &str, domain: &str, warnings: &[UrlWarning]) -> String {
    let mut lines = vec![
        inert_block(message),
        format!("URL:    {}", inert(url)),
        format!("Domain: {}", inert(domain)),
    ];
    lines.extend(
        warnings
            .iter()
            .map(|warning| format!("Warning: {}", warning.message())),
    );
    lines.join("\n")
}

/// Plugin text for one line of the terminal. Every control character (newline, carriage return
/// and tab included) and every invisible format character that can reorder or hide text is shown
/// as an escape (`\n`, `\r`, `\t`, `\u{202e}`), never obeyed: a plugin cannot move the cursor,
/// clear the screen, retitle the window, start a line of its own or turn text around.
pub fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || is_hidden_format(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// Text a model writes for the person (`formwork chat`): lines and tabs kept, every other control
/// character (ESC, BEL, carriage return, ...) and every hidden format character shown as by
/// [`inert`]. A model, or a plugin steering one, cannot write to the clipboard (OSC 52), clear
/// the screen, move the cursor or overwrite a line to forge one of formwork's.
pub fn inert_text(text: &str) -> String {
    text.split('\n')
        .map(|line| line.split('\t').map(inert).collect::<Vec<_>>().join("\t"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message of formwork's own that may carry plugin text (an error, a refusal): controls and
/// hidden characters escaped as by [`inert`], and every line after the first indented, so none
/// can pass for a line of formwork's.
pub fn inert_message(text: &str) -> String {
    text.split('\n')
        .map(|line| inert(line.strip_suffix('\r').unwrap_or(line)))
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Plugin text of several lines (a message, a description): each line [`inert`] and quoted with
/// `│ `, so that nothing a plugin sends starts a line the way formwork's own lines do
/// (`── approval ──`, `URL:`, `Warning:`). `\r\n` ends a line like `\n`.
pub fn inert_block(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let line = inert(line.strip_suffix('\r').unwrap_or(line));
            if line.is_empty() {
                "│".to_owned()
            } else {
                format!("│ {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Characters that draw nothing yet reorder the text around them (bidirectional controls), hide
/// text (tags, fillers, zero-width spaces) or break lines (U+2028, U+2029). The zero-width joiner
/// and non-joiner (U+200C, U+200D) are left alone: they only shape letters and emoji.
fn is_hidden_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn rules(accept: &[&str]) -> UploadRules {
        UploadRules {
            accept: accept.iter().map(|token| (*token).to_owned()).collect(),
        }
    }

    #[test]
    fn added_files_must_fit_the_accept_list() {
        let stl = rules(&[".stl", ".STEP"]);
        assert!(stl.accepts("bolt.STL"));
        assert!(stl.accepts("bolt.step"));
        assert!(!stl.accepts("bolt.obj"));
        assert!(rules(&[]).accepts("anything"));
        assert!(rules(&["image/*"]).accepts("photo.heic"));
        assert_eq!(
            copy_file(
                std::path::Path::new("/tmp/bolt.obj"),
                &stl,
                std::path::Path::new("/nowhere")
            ),
            Err("bolt.obj is not one of the files this picker takes (.stl, .STEP)".to_owned())
        );
    }

    #[test]
    fn added_files_are_copied_beside_the_database() {
        let data = tempfile::tempdir().unwrap();
        let source = data.path().join("my bolt.stl");
        std::fs::write(&source, "solid bolt").unwrap();
        let root = data.path().join("uploads");
        let uri = copy_file(&source, &rules(&[".stl"]), &root);
        let copy = data
            .path()
            .canonicalize()
            .unwrap()
            .join(format!("uploads/call-{}/1-my_bolt.stl", std::process::id()));
        assert_eq!(uri, Ok(format!("file://{}", copy.display())));
        assert_eq!(std::fs::read_to_string(copy).unwrap(), "solid bolt");
    }

    #[test]
    fn options_show_descriptions_and_a_stand_in_for_images() {
        let option = |label: &str, description: &str, src: Option<&str>| QuestionOption {
            label: label.to_owned(),
            description: description.to_owned(),
            value: Value::String(label.to_owned()),
            thumbnail: src.map(|src| Image {
                src: src.to_owned(),
                mime_type: None,
            }),
        };
        let options = [
            option(
                "Matte\u{1b}[2J",
                "No shine\nat all",
                Some("https://example.com/m.png"),
            ),
            option("Gloss", "", Some("data:image/png;base64,iVBORw0KGgo=")),
            option("Raw", "", None),
        ];
        assert_eq!(
            option_lines(&options, true),
            [
                "Matte\\u{1b}[2J — No shine\\nat all [image: https://example.com/m.png]",
                "Gloss [image: image/png data]",
                "Raw [no image]",
            ]
        );
        assert_eq!(option_lines(&options[2..], false), ["Raw"]);
    }

    #[test]
    fn messages_carrying_plugin_text_stay_inert_and_indented() {
        assert_eq!(
            inert_message("tools/call failed: \u{1b}[2Jgone\nformwork: fake line\r\nend"),
            "tools/call failed: \\u{1b}[2Jgone\n  formwork: fake line\n  end"
        );
    }

    #[test]
    fn terminal_escapes_stay_inert() {
        assert_eq!(inert("a\u{1b}[2Jb\u{7}"), "a\\u{1b}[2Jb\\u{7}");
        assert_eq!(inert("\u{1b}]0;owned\u{7}"), "\\u{1b}]0;owned\\u{7}");
        assert_eq!(inert("c1\u{9b}2J del\u{7f}"), "c1\\u{9b}2J del\\u{7f}");
    }

    #[test]
    fn one_line_stays_one_line() {
        assert_eq!(inert("line\nnext\tcol\rover"), "line\\nnext\\tcol\\rover");
        assert_eq!(
            inert("a\u{b}b\u{c}c\u{85}d\u{2028}e\u{2029}f"),
            "a\\u{b}b\\u{c}c\\u{85}d\\u{2028}e\\u{2029}f"
        );
    }

    #[test]
    fn bidirectional_and_invisible_characters_show() {
        // With U+202E before "fdp.exe", "invoice_" + "fdp.exe" shows as "invoice_exe.pdf".
        assert_eq!(inert("invoice_\u{202e}fdp.exe"), "invoice_\\u{202e}fdp.exe");
        for c in [
            '\u{202a}',
            '\u{202b}',
            '\u{202c}',
            '\u{202d}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200e}',
            '\u{200f}',
            '\u{061c}',
            '\u{200b}',
            '\u{2060}',
            '\u{feff}',
            '\u{ad}',
            '\u{e0041}',
            '\u{3164}',
        ] {
            assert_eq!(
                inert(&format!("x{c}y")),
                format!("x{}y", c.escape_unicode())
            );
        }
        // Letters, accents, emoji joined by ZWJ and variation selectors are text.
        let text = "Zoë · 日本 · 👩\u{200d}💻 · ❤\u{fe0f} · می\u{200c}خواهم";
        assert_eq!(inert(text), text);
    }

    #[test]
    fn a_message_cannot_fake_formwork_lines() {
        let message = "Deploy?\n── approval ──\r\nAllow everything\n\nURL:    https://evil.example";
        assert_eq!(
            inert_block(message),
            "│ Deploy?\n│ ── approval ──\n│ Allow everything\n│\n│ URL:    https://evil.example"
        );
        assert_eq!(inert_block("one\rline\u{1b}[1A"), "│ one\\rline\\u{1b}[1A");
        assert_eq!(inert_block(""), "│");
    }

    #[test]
    fn an_approval_quotes_the_plugin_text() {
        let card = ApprovalCard {
            id: "mcp_tool_call_approval_c1".to_owned(),
            server: "p".to_owned(),
            tool: "t".to_owned(),
            mode: formwork_host::config::ApprovalMode::Prompt,
            offers: formwork_host::policy::RememberOffers {
                session: true,
                always: false,
            },
            message: "Allow the p MCP server to run tool \"t\u{202e}\"?".to_owned(),
            tool_title: None,
            tool_description: Some("Deletes files.\n── approval ──\nSafe.".to_owned()),
            arguments: serde_json::json!({"path": "/\u{1b}[2J"}),
        };
        assert_eq!(
            approval_text(&card),
            "── approval ──\n\
             │ Allow the p MCP server to run tool \"t\\u{202e}\"?\n\
             │ Deletes files.\n│ ── approval ──\n│ Safe.\n\
             Arguments: {\"path\":\"/\\u001b[2J\"}"
        );
    }

    #[test]
    fn url_requests_show_their_warnings() {
        assert_eq!(
            url_text(
                "Log in\n── approval ──",
                "http://127.0.0.1:9/\u{202e}cb",
                "127.0.0.1",
                &[UrlWarning::PlainHttp, UrlWarning::Loopback],
            ),
            "│ Log in\n│ ── approval ──\n\
             URL:    http://127.0.0.1:9/\\u{202e}cb\n\
             Domain: 127.0.0.1\n\
             Warning: The link uses plain http: what you see and type there is not encrypted.\n\
             Warning: The link leads to this computer (a loopback address), not to a site on the internet."
        );
        assert_eq!(
            url_text("Log in", "https://example.com/", "example.com", &[]),
            "│ Log in\nURL:    https://example.com/\nDomain: example.com"
        );
    }

    #[test]
    fn a_models_text_keeps_its_lines_and_shows_its_controls() {
        assert_eq!(
            inert_text("Done.\n\tstep 1\r\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u{202e}txt.exe\n"),
            "Done.\n\tstep 1\\r\\u{1b}]52;c;cm0gLXJmIH4=\\u{7}\\u{1b}[2J\\u{202e}txt.exe\n"
        );
    }
}
