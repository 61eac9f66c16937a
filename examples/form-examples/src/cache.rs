//! Cache deletion: a boolean confirmation, and nothing is deleted unless the person accepts with
//! the box ticked. Only regular files directly in the given directory are deleted (no
//! subdirectories, no symlinks followed). Without forms, the `confirm: true` argument confirms.

use std::path::{Path, PathBuf};

use formwork_sdk::{Ask, Asker, Elicit};
use rmcp::model::{CallToolResult, ErrorData, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{done, failed, text_argument};

/// The form: one box, off unless the person ticks it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ConfirmDeletion {
    #[serde(default)]
    #[schemars(
        title = "Delete them",
        description = "The files are gone for good; nothing is deleted unless this is ticked."
    )]
    pub delete: bool,
}

impl Elicit for ConfirmDeletion {}

pub(crate) fn tool() -> Value {
    json!({
        "name": "clear_cache",
        "description": "Delete the files in a cache directory; asks for confirmation first.",
        "inputSchema": {"type": "object", "properties": {
            "dir": {"type": "string", "description": "The cache directory whose files are deleted."},
            "confirm": {"type": "boolean", "description": "Used only when the client cannot show forms: true deletes."}
        }, "required": ["dir"]},
    })
}

/// The regular files directly in `dir`, sorted.
fn cached_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        // `file_type` does not follow symlinks: a link is left alone, whatever it points at.
        if entry.file_type()?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

fn delete(dir: &str, files: &[PathBuf], how: &str) -> CallToolResult {
    for file in files {
        if let Err(error) = std::fs::remove_file(file) {
            return failed(format!("Could not delete {}: {error}", file.display()));
        }
    }
    done(format!("Deleted {} file(s) from {dir}{how}.", files.len()))
}

pub(crate) async fn call(ask: Asker, arguments: &JsonObject) -> Result<CallToolResult, ErrorData> {
    let Some(dir) = text_argument(arguments, "dir") else {
        return Ok(failed("Pass `dir`, the cache directory."));
    };
    let files = match cached_files(Path::new(dir)) {
        Ok(files) => files,
        Err(error) => return Ok(failed(format!("Cannot read {dir}: {error}"))),
    };
    if files.is_empty() {
        return Ok(done(format!("Nothing to delete: {dir} holds no files.")));
    }
    let message = format!("Delete the {} file(s) in {dir}?", files.len());
    Ok(match ask.ask::<ConfirmDeletion>(&message).await? {
        Ask::Accepted(ConfirmDeletion { delete: true }) => delete(dir, &files, ""),
        Ask::Accepted(ConfirmDeletion { delete: false }) => {
            done("Nothing deleted: the deletion was not ticked.")
        }
        Ask::Declined => done("Nothing deleted: the confirmation was declined."),
        Ask::Cancelled => done("Nothing deleted: the confirmation was cancelled."),
        Ask::Invalid(reason) => {
            failed(format!("Nothing deleted: the answer did not fit: {reason}"))
        }
        Ask::NotSupported => match arguments.get("confirm") {
            Some(Value::Bool(true)) => delete(
                dir,
                &files,
                " (the `confirm` argument: this client shows no forms)",
            ),
            _ => {
                done("Nothing deleted: this client shows no forms; pass `confirm: true` to delete.")
            }
        },
    })
}
