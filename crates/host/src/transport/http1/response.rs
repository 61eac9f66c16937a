//! Reading a response: its head, then its body, however it is framed (`Content-Length`,
//! chunked, or until the server closes); a body read to its end gives its connection back to
//! the endpoint's pool.

use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncReadExt};

use super::endpoint::Endpoint;
use super::{Connection, MAX_HEAD_BYTES, ReadError};

/// A response whose head has been read; the body is read with [`Response::chunk`].
pub(crate) struct Response {
    pub status: u16,
    /// Lower-cased, parameters kept.
    pub content_type: String,
    pub session_id: Option<String>,
    /// `WWW-Authenticate`, for the authorization a 401 or 403 asks for.
    pub www_authenticate: Option<String>,
    /// `Location`, where a redirect points.
    pub location: Option<String>,
    /// `Retry-After`, how long a 429 or 503 asks the client to wait.
    pub retry_after: Option<String>,
    body: Body,
}

/// A response's body, to read without its head.
pub(crate) struct Body {
    connection: Option<Connection>,
    framing: Framing,
    /// Return the connection to the pool once the body is read.
    reusable: bool,
    endpoint: Arc<Endpoint>,
}

enum Framing {
    Length(u64),
    /// Bytes left in the current chunk; 0 means a size line comes next.
    Chunked {
        left: u64,
    },
    UntilClose,
    Done,
}

/// What a response head says that the client acts on.
struct Head {
    status: u16,
    /// Lower-cased, parameters kept.
    content_type: String,
    session_id: Option<String>,
    www_authenticate: Option<String>,
    location: Option<String>,
    retry_after: Option<String>,
    length: Option<u64>,
    /// The final transfer coding is `chunked`.
    chunked: bool,
    /// Some transfer coding is named at all.
    encoded: bool,
    /// HTTP/1.0, or `close` among the `Connection` tokens.
    close: bool,
}

impl Head {
    fn parse(bytes: &[u8]) -> Result<Head, ReadError> {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Response::new(&mut fields);
        if !matches!(parsed.parse(bytes), Ok(httparse::Status::Complete(_))) {
            return Err(ReadError::MalformedHead);
        }
        let mut head = Head {
            status: parsed.code.unwrap_or(0),
            content_type: String::new(),
            session_id: None,
            www_authenticate: None,
            location: None,
            retry_after: None,
            length: None,
            chunked: false,
            encoded: false,
            close: parsed.version == Some(0),
        };
        for field in parsed.headers.iter() {
            let value = String::from_utf8_lossy(field.value).trim().to_owned();
            let name = field.name;
            if name.eq_ignore_ascii_case("content-type") {
                head.content_type = value.to_ascii_lowercase();
            } else if name.eq_ignore_ascii_case("mcp-session-id") {
                head.session_id = Some(value);
            } else if name.eq_ignore_ascii_case("www-authenticate") {
                // Several challenges may come in separate fields: the Bearer one is wanted.
                if head.www_authenticate.is_none()
                    || value.to_ascii_lowercase().starts_with("bearer")
                {
                    head.www_authenticate = Some(value);
                }
            } else if name.eq_ignore_ascii_case("location") {
                head.location = Some(value);
            } else if name.eq_ignore_ascii_case("retry-after") {
                head.retry_after = Some(value);
            } else if name.eq_ignore_ascii_case("content-length") {
                let length = value.parse::<u64>().map_err(|_| ReadError::BadLength)?;
                head.length = Some(length);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                head.encoded = true;
                head.chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            } else if name.eq_ignore_ascii_case("connection") {
                head.close |= value
                    .split(',')
                    .any(|token| token.trim().eq_ignore_ascii_case("close"));
            }
        }
        Ok(head)
    }
}

