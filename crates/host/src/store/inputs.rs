//! What a write hands to either engine: the caller's input copied into owned values (so it can
//! travel to the SQLite writer thread or a PostgreSQL task), and the values both engines derive
//! the same way (the time, a reference entry's payload).

use super::records::{ApprovalChoice, ApprovalStatus, FormStatus, InvocationStatus, UnixMillis};

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
