//! The listening stream: the optional GET stream for messages the plugin sends outside any
//! request, opened again (resuming after its last event) when the server ends it.

use super::connection::{Refusal, Shared, unavailable_for_now};
use super::exchange::read_sse;
use super::headers::ACCEPT_EVENTS;
use super::resume::MAX_FRUITLESS_RESUMPTIONS;
use super::sse::SseParser;
use crate::transport::Frame;
use crate::transport::http1::{Response, SendError};

/// How long to wait for the listening stream's headers before going on without it.
const LISTENER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// The pause before the listening stream, ended by the server, is opened again; it doubles, up
/// to the maximum, while each stream lasts less than `LISTENER_SHORT`.
const LISTENER_REOPEN: std::time::Duration = std::time::Duration::from_secs(1);
const LISTENER_REOPEN_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// Failed reopenings of the listening stream in a row after which it is given up (about 5
/// minutes of pauses, doubling from 1 s to 60 s).
const MAX_LISTENER_FAILURES: u32 = 10;
const LISTENER_SHORT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens the optional GET stream for messages the plugin sends outside any request. `None`
/// when the plugin offers none (405) or does not answer within a moment.
pub(super) async fn open_listener(shared: &Shared) -> Option<Response> {
    let request = shared.send("GET", ACCEPT_EVENTS, "");
    let response = tokio::time::timeout(LISTENER_WAIT, request)
        .await
        .ok()?
        .ok()?;
    listening(response)
}

fn listening(response: Response) -> Option<Response> {
    let listening = (200..300).contains(&response.status)
        && response.content_type.starts_with("text/event-stream");
    listening.then_some(response)
}

/// Reads the listening stream; when the server ends it, opens it again (the spec lets a server
/// end it at any time), unless the plugin is gone: with no call running, that is where it shows.
/// Once its events carried an `id`, the new stream resumes after the last one (`Last-Event-ID`).
pub(super) async fn listen(shared: &Shared, mut response: Response) {
    let mut parser = SseParser::default();
    let mut backoff = LISTENER_REOPEN / 2;
    let mut fruitless = 0;
    loop {
        let opened = tokio::time::Instant::now();
        let mut body = response.into_body();
        let read = read_sse(shared, &mut body, None, &mut parser).await;
        drop(body);
        if shared.incoming.is_closed() {
            // Nobody reads what it would bring.
            return;
        }
        let short = opened.elapsed() < LISTENER_SHORT;
        fruitless = if short && !read.delivered {
            fruitless + 1
        } else {
            0
        };
        // The server's `retry` paces it, unless it keeps ending the stream at once with nothing;
        // then, or without one, a server that ends the stream at once is asked less and less often.
        let pause = match parser.retry {
            Some(retry) if fruitless <= MAX_FRUITLESS_RESUMPTIONS => retry,
            _ => {
                backoff = if short {
                    (backoff * 2).min(LISTENER_REOPEN_MAX)
                } else {
                    LISTENER_REOPEN
                };
                backoff
            }
        };
        response = match Box::pin(reopen_listener(shared, &mut parser, pause)).await {
            Some(reopened) => reopened,
            None => return,
        };
    }
}

