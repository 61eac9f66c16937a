//! Resuming a call's event stream that the server ended before the response (SEP-1699).

use super::connection::{Refusal, Shared, unavailable_for_now};
use super::exchange::{OPENING_HOLD, read_sse};
use super::headers::ACCEPT_EVENTS;
use super::sse::SseParser;
use crate::transport::Frame;
use crate::transport::auth::AuthError;
use crate::transport::http1::SendError;

/// The pause before a call's event stream is resumed when the server never sent `retry`. The
/// spec leaves it to the client. A server ends a stream to be spared the open connection for a
/// while; a second grants it that, and holds the call's answer up by less than a person notices.
const DEFAULT_RETRY: std::time::Duration = std::time::Duration::from_secs(1);
/// Resumptions in a row that bring nothing (no message) before a call fails: a server that ends
/// every resumed stream at once would otherwise be asked again forever. The listening stream
/// falls back to its own pacing past it.
pub(super) const MAX_FRUITLESS_RESUMPTIONS: u32 = 5;

const ENDED_UNANSWERED: &str = "the plugin closed its event stream before answering";

/// Why a call whose event stream the server ended gets no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum ResumeError {
    /// Its events carried no `id` to resume after.
    #[error("{ENDED_UNANSWERED}")]
    EndedUnanswered,
    #[error(
        "{ENDED_UNANSWERED}, and ended it again each of the {MAX_FRUITLESS_RESUMPTIONS} times it was resumed in a row, with nothing new"
    )]
    Fruitless,
    #[error(
        "{ENDED_UNANSWERED}, and its resumption failed {MAX_FRUITLESS_RESUMPTIONS} times in a row; the last time: {0}"
    )]
    FailedAgainAndAgain(String),
    #[error("{ENDED_UNANSWERED}, and answered HTTP {0} to its resumption")]
    Status(u16),
    #[error("{ENDED_UNANSWERED}, and answered its resumption with content type `{0}`")]
    NotAStream(String),
    /// Signing in again, as the resumption was refused for want of a token, failed.
    #[error(transparent)]
    SignIn(AuthError),
}

