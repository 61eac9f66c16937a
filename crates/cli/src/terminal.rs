//! Forms asked on a terminal, built from the render block exactly as any UI would.
//!
//! Esc declines the form, Ctrl-C cancels it. Plugin text is printed through [`inert`], so a
//! plugin cannot move the cursor, clear the screen or retitle the window.

use formwork_forms::Content;
use formwork_forms::render::{InputKind, Question};
use formwork_host::policy::{ApprovalAnswer, ApprovalCard, ApprovalChoice};
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
        eprintln!("── approval ──");
        eprintln!("{}", inert(&card.message));
        if let Some(description) = &card.tool_description {
            eprintln!("{}", inert(description));
        }
        eprintln!("Arguments: {}", inert(&card.arguments.to_string()));
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
            let render = &request.render;
            eprintln!("{}", inert(&render.message));
            eprintln!("(Esc declines the form, Ctrl-C cancels it)");
            ask_questions(&render.questions, form).and_then(|typed| {
                form.content_from_typed(&typed).map_err(|errors| {
                    eprintln!("formwork: the answers do not validate:\n{errors}");
                    Left::Cancelled
                })
            })
        }
        (ElicitationRequest::Url(request), _) => {
            eprintln!("{}", inert(&request.message));
            eprintln!("URL:    {}", inert(&request.url));
            eprintln!("Domain: {}", inert(&request.domain));
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
            InputKind::Text | InputKind::Number | InputKind::Integer => {
                ask_text(question, form, &title, help.as_deref())?
            }
        };
        if let Some(value) = value {
            typed.insert(question.id.clone(), value);
        }
    }
    Ok(typed)
}

fn ask_single(question: &Question, title: &str, help: Option<&str>) -> Result<Option<Value>, Left> {
    let options = question.options.clone().unwrap_or_default();
    let labels: Vec<String> = options.iter().map(|option| inert(&option.label)).collect();
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
    let labels: Vec<String> = options.iter().map(|option| inert(&option.label)).collect();
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
    let required = question.required;
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
                        .map(|error| error.message.clone())
                        .collect::<Vec<_>>()
                        .join("; ")
                        .into(),
                ),
            },
        })
    });
    if let Some(default) = &default_text {
        text = text.with_default(default);
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

/// Plugin text made safe for a terminal: control characters are shown escaped, never obeyed.
pub fn inert(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_stay_inert() {
        assert_eq!(inert("a\u{1b}[2Jb\u{7}"), "a\\u{1b}[2Jb\\u{7}");
        assert_eq!(inert("line\nnext\tcol"), "line\nnext\tcol");
    }
}
