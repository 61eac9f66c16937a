//! A scripted HTTP server for the transport's tests.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use futures::StreamExt;
use tokio::io::AsyncBufReadExt;

use crate::transport::{Frame, Transport};

/// One request as a scripted server read it.
#[derive(Debug)]
pub(super) struct Seen {
    pub(super) method: String,
    pub(super) last_event_id: Option<String>,
    pub(super) body: String,
    pub(super) at: std::time::Instant,
}

/// A server on a local port that reads one request per connection, answers it with what
/// `answer` gives (the whole response after the status line's `HTTP/1.1 `), and closes the
/// connection; every request is reported.
pub(super) async fn scripted_server(
    answer: impl Fn(&Seen) -> String + Send + Sync + 'static,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    scripted_server_awaiting(move |request| {
        let text = answer(request);
        Box::pin(async move { text })
    })
    .await
}

/// [`scripted_server`] with an answer that may take its time.
pub(super) async fn scripted_server_awaiting(
    answer: impl Fn(&Seen) -> futures::future::BoxFuture<'static, String> + Send + Sync + 'static,
) -> (String, tokio::sync::mpsc::UnboundedReceiver<Seen>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (seen, requests) = tokio::sync::mpsc::unbounded_channel();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (answer, seen) = (Arc::clone(&answer), seen.clone());
            tokio::spawn(async move {
                let mut socket = tokio::io::BufReader::new(socket);
                let mut head = Vec::new();
                loop {
                    let mut line = String::new();
                    if socket.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push(line.trim_end().to_owned());
                }
                let header = |name: &str| {
                    head.iter().find_map(|line| {
                        let (field, value) = line.split_once(": ")?;
                        field.eq_ignore_ascii_case(name).then(|| value.to_owned())
                    })
                };
                let length = header("content-length").map_or(0, |n| n.parse().unwrap());
                let mut body = vec![0; length];
                socket.read_exact(&mut body).await.unwrap();
                let request = Seen {
                    method: head[0].split(' ').next().unwrap().to_owned(),
                    last_event_id: header("last-event-id"),
                    body: String::from_utf8(body).unwrap(),
                    at: std::time::Instant::now(),
                };
                let answering = answer(&request);
                let _ = seen.send(request);
                let response = format!("HTTP/1.1 {}", answering.await);
                let _ = socket.get_mut().write_all(response.as_bytes()).await;
                let _ = socket.get_mut().shutdown().await;
            });
        }
    });
    (url, requests)
}

/// An event stream of `events` that ends when the connection closes.
pub(super) fn event_stream(events: &str) -> String {
    format!("200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{events}")
}

pub(super) const ACCEPTED: &str = "202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

/// The next frame, which must come within ten seconds.
pub(super) async fn next_frame(transport: &mut Transport) -> Frame {
    tokio::time::timeout(
        std::time::Duration::from_secs(10),
        transport.incoming.next(),
    )
    .await
    .expect("no frame within ten seconds")
    .expect("the frames ended")
}