impl Response {
    /// Reads the response to a request just written on `connection`, up to its body, past any
    /// interim answers. `Ok(None)`: the connection closed before a byte of it arrived.
    pub(super) async fn read(
        mut connection: Connection,
        endpoint: Arc<Endpoint>,
    ) -> Result<Option<Response>, ReadError> {
        let mut answered = false;
        // Interim answers (100 Continue, 103 Early Hints) come before the final one.
        let head = loop {
            let Some(bytes) = read_head(&mut connection, answered).await? else {
                return Ok(None);
            };
            answered = true;
            let head = Head::parse(&bytes)?;
            if !(100..200).contains(&head.status) || head.status == 101 {
                break head;
            }
        };
        let Head {
            status,
            content_type,
            session_id,
            www_authenticate,
            location,
            retry_after,
            length,
            chunked,
            encoded,
            mut close,
        } = head;
        let no_body = matches!(status, 204 | 304) || (100..200).contains(&status);
        let framing = if no_body {
            Framing::Done
        } else if chunked {
            Framing::Chunked { left: 0 }
        } else if encoded {
            // Some other final coding: the body runs until the server closes.
            close = true;
            Framing::UntilClose
        } else if let Some(length) = length {
            if length == 0 {
                Framing::Done
            } else {
                Framing::Length(length)
            }
        } else {
            close = true;
            Framing::UntilClose
        };
        let mut body = Body {
            connection: Some(connection),
            framing,
            reusable: !close,
            endpoint,
        };
        body.finish_if_done();
        Ok(Some(Response {
            status,
            content_type,
            session_id,
            www_authenticate,
            location,
            retry_after,
            body,
        }))
    }

    /// The next piece of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        self.body.chunk().await
    }

    /// The body alone: what a reader of a long event stream keeps, the head's strings freed.
    pub(crate) fn into_body(self) -> Body {
        self.body
    }

    /// The whole body, refused past `limit` bytes.
    pub(crate) async fn read_to_end(mut self, limit: usize) -> Result<Vec<u8>, ReadError> {
        let mut all = Vec::new();
        while let Some(piece) = self.chunk().await? {
            if all.len() + piece.len() > limit {
                return Err(ReadError::TooLarge(limit));
            }
            all.extend_from_slice(&piece);
        }
        Ok(all)
    }
}

impl Body {
    /// The next piece of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Vec<u8>>, ReadError> {
        loop {
            let Some(connection) = self.connection.as_mut() else {
                return Ok(None);
            };
            let piece = match &mut self.framing {
                Framing::Done => return Ok(None),
                Framing::Length(left) => {
                    let piece = read_some(connection, *left).await?;
                    if piece.is_empty() {
                        return Err(ReadError::ClosedMidBody);
                    }
                    *left -= piece.len() as u64;
                    if *left == 0 {
                        self.framing = Framing::Done;
                    }
                    piece
                }
                Framing::UntilClose => {
                    let piece = read_some(connection, u64::MAX).await?;
                    if piece.is_empty() {
                        self.framing = Framing::Done;
                    }
                    piece
                }
                Framing::Chunked { left: 0 } => {
                    let size = read_chunk_size(connection).await?;
                    if size == 0 {
                        if !skip_trailers(connection).await? {
                            self.reusable = false;
                        }
                        self.framing = Framing::Done;
                    } else {
                        self.framing = Framing::Chunked { left: size };
                    }
                    Vec::new()
                }
                Framing::Chunked { left } => {
                    let piece = read_some(connection, *left).await?;
                    if piece.is_empty() {
                        return Err(ReadError::ClosedMidChunk);
                    }
                    *left -= piece.len() as u64;
                    if *left == 0 {
                        let mut crlf = [0; 2];
                        connection.read_exact(&mut crlf).await?;
                        if crlf != *b"\r\n" {
                            return Err(ReadError::MalformedChunk);
                        }
                        self.framing = Framing::Chunked { left: 0 };
                    }
                    piece
                }
            };
            self.finish_if_done();
            if !piece.is_empty() {
                return Ok(Some(piece));
            }
        }
    }

    /// Once the body is whole, the connection goes back to the pool (or is closed).
    fn finish_if_done(&mut self) {
        if matches!(self.framing, Framing::Done)
            && let Some(connection) = self.connection.take()
            && self.reusable
            && connection.buffer().is_empty()
        {
            self.endpoint.put_idle(connection);
        }
    }
}

/// Up to `limit` bytes, whatever has arrived (waits for at least one); empty at end of stream.
async fn read_some(connection: &mut Connection, limit: u64) -> Result<Vec<u8>, ReadError> {
    connection.fill_buf().await?;
    Ok(connection.take_buffered(usize::try_from(limit).unwrap_or(usize::MAX)))
}

