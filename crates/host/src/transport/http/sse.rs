//! A small incremental parser for `text/event-stream`.

use super::headers::valid_value;
use crate::transport::MAX_FRAME_BYTES;

/// The longest a server's `retry` makes formwork wait before resuming a stream: longer ones
/// would outlast the call that waits (60 s by default), or leave the listening stream shut.
const MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(30);
/// The longest event `id` kept to resume after: it goes back in a request header. A longer one
/// ends resumption, like an empty one.
const MAX_EVENT_ID_BYTES: usize = 1024;

pub(crate) enum SseEvent {
    Data(String),
    Oversized,
}

/// A small incremental parser for `text/event-stream`: `data` makes the messages, `id` and
/// `retry` tell how to resume the stream. One parser follows a stream across its connections.
#[derive(Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    oversized: bool,
    last_was_cr: bool,
    /// The `id` in force for the event being read (an event without one keeps the last).
    id: Option<String>,
    /// The `id` in force at the last whole event: the stream resumes after it.
    pub(super) last_id: Option<String>,
    /// The server's `retry`: how long to wait before resuming.
    pub(super) retry: Option<std::time::Duration>,
    /// A line of this connection's stream has ended: a byte order mark is no longer its start.
    past_first_line: bool,
}

/// The UTF-8 byte order mark, which a stream may start with (and which is not part of it).
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    /// A new connection continues the stream: what the last one left half read is dropped.
    pub(super) fn resumed(&mut self) {
        self.line.clear();
        self.data.clear();
        self.has_data = false;
        self.oversized = false;
        self.last_was_cr = false;
        self.past_first_line = false;
        self.id.clone_from(&self.last_id);
    }

    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte == b'\n' && self.last_was_cr {
                self.last_was_cr = false;
                continue;
            }
            self.last_was_cr = byte == b'\r';
            if byte == b'\n' || byte == b'\r' {
                let mut line = std::mem::take(&mut self.line);
                if !std::mem::replace(&mut self.past_first_line, true)
                    && line.starts_with(BYTE_ORDER_MARK)
                {
                    line.drain(..BYTE_ORDER_MARK.len());
                }
                if let Some(event) = self.end_line(&line) {
                    events.push(event);
                }
            } else if self.line.len() <= MAX_FRAME_BYTES {
                self.line.push(byte);
            } else {
                self.oversized = true;
            }
        }
        events
    }

    fn end_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            // An event is whole: even one without data moves the point to resume after.
            self.last_id.clone_from(&self.id);
            let event = if self.oversized {
                Some(SseEvent::Oversized)
            } else if self.has_data {
                Some(SseEvent::Data(std::mem::take(&mut self.data)))
            } else {
                None
            };
            self.data.clear();
            self.has_data = false;
            self.oversized = false;
            return event;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                if self.data.len() > MAX_FRAME_BYTES {
                    self.oversized = true;
                    self.data.clear();
                }
            }
            // SSE ignores an id with a NUL; an empty one ends resumption, and so does one that
            // could not be sent back in a header.
            "id" if !value.contains('\0') => {
                let sendable =
                    !value.is_empty() && value.len() <= MAX_EVENT_ID_BYTES && valid_value(value);
                self.id = sendable.then(|| value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits beyond a u64 are a delay longer than any call waits, too.
                let millis = value.parse().unwrap_or(u64::MAX);
                self.retry = Some(std::time::Duration::from_millis(millis).min(MAX_RETRY));
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn events(chunks: &[&str]) -> Vec<String> {
        let mut parser = SseParser::default();
        chunks
            .iter()
            .flat_map(|chunk| events_of(&mut parser, chunk))
            .collect()
    }

    #[test]
    fn parses_sse_events_across_chunks() {
        assert_eq!(
            events(&[
                "event: message\ndata: {\"a\"",
                ":1}\n\n",
                ": comment\r\n",
                "data: x\r\ndata: y\r\n\r\n"
            ]),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
        assert_eq!(events(&["id: 1\nretry: 500\n\n"]), Vec::<String>::new());
    }

    /// A byte order mark is skipped at the start of each connection's stream (split across
    /// reads too), and only there.
    #[test]
    fn a_byte_order_mark_starts_a_stream_and_is_not_part_of_it() {
        let data = |events: Vec<SseEvent>| -> Vec<String> {
            events
                .into_iter()
                .map(|event| match event {
                    SseEvent::Data(data) => data,
                    SseEvent::Oversized => "<oversized>".to_owned(),
                })
                .collect()
        };
        let mut parser = SseParser::default();
        assert_eq!(data(parser.feed(b"\xEF\xBB")), Vec::<String>::new());
        assert_eq!(data(parser.feed(b"\xBFdata: a\n\n")), ["a"]);
        // Later in the stream it is a field name's first bytes: that line is no field it knows.
        assert_eq!(
            data(parser.feed(b"\xEF\xBB\xBFdata: b\n\ndata: c\n\n")),
            ["c"]
        );
        parser.resumed();
        assert_eq!(data(parser.feed(b"\xEF\xBB\xBFdata: d\n\n")), ["d"]);
    }

    /// The point to resume after moves with each whole event, even one without data, and not
    /// with one a broken connection left half read; `retry` is kept while valid.
    #[test]
    fn follows_the_last_event_id_and_retry() {
        let mut parser = SseParser::default();
        let _ = parser.feed(b"id: e1\nretry: 500\ndata: \n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(500)));
        // An event without an id keeps the last one; a retry that is not a number is ignored.
        let _ = parser.feed(b"retry: soon\ndata: x\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(500)));
        let _ = parser.feed(b"id: e2\ndata: half");
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        parser.resumed();
        assert_eq!(events_of(&mut parser, "data: y\n\n"), ["y"]);
        assert_eq!(parser.last_id.as_deref(), Some("e1"));
        let _ = parser.feed(b"id: e3\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e3"));
        // SSE ignores an id with a NUL; one that cannot go back in a header, or an empty one,
        // leaves nothing to resume after.
        let _ = parser.feed(b"id: a\0b\n\n");
        assert_eq!(parser.last_id.as_deref(), Some("e3"));
        let _ = parser.feed(b"id: a\x01b\n\n");
        assert_eq!(parser.last_id, None);
        let _ = parser.feed(b"id: e4\n\n");
        let long = format!("id: {}\n\n", "i".repeat(MAX_EVENT_ID_BYTES + 1));
        let _ = parser.feed(long.as_bytes());
        assert_eq!(parser.last_id, None);
        let _ = parser.feed(b"id: e5\n\nid\n\n");
        assert_eq!(parser.last_id, None);
        // A retry longer than any call waits counts as the longest formwork waits.
        let _ = parser.feed(b"retry: 99999999999\n\n");
        assert_eq!(parser.retry, Some(MAX_RETRY));
        let _ = parser.feed(b"retry: 800\n\n");
        assert_eq!(parser.retry, Some(std::time::Duration::from_millis(800)));
        let _ = parser.feed(format!("retry: {}\n\n", "9".repeat(40)).as_bytes());
        assert_eq!(parser.retry, Some(MAX_RETRY));
    }

    fn events_of(parser: &mut SseParser, chunk: &str) -> Vec<String> {
        parser
            .feed(chunk.as_bytes())
            .into_iter()
            .map(|event| match event {
                SseEvent::Data(data) => data,
                SseEvent::Oversized => "<oversized>".to_owned(),
            })
            .collect()
    }

    /// An event over the limit is reported and skipped, whether one line or many make it too
    /// big, and the events after it are read as usual.
    #[test]
    fn an_event_over_the_limit_is_skipped_and_the_stream_goes_on() {
        let long_line = format!("data: {}\n\n", "x".repeat(MAX_FRAME_BYTES + 1));
        let half = format!("data: {}\n", "y".repeat(MAX_FRAME_BYTES / 2 + 1));
        assert_eq!(
            events(&[
                &long_line,
                "data: ok\n\n",
                &half,
                &half,
                "\n",
                "data: ok again\n\n"
            ]),
            ["<oversized>", "ok", "<oversized>", "ok again"]
        );
    }
}