/// Opens the listening stream again after `pause`, resuming after the last event `id` seen.
/// A reopening that fails for a moment (no answer, a 5xx) is tried again less and less often,
/// [`MAX_LISTENER_FAILURES`] times in a row at most, and one refused for want of a token is
/// signed again; `None` when the stream is over: the server offers none any more, its session
/// or the plugin is gone (told to the connection here), it failed that often, or nobody reads
/// the connection.
async fn reopen_listener(
    shared: &Shared,
    parser: &mut SseParser,
    mut pause: std::time::Duration,
) -> Option<Response> {
    let mut refusals = 0;
    let mut failures = 0;
    loop {
        if failures == MAX_LISTENER_FAILURES {
            tracing::warn!(
                target: "formwork::transport",
                url = %shared.url,
                "the listening stream could not be opened again {MAX_LISTENER_FAILURES} times in a row; \
                 messages the plugin sends outside a request are no longer received"
            );
            return None;
        }
        tokio::time::sleep(pause).await;
        if shared.incoming.is_closed() {
            return None;
        }
        parser.resumed();
        pause = (pause * 2).clamp(LISTENER_REOPEN, LISTENER_REOPEN_MAX);
        let reopened = tokio::time::timeout(
            LISTENER_WAIT,
            shared.send_signed("GET", ACCEPT_EVENTS, "", parser.last_id.as_deref()),
        );
        let (reopened, generation) = match Box::pin(reopened).await {
            Ok(Ok(reopened)) => reopened,
            Ok(Err(SendError::Unreachable(reason))) => {
                let _ = shared.incoming.unbounded_send(Frame::Closed(format!(
                    "its listening stream ended, and {reason}"
                )));
                return None;
            }
            Ok(Err(SendError::Failed(_))) | Err(_) => {
                failures += 1;
                continue;
            }
        };
        let reopened = match shared
            .sign_again_if_refused(reopened, generation, &mut refusals)
            .await
        {
            Refusal::No(reopened) => reopened,
            Refusal::SignedAgain => {
                pause = std::time::Duration::ZERO;
                continue;
            }
            Refusal::Failed(_) => return None,
        };
        let status = reopened.status;
        if status == 404 && shared.has_session() {
            let _ = shared.incoming.unbounded_send(Frame::Closed(
                "its MCP session is gone (HTTP 404 to the listening stream)".to_owned(),
            ));
            return None;
        }
        if unavailable_for_now(status) {
            // Its body is read to reuse the connection, but a body that never comes ends nothing.
            let _ = tokio::time::timeout(LISTENER_WAIT, reopened.read_to_end(64 * 1024)).await;
            failures += 1;
            continue;
        }
        if let (Some(auth), Some(generation)) = (&shared.auth, generation) {
            auth.accepted(generation);
        }
        return listening(reopened);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, OnceLock};

    use super::*;
    use crate::transport::http::connect;
    use crate::transport::http::test_server::*;
    use crate::transport::{Sent, Transport};

    /// The listening stream, ended by the server after an event with an id, is opened again
    /// after the server's `retry` (not the host's own pause of a second) with `Last-Event-ID`.
    #[tokio::test]
    async fn the_listening_stream_resumes_after_the_servers_retry() {
        let (url, mut requests) = scripted_server(|request| match request.method.as_str() {
            "GET" if request.last_event_id.is_none() => event_stream(
                "id: l1\nretry: 50\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n\n",
            ),
            // The resumed stream stays open.
            "GET" => "200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n"
                .to_owned(),
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        let Frame::Message(message, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(message, r#"{"jsonrpc":"2.0","method":"notifications/x"}"#);
        let mut gets = Vec::new();
        while gets.len() < 2 {
            let request = requests.recv().await.unwrap();
            if request.method == "GET" {
                gets.push(request);
            }
        }
        assert_eq!(gets[0].last_event_id, None);
        assert_eq!(gets[1].last_event_id.as_deref(), Some("l1"));
        let pause = gets[1].at - gets[0].at;
        assert!(
            pause >= std::time::Duration::from_millis(50)
                && pause < std::time::Duration::from_millis(500),
            "reopened after {pause:?}"
        );
    }

    /// A connection to `url` that has said `initialized` (so it opens its listening stream), and
    /// the first `count` GETs the server got, each within ten seconds.
    async fn listening_gets(
        url: &str,
        requests: &mut tokio::sync::mpsc::UnboundedReceiver<Seen>,
        count: usize,
    ) -> (Transport, Vec<Seen>) {
        let transport = connect(url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        let mut gets = Vec::new();
        while gets.len() < count {
            let request = tokio::time::timeout(std::time::Duration::from_secs(10), requests.recv())
                .await
                .unwrap()
                .unwrap();
            if request.method == "GET" {
                gets.push(request);
            }
        }
        (transport, gets)
    }

    /// A listening stream whose reopening the server cannot take at the moment (503) is opened
    /// again a second later, still after the last event id.
    #[tokio::test]
    async fn a_listening_stream_is_reopened_after_a_moment_the_server_could_not_take_it() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => event_stream("id: l1\nretry: 10\ndata: \n\n"),
                1 => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
                _ => "200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n"
                    .to_owned(),
            },
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let (transport, gets) = listening_gets(&url, &mut requests, 3).await;
        let ids: Vec<_> = gets
            .iter()
            .map(|get| get.last_event_id.as_deref())
            .collect();
        assert_eq!(ids, [None, Some("l1"), Some("l1")]);
        let pause = gets[2].at - gets[1].at;
        assert!(
            pause >= LISTENER_REOPEN && pause < LISTENER_REOPEN * 3,
            "reopened after {pause:?}"
        );
        drop(transport);
    }

    /// A listening stream the server cannot take again, ever (503 to every reopening), is tried
    /// `MAX_LISTENER_FAILURES` times after it ended, then given up: no GET after those.
    #[tokio::test(start_paused = true)]
    async fn a_listening_stream_that_cannot_be_reopened_is_given_up_after_a_bound() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => event_stream("id: l1\nretry: 10\ndata: \n\n"),
                _ => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
            },
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        transport
            .outgoing
            .send(initialized.to_owned(), Sent::Initialized)
            .unwrap();
        // The pauses double from a second to a minute: ten of them take about five minutes.
        let mut seen = 0;
        let hour_later = tokio::time::Instant::now() + std::time::Duration::from_secs(3600);
        while let Ok(Some(request)) = tokio::time::timeout_at(hour_later, requests.recv()).await {
            seen += usize::from(request.method == "GET");
        }
        let bound = 1 + MAX_LISTENER_FAILURES as usize;
        assert_eq!(seen, bound);
        assert_eq!(gets.load(std::sync::atomic::Ordering::SeqCst), bound);
    }

    /// A server that ends every listening stream at once with nothing but a priming event is
    /// reopened after its `retry` `MAX_FRUITLESS_RESUMPTIONS` times, then after the host's own
    /// pause of a second.
    #[tokio::test]
    async fn a_listening_stream_ended_at_once_again_and_again_falls_back_to_the_hosts_pause() {
        let (url, mut requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => event_stream("id: l\nretry: 10\ndata: \n\n"),
            _ => ACCEPTED.to_owned(),
        })
        .await;
        let (_transport, gets) =
            listening_gets(&url, &mut requests, MAX_FRUITLESS_RESUMPTIONS as usize + 2).await;
        let gets: Vec<_> = gets.iter().map(|get| get.at).collect();
        let pauses: Vec<_> = gets.windows(2).map(|pair| pair[1] - pair[0]).collect();
        let (paced, own) = pauses.split_at(MAX_FRUITLESS_RESUMPTIONS as usize);
        assert!(
            paced
                .iter()
                .all(|pause| *pause < std::time::Duration::from_millis(500)),
            "{pauses:?}"
        );
        assert!(own[0] >= LISTENER_REOPEN, "{pauses:?}");
    }
}
