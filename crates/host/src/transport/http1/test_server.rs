//! A raw HTTP server for the client's tests.

#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// A server that answers requests with the given raw responses, in order, on whatever
/// connection they come; after a response ending in `CLOSE` (not sent) it closes that
/// connection. Returns the URL and a count of the connections accepted.
pub(super) async fn serve(
    responses: Vec<&'static str>,
) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    let pending = Arc::new(Mutex::new(responses.into_iter()));
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            counter.fetch_add(1, Ordering::SeqCst);
            let pending = Arc::clone(&pending);
            tokio::spawn(async move {
                let mut reader = BufReader::new(&mut socket);
                loop {
                    let mut request = Vec::new();
                    loop {
                        let before = request.len();
                        if reader.read_until(b'\n', &mut request).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if &request[before..] == b"\r\n" {
                            break;
                        }
                    }
                    let text = String::from_utf8_lossy(&request).to_lowercase();
                    let length: usize = text
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length: "))
                        .map_or(0, |n| n.trim().parse().unwrap());
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).await.unwrap();
                    let Some(response) = pending.lock().unwrap().next() else {
                        return;
                    };
                    if response == "RESET" {
                        // Closed at once without linger: the peer sees a reset, not an end.
                        let _ = reader.get_ref().set_zero_linger();
                        return;
                    }
                    let (response, close) = match response.strip_suffix("CLOSE") {
                        Some(response) => (response, true),
                        None => (response, false),
                    };
                    reader
                        .get_mut()
                        .write_all(response.as_bytes())
                        .await
                        .unwrap();
                    if close {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{address}/mcp"), accepted)
}

/// An empty acknowledgement on a kept-alive connection.
pub(super) const ACCEPTED: &str = "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";

pub(super) fn accepted(count: &std::sync::atomic::AtomicUsize) -> usize {
    count.load(std::sync::atomic::Ordering::SeqCst)
}