async fn read_chunk_size(connection: &mut Connection) -> Result<u64, ReadError> {
    let mut line = Vec::new();
    let mut limited = (&mut *connection).take(1024);
    limited.read_until(b'\n', &mut line).await?;
    if line.is_empty() {
        return Err(ReadError::ClosedMidBody);
    }
    if line.last() != Some(&b'\n') {
        return Err(ReadError::MalformedChunk);
    }
    let text = String::from_utf8_lossy(&line);
    let size = text.trim().split(';').next().unwrap_or("").trim();
    u64::from_str_radix(size, 16).map_err(|_| ReadError::MalformedChunkSize)
}

/// Reads the trailer section; whether it ended properly (else the connection is not reused).
async fn skip_trailers(connection: &mut Connection) -> Result<bool, ReadError> {
    let mut total = 0;
    loop {
        let mut line = Vec::new();
        let mut limited = (&mut *connection).take(MAX_HEAD_BYTES as u64);
        let read = limited.read_until(b'\n', &mut line).await?;
        total += read;
        if read == 0 || line.last() != Some(&b'\n') || total > MAX_HEAD_BYTES {
            return Ok(false);
        }
        if line == b"\r\n" || line == b"\n" {
            return Ok(true);
        }
    }
}

/// One response head, up to its empty line, at most [`MAX_HEAD_BYTES`]. `None`: the connection
/// ended before a byte of it (only allowed before the first head of an exchange).
async fn read_head(
    connection: &mut Connection,
    answered: bool,
) -> Result<Option<Vec<u8>>, ReadError> {
    let mut head = Vec::new();
    loop {
        let before = head.len();
        let room = (MAX_HEAD_BYTES + 1).saturating_sub(head.len()) as u64;
        let read = (&mut *connection)
            .take(room)
            .read_until(b'\n', &mut head)
            .await?;
        if head.len() > MAX_HEAD_BYTES {
            return Err(ReadError::HeadTooLarge);
        }
        if read == 0 {
            return if head.is_empty() && !answered {
                Ok(None)
            } else {
                Err(ReadError::ClosedMidAnswer)
            };
        }
        let line = &head[before..];
        if line == b"\r\n" || line == b"\n" {
            return Ok(Some(head));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::transport::http1::test_server::{ACCEPTED, accepted, serve};

    #[tokio::test]
    async fn refuses_bodies_over_the_limit_and_malformed_heads() {
        let (url, _) = serve(vec![
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789",
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(
            response.read_to_end(4).await.unwrap_err().to_string(),
            "the server's answer exceeds 4 bytes"
        );
        let (url, _) = serve(vec!["NOT HTTP\r\n\r\n"]).await;
        assert_eq!(
            Endpoint::new(&url)
                .unwrap()
                .send("POST", &[], b"{}")
                .await
                .err()
                .unwrap()
                .to_string(),
            "the server sent a malformed HTTP response"
        );
        // A head line that never ends is cut off at the limit, not buffered without end.
        let endless: &'static str = Box::leak(
            format!(
                "HTTP/1.1 200 OK\r\nx-filler: {}",
                "a".repeat(MAX_HEAD_BYTES)
            )
            .into_boxed_str(),
        );
        let (url, _) = serve(vec![endless]).await;
        assert_eq!(
            Endpoint::new(&url)
                .unwrap()
                .send("POST", &[], b"{}")
                .await
                .err()
                .unwrap()
                .to_string(),
            "the server's response head is too large"
        );
        let (url, _) = serve(vec![
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY",
        ])
        .await;
        let response = Endpoint::new(&url)
            .unwrap()
            .send("POST", &[], b"{}")
            .await
            .unwrap();
        assert_eq!(
            response.read_to_end(100).await.unwrap_err().to_string(),
            "the server sent a malformed chunk"
        );
    }

    #[tokio::test]
    async fn skips_interim_answers_and_reads_trailers() {
        let (url, connections) = serve(vec![
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nx-checksum: 1\r\n\r\n",
            ACCEPTED,
        ])
        .await;
        let endpoint = Endpoint::new(&url).unwrap();
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.read_to_end(100).await.unwrap(), b"ok");
        let response = endpoint.send("POST", &[], b"{}").await.unwrap();
        assert_eq!(response.status, 202);
        assert_eq!(accepted(&connections), 1);
    }
}