/// Follows a call's event stream that the server ended before the response: while its events
/// carried an `id`, waits the server's `retry` delay (exactly that) and resumes the stream with a
/// GET bearing `Last-Event-ID`, on which the rest of the call comes (its forms, its response).
/// A resumption that fails (the server down for a moment, a 5xx) or brings nothing new is tried
/// again after the same delay, [`MAX_FRUITLESS_RESUMPTIONS`] times in a row at most; one the
/// server refuses for want of a token is signed (refreshed) again like any request.
/// `Err` is why the call fails; a session or a plugin gone is told to the connection here.
pub(super) async fn resume(
    shared: &Shared,
    request_id: u64,
    mut parser: SseParser,
) -> Result<(), ResumeError> {
    let mut fruitless = 0;
    let mut refusals = 0;
    // Why the last resumption failed, when it did.
    let mut failure: Option<SendError> = None;
    let mut pause = true;
    loop {
        if shared.incoming.is_closed() {
            // Nobody waits for the answer any more.
            return Ok(());
        }
        let Some(last_id) = parser.last_id.clone() else {
            return Err(ResumeError::EndedUnanswered);
        };
        if fruitless == MAX_FRUITLESS_RESUMPTIONS {
            return match failure {
                None => Err(ResumeError::Fruitless),
                Some(SendError::Failed(reason)) => Err(ResumeError::FailedAgainAndAgain(reason)),
                Some(SendError::Unreachable(reason)) => {
                    let _ = shared
                        .incoming
                        .unbounded_send(Frame::Closed(format!("{ENDED_UNANSWERED}, and {reason}")));
                    Ok(())
                }
            };
        }
        if pause {
            tokio::time::sleep(parser.retry.unwrap_or(DEFAULT_RETRY)).await;
        }
        pause = true;
        // A server that ended many calls' streams at once sees them all back after the same
        // delay: like a call's POST, each waits its turn for one of the endpoint's permits.
        let mut resumed = Box::pin(shared.send_signed("GET", ACCEPT_EVENTS, "", Some(&last_id)));
        let permit = shared.endpoint.opening.acquire().await;
        let first = tokio::time::timeout(OPENING_HOLD, resumed.as_mut()).await;
        drop(permit);
        let sent = match first {
            Ok(sent) => sent,
            Err(_) => resumed.await,
        };
        let (response, generation) = match sent {
            Ok(sent) => sent,
            Err(err) => {
                failure = Some(err);
                fruitless += 1;
                continue;
            }
        };
        let response = match shared
            .sign_again_if_refused(response, generation, &mut refusals)
            .await
        {
            Refusal::No(response) => response,
            Refusal::SignedAgain => {
                // Resume at once.
                pause = false;
                continue;
            }
            Refusal::Failed(err) => return Err(ResumeError::SignIn(err)),
        };
        let status = response.status;
        if status == 404 && shared.has_session() {
            let reason = "the plugin answered HTTP 404 to the resumption of a call's event stream";
            shared.fail_request(Some(request_id), reason.to_owned());
            let _ = shared
                .incoming
                .unbounded_send(Frame::Closed(format!("its MCP session is gone ({reason})")));
            return Ok(());
        }
        if unavailable_for_now(status) {
            let _ = response.read_to_end(64 * 1024).await;
            failure = Some(SendError::Failed(format!("it answered HTTP {status}")));
            fruitless += 1;
            continue;
        }
        if !(200..300).contains(&status) {
            return Err(ResumeError::Status(status));
        }
        if let (Some(auth), Some(generation)) = (&shared.auth, generation) {
            auth.accepted(generation);
        }
        if !response.content_type.starts_with("text/event-stream") {
            return Err(ResumeError::NotAStream(response.content_type));
        }
        parser.resumed();
        let mut body = response.into_body();
        let read = read_sse(shared, &mut body, Some(request_id), &mut parser).await;
        drop(body);
        if read.answered {
            return Ok(());
        }
        failure = None;
        fruitless = if read.delivered { 0 } else { fruitless + 1 };
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, OnceLock};

    use serde_json::Value;
    use tokio::io::AsyncBufReadExt;

    use super::*;
    use crate::jsonrpc;
    use crate::transport::Sent;
    use crate::transport::http::connect;
    use crate::transport::http::test_server::*;

    /// A call whose stream ends before its response, and whose every resumption ends again
    /// with nothing new (a new priming id only), fails after `MAX_FRUITLESS_RESUMPTIONS`
    /// resumptions, each after the last id seen.
    #[tokio::test]
    async fn a_call_resumed_again_and_again_to_no_avail_fails() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => {
                let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                event_stream(&format!("id: g{n}\ndata: \n\n"))
            }
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message":
                "the plugin closed its event stream before answering, and ended it again each \
                 of the 5 times it was resumed in a row, with nothing new"}})
        );
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        let get = |id: &str| ("GET".to_owned(), Some(id.to_owned()));
        assert_eq!(
            seen,
            [
                ("POST".to_owned(), None),
                get("p0"),
                get("g1"),
                get("g2"),
                get("g3"),
                get("g4")
            ]
        );
    }

    /// A resumption the server cannot take at the moment (503) is tried again after its
    /// `retry`, and the call gets its answer; one it refuses outright (400) ends the call.
    #[tokio::test]
    async fn a_resumption_the_server_cannot_take_now_is_tried_again() {
        let gets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = Arc::clone(&gets);
        let (url, mut requests) = scripted_server(move |request| match request.method.as_str() {
            "GET" => match counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                0 => "503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    .to_owned(),
                1 => event_stream("id: g1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"),
                _ => "400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
            },
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, Some(1)) = next_frame(&mut transport).await else {
            panic!("not call 1's answer");
        };
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        let get = ("GET".to_owned(), Some("p0".to_owned()));
        assert_eq!(seen, [("POST".to_owned(), None), get.clone(), get]);
        let call = jsonrpc::request(2, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(2)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap(),
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message":
                "the plugin closed its event stream before answering, and answered HTTP 400 \
                 to its resumption"}})
        );
    }

    /// A resumed call's stream brings its response, tagged with the call; cancelling a call
    /// while its resumption waits stops it: no GET is made for it.
    #[tokio::test]
    async fn a_cancelled_call_is_not_resumed_and_the_other_is() {
        let (url, mut requests) = scripted_server(|request| {
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            match (request.method.as_str(), &request.last_event_id) {
                ("GET", Some(id)) => {
                    let call = id.trim_start_matches('c');
                    event_stream(&format!(
                        "id: {id}-1\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{call},\"result\":{{}}}}\n\n"
                    ))
                }
                _ if message.get("id").is_some() => {
                    event_stream(&format!("id: c{}\nretry: 300\ndata: \n\n", message["id"]))
                }
                _ => ACCEPTED.to_owned(),
            }
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        for id in [1, 2] {
            let call = jsonrpc::request(id, "tools/call", Some(serde_json::json!({"name": "t"})));
            transport.outgoing.send(call, Sent::Request(id)).unwrap();
        }
        for _ in 0..2 {
            assert_eq!(requests.recv().await.unwrap().method, "POST");
        }
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        transport
            .outgoing
            .send(cancel.to_owned(), Sent::Cancel(1))
            .unwrap();
        let Frame::Message(answer, Some(2)) = next_frame(&mut transport).await else {
            panic!("not call 2's answer");
        };
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        // Call 1 would have been resumed by now, with call 2.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut seen = Vec::new();
        while let Ok(request) = requests.try_recv() {
            seen.push((request.method, request.last_event_id));
        }
        assert_eq!(
            seen,
            [
                ("POST".to_owned(), None),
                ("GET".to_owned(), Some("c2".to_owned()))
            ]
        );
    }

    /// Calls whose streams a server ends all at once are resumed at most `MAX_OPENING` at a
    /// time, like calls started at once; every one gets its answer.
    #[tokio::test]
    async fn calls_resumed_at_once_open_a_bounded_number_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        const CALLS: u64 = 300;
        let waiting = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (counted, highest) = (Arc::clone(&waiting), Arc::clone(&most));
        let (url, _requests) = scripted_server_awaiting(move |request| {
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            match &request.last_event_id {
                Some(id) => {
                    let (waiting, most, call) =
                        (Arc::clone(&counted), Arc::clone(&highest), id.clone());
                    Box::pin(async move {
                        let now = waiting.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        waiting.fetch_sub(1, Ordering::SeqCst);
                        event_stream(&format!(
                            "data: {{\"jsonrpc\":\"2.0\",\"id\":{call},\"result\":{{}}}}\n\n"
                        ))
                    })
                }
                None => {
                    let text =
                        event_stream(&format!("id: {}\nretry: 0\ndata: \n\n", message["id"]));
                    Box::pin(async move { text })
                }
            }
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        for id in 0..CALLS {
            let call = jsonrpc::request(id, "tools/call", Some(serde_json::json!({"name": "t"})));
            transport.outgoing.send(call, Sent::Request(id)).unwrap();
        }
        let mut answered = std::collections::HashSet::new();
        while (answered.len() as u64) < CALLS {
            let Frame::Message(text, Some(id)) = next_frame(&mut transport).await else {
                panic!("not a call's message");
            };
            assert_eq!(
                text,
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#)
            );
            answered.insert(id);
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            (2..=crate::transport::http1::MAX_OPENING).contains(&most),
            "{most} resumptions waited at once"
        );
    }

    /// A plugin gone while its call's stream waits to be resumed ends the connection.
    #[tokio::test]
    async fn a_plugin_gone_before_the_resumption_ends_the_connection() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let url = format!("http://{address}/mcp");
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let (socket, _) = listener.accept().await.unwrap();
        drop(listener);
        // The request is read whole first: closing with unread bytes would reset the connection.
        let mut socket = tokio::io::BufReader::new(socket);
        let mut length = 0;
        loop {
            let mut line = String::new();
            socket.read_line(&mut line).await.unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(n) = line.strip_prefix("content-length: ") {
                length = n.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        tokio::io::AsyncReadExt::read_exact(&mut socket, &mut body)
            .await
            .unwrap();
        let answer = format!("HTTP/1.1 {}", event_stream("id: p0\nretry: 50\ndata: \n\n"));
        socket.get_mut().write_all(answer.as_bytes()).await.unwrap();
        drop(socket);
        let Frame::Closed(reason) = next_frame(&mut transport).await else {
            panic!("the connection did not end");
        };
        assert!(
            reason.starts_with(&format!(
                "the plugin closed its event stream before answering, and the HTTP request to \
                 {url} failed: "
            )),
            "{reason}"
        );
    }

    /// A resumption answered 404 while the connection has a session: the session is gone.
    #[tokio::test]
    async fn a_resumption_answered_404_ends_the_session() {
        let (url, _requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => "404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
            _ => "200 OK\r\ncontent-type: text/event-stream\r\nmcp-session-id: s1\r\n\
                  connection: close\r\n\r\nid: p0\nretry: 10\ndata: \n\n"
                .to_owned(),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        let reason = "the plugin answered HTTP 404 to the resumption of a call's event stream";
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap()["error"]["message"],
            reason
        );
        let Frame::Closed(closed) = next_frame(&mut transport).await else {
            panic!("the connection did not end");
        };
        assert_eq!(closed, format!("its MCP session is gone ({reason})"));
    }

    /// A resumption answered with anything but an event stream fails the call with the status.
    #[tokio::test]
    async fn a_resumption_refused_fails_the_call_with_the_status() {
        let (url, _requests) = scripted_server(|request| match request.method.as_str() {
            "GET" => "405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                .to_owned(),
            _ => event_stream("id: p0\nretry: 10\ndata: \n\n"),
        })
        .await;
        let mut transport = connect(&url, Arc::new(OnceLock::new()), Vec::new(), None).unwrap();
        let call = jsonrpc::request(1, "tools/call", Some(serde_json::json!({"name": "t"})));
        transport.outgoing.send(call, Sent::Request(1)).unwrap();
        let Frame::Message(answer, None) = next_frame(&mut transport).await else {
            panic!("not a message");
        };
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap()["error"]["message"],
            "the plugin closed its event stream before answering, and answered HTTP 405 to its \
             resumption"
        );
    }
}
