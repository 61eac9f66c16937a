//! The fuzz check for `crates/host/fuzz` (target `parse_frame`): the JSON-RPC frame reader and the
//! replies built for what it reads.
//!
//! It lives in the crate because the reader is private: this way nothing of `jsonrpc` is exported,
//! and the same function runs over the saved corpus as a plain unit test, so the harness cannot
//! drift from the code it checks. Compiled only for this crate's tests and with the `fuzzing`
//! feature, which only the fuzz workspace turns on; hidden from the docs, no part of the API.
//!
//! Besides "never panics", it checks, for any bytes:
//! - read as a plugin's stdout by the line reader (in chunks of varied sizes, with a small line
//!   limit), they come out as exactly the lines between the `\n`s (a `\r` before one dropped),
//!   each line over the limit reported as skipped instead, and nothing more;
//! - taken as one frame (lossily as UTF-8), they are exactly one message (MCP has no batches: an
//!   array is one invalid message), so at most one reply;
//! - every id read is a JSON string or number, written exactly as in the frame;
//! - every reply the host would send for that message (the result or error of a request, the
//!   error for an invalid message) is valid JSON whose `id` is that id byte for byte, or `null`
//!   when none could be read, and whose error message is the text it was built from;
//! - a response's raw result, and a request's raw params, are the frame's own text.

use serde_json::{Value, json};

use crate::jsonrpc::{self, Incoming, RawId, code};
use crate::transport::lines::{LineSplitter, Split};

/// The line limit the fuzzed line reader runs with, small so that long lines are common.
const LINE_LIMIT: usize = 64;

/// Reads the bytes as a stream of lines and as one frame, and checks what comes out; panics when
/// a promise is broken.
pub fn parse_frame(data: &[u8]) {
    check_lines(data);
    let frame = String::from_utf8_lossy(data);
    check_message(&frame, &jsonrpc::parse_frame(&frame));
}

/// The line reader over `data`, fed in chunks of 1, 8, 15, ... bytes, against a plain split.
fn check_lines(data: &[u8]) {
    let mut splitter = LineSplitter::new(LINE_LIMIT);
    let mut read = Vec::new();
    let mut rest = data;
    let mut size = 1;
    while !rest.is_empty() {
        let chunk = &rest[..size.min(rest.len())];
        let (used, split) = splitter.feed(chunk);
        assert!(
            (1..=chunk.len()).contains(&used),
            "took {used} of {} bytes",
            chunk.len()
        );
        rest = &rest[used..];
        read.extend(split);
        size = size % 90 + 7;
    }
    read.extend(splitter.finish());
    let mut expected: Vec<&[u8]> = data.split(|&byte| byte == b'\n').collect();
    if expected.last().is_some_and(|last| last.is_empty()) {
        expected.pop();
    }
    let expected: Vec<Split> = expected
        .into_iter()
        .map(|line| {
            if line.len() > LINE_LIMIT {
                Split::Oversized
            } else {
                Split::Line(line.strip_suffix(b"\r").unwrap_or(line).to_vec())
            }
        })
        .collect();
    assert_eq!(read, expected, "the line reader split the stream otherwise");
}

fn check_message(frame: &str, message: &Incoming) {
    if frame.trim_start().starts_with('[') {
        assert!(
            matches!(message, Incoming::Invalid { id: None, .. }),
            "an array is one invalid message without an id"
        );
    }
    match message {
        Incoming::Request { id, method, params } => {
            check_id(frame, id);
            if let Some(params) = params {
                assert!(
                    frame.contains(params.get()),
                    "params are not the frame's text"
                );
            }
            check_reply(
                &jsonrpc::response(id, &json!({"action": "cancel"})),
                Some(id),
            );
            let refusal = format!("formwork does not handle `{method}`");
            let reply = jsonrpc::error_response(Some(id), code::METHOD_NOT_FOUND, &refusal);
            check_error(&reply, Some(id), &refusal);
        }
        Incoming::Notification { params, .. } => {
            if let Some(params) = params {
                assert!(
                    frame.contains(params.get()),
                    "params are not the frame's text"
                );
            }
        }
        Incoming::Response { id, outcome } => {
            check_id(frame, id);
            if let Ok(result) = outcome {
                assert!(
                    frame.contains(result.get()),
                    "result {} is not the frame's text",
                    result.get()
                );
            }
        }
        Incoming::Invalid { id, code, reason } => {
            if let Some(id) = id {
                check_id(frame, id);
            }
            let json = serde_json::from_str::<serde::de::IgnoredAny>(frame).is_ok();
            if json {
                assert_eq!(*code, code::INVALID_REQUEST, "JSON is not a parse error");
            }
            let reply = jsonrpc::error_response(id.as_ref(), *code, reason);
            check_error(&reply, id.as_ref(), reason);
        }
    }
}

fn check_id(frame: &str, id: &RawId) {
    let text = id.as_json();
    assert!(
        matches!(
            serde_json::from_str::<Value>(text),
            Ok(Value::String(_) | Value::Number(_))
        ),
        "id {text} is not a JSON string or number"
    );
    assert_eq!(text, text.trim(), "id {text:?} keeps blanks");
    assert!(frame.contains(text), "id {text} is not the frame's text");
}

/// Checks that `reply` is JSON that echoes `id` verbatim (or `null`) and returns it parsed.
fn check_reply(reply: &str, id: Option<&RawId>) -> Value {
    let parsed: Value = serde_json::from_str(reply)
        .unwrap_or_else(|err| panic!("reply {reply} is not JSON: {err}"));
    let id = id.map_or("null", RawId::as_json);
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"#);
    assert!(
        reply.starts_with(&head),
        "reply {reply} does not start with {head}"
    );
    parsed
}

fn check_error(reply: &str, id: Option<&RawId>, message: &str) {
    let parsed = check_reply(reply, id);
    assert_eq!(
        parsed["error"]["message"].as_str(),
        Some(message),
        "reply {reply} loses its message"
    );
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every saved corpus entry and seed, through the fuzz check (the fuzzer finds new ones with
    /// `cargo xtask fuzz`).
    #[test]
    fn saved_corpus_and_seeds_pass_the_fuzz_check() {
        let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
        let mut count = 0;
        for dir in [fuzz.join("corpus/parse_frame"), fuzz.join("seeds")] {
            let entries = std::fs::read_dir(&dir)
                .unwrap_or_else(|err| panic!("reading {}: {err}", dir.display()));
            for entry in entries {
                let path = entry.expect("directory entry").path();
                let data = std::fs::read(&path)
                    .unwrap_or_else(|err| panic!("reading {}: {err}", path.display()));
                let checked = std::panic::catch_unwind(|| super::parse_frame(&data));
                assert!(checked.is_ok(), "{} fails the fuzz check", path.display());
                count += 1;
            }
        }
        assert!(count > 100, "only {count} inputs: is the corpus missing?");
    }

    /// The check catches a reply that does not echo the id: a sanity check of the harness itself.
    #[test]
    #[should_panic(expected = "does not start with")]
    fn a_reply_with_another_id_fails_the_check() {
        let id = crate::jsonrpc::RawId::from_value(&serde_json::json!(1.0)).expect("an id");
        super::check_reply(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, Some(&id));
    }
}
