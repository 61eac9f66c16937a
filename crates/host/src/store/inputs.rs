//! What a write hands to either engine: the caller's input copied into owned values (so it can
//! travel to the SQLite writer thread or a PostgreSQL task), and the values both engines derive
//! the same way (the time, a reference entry's payload).

use serde_json::value::RawValue;

use super::records::{
    ApprovalChoice, ApprovalResolution, ApprovalStatus, FormResolution, FormStatus,
    InvocationOutcome, InvocationStatus, UnixMillis,
};

/// The current time in Unix milliseconds.
pub(crate) fn now() -> UnixMillis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

/// The payload of a reference entry.
pub(crate) fn ref_payload(id: &str) -> String {
    serde_json::json!({ "id": id }).to_string()
}

/// An invocation's input, owned so it can travel to the writer thread.
pub(crate) struct InvocationInput {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) arguments: Option<String>,
    pub(crate) asked_by: Option<String>,
}

/// How an invocation ended, owned.
pub(crate) struct InvocationEnd {
    pub(crate) status: InvocationStatus,
    pub(crate) content: Option<String>,
    pub(crate) structured_content: Option<String>,
    pub(crate) meta: Option<String>,
    pub(crate) is_error: bool,
    pub(crate) error: Option<String>,
}

/// A form's input, owned.
pub(crate) struct FormInput {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) invocation: Option<String>,
    pub(crate) plugin: String,
    pub(crate) request: String,
    pub(crate) render: Option<String>,
    pub(crate) asked_as: Option<String>,
}

/// How a form ended, owned.
pub(crate) struct FormEnd {
    pub(crate) status: FormStatus,
    pub(crate) content: Option<String>,
    pub(crate) reason: Option<String>,
}

/// An approval's input, owned.
pub(crate) struct ApprovalInput {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) invocation: Option<String>,
    pub(crate) server: String,
    pub(crate) tool: String,
    pub(crate) rendering: String,
}

/// How an approval ended, owned.
pub(crate) struct ApprovalEnd {
    pub(crate) status: ApprovalStatus,
    pub(crate) choice: Option<ApprovalChoice>,
    pub(crate) reason: Option<String>,
}

impl From<InvocationOutcome<'_>> for InvocationEnd {
    fn from(outcome: InvocationOutcome<'_>) -> Self {
        let text = |raw: Option<&RawValue>| raw.map(|raw| raw.get().to_owned());
        let without_result = |status, error: &str| InvocationEnd {
            status,
            content: None,
            structured_content: None,
            meta: None,
            is_error: false,
            error: Some(error.to_owned()),
        };
        match outcome {
            InvocationOutcome::Completed(result) => InvocationEnd {
                status: InvocationStatus::Completed,
                content: text(result.content),
                structured_content: text(result.structured_content),
                meta: text(result.meta),
                is_error: result.is_error,
                error: None,
            },
            InvocationOutcome::Failed { error } => without_result(InvocationStatus::Failed, error),
            InvocationOutcome::Cancelled { reason } => {
                without_result(InvocationStatus::Cancelled, reason)
            }
        }
    }
}

impl From<FormResolution<'_>> for FormEnd {
    fn from(resolution: FormResolution<'_>) -> Self {
        match resolution {
            FormResolution::Accepted { content } => FormEnd {
                status: FormStatus::Accepted,
                content: content.map(|raw| raw.get().to_owned()),
                reason: None,
            },
            FormResolution::Declined { reason } => FormEnd {
                status: FormStatus::Declined,
                content: None,
                reason: reason.map(str::to_owned),
            },
            FormResolution::Cancelled { reason } => FormEnd {
                status: FormStatus::Cancelled,
                content: None,
                reason: Some(reason.to_owned()),
            },
        }
    }
}

impl From<ApprovalResolution<'_>> for ApprovalEnd {
    fn from(resolution: ApprovalResolution<'_>) -> Self {
        match resolution {
            ApprovalResolution::Answered { choice, reason } => ApprovalEnd {
                status: ApprovalStatus::Answered,
                choice: Some(choice),
                reason: reason.map(str::to_owned),
            },
            ApprovalResolution::Cancelled { reason } => ApprovalEnd {
                status: ApprovalStatus::Cancelled,
                choice: None,
                reason: Some(reason.to_owned()),
            },
        }
    }
}
