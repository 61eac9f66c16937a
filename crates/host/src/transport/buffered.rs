//! A buffered reader that holds no buffer while everything it read has been consumed.
//!
//! A call's event stream waits as long as the person takes to answer its form, and thousands
//! may wait at once: a fixed buffer per connection (tokio's `BufReader`) would be held by each
//! of them all that time. Here each read goes through a buffer on the stack and keeps on the
//! heap only the bytes it got, until they are consumed.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncBufRead, AsyncRead, ReadBuf};

/// The most one read takes from the socket.
const READ_SIZE: usize = 8 * 1024;

pub(crate) struct Buffered<R> {
    inner: R,
    /// Bytes read and not yet consumed, from `pos` on; empty (unallocated) when all are.
    buffer: Vec<u8>,
    pos: usize,
}

impl<R: AsyncRead + Unpin> Buffered<R> {
    pub(crate) fn new(inner: R) -> Self {
        Buffered {
            inner,
            buffer: Vec::new(),
            pos: 0,
        }
    }

    /// The reader underneath, e.g. to write to it.
    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// The bytes read and not yet consumed.
    pub(crate) fn buffer(&self) -> &[u8] {
        &self.buffer[self.pos..]
    }

    /// Up to `limit` of the unconsumed bytes, consumed; the buffer itself when it goes whole.
    pub(crate) fn take_buffered(&mut self, limit: usize) -> Vec<u8> {
        if self.pos == 0 && self.buffer.len() <= limit {
            return std::mem::take(&mut self.buffer);
        }
        let end = self.buffer.len().min(self.pos.saturating_add(limit));
        let piece = self.buffer[self.pos..end].to_vec();
        self.advance(piece.len());
        piece
    }

    fn advance(&mut self, amount: usize) {
        self.pos = self.pos.saturating_add(amount).min(self.buffer.len());
        if self.pos == self.buffer.len() {
            self.buffer = Vec::new();
            self.pos = 0;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncBufRead for Buffered<R> {
    fn poll_fill_buf(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.buffer.is_empty() {
            let mut stack = [0u8; READ_SIZE];
            let mut read = ReadBuf::new(&mut stack);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            this.buffer = read.filled().to_vec();
            this.pos = 0;
        }
        Poll::Ready(Ok(&this.buffer[this.pos..]))
    }

    fn consume(self: Pin<&mut Self>, amount: usize) {
        self.get_mut().advance(amount);
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Buffered<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.buffer.is_empty() {
            // Nothing buffered: read straight into the caller's buffer.
            return Pin::new(&mut this.inner).poll_read(cx, out);
        }
        let available = &this.buffer[this.pos..];
        let amount = available.len().min(out.remaining());
        out.put_slice(&available[..amount]);
        this.advance(amount);
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};

    use super::*;

    #[tokio::test]
    async fn reads_lines_and_exact_bytes_and_lets_go_of_its_buffer() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut reader = Buffered::new(reader);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"one\ntwo\r\nabcdef")
            .await
            .expect("write");
        drop(writer);

        let mut line = Vec::new();
        reader.read_until(b'\n', &mut line).await.expect("read");
        assert_eq!(line, b"one\n");
        assert_eq!(reader.buffer(), b"two\r\nabcdef");
        line.clear();
        reader.read_until(b'\n', &mut line).await.expect("read");
        assert_eq!(line, b"two\r\n");
        let mut two = [0; 2];
        reader.read_exact(&mut two).await.expect("read");
        assert_eq!(&two, b"ab");
        assert_eq!(reader.take_buffered(3), b"cde");
        assert_eq!(reader.take_buffered(10), b"f");
        // All consumed: no allocation is held.
        assert_eq!(reader.buffer.capacity(), 0);
        assert!(reader.fill_buf().await.expect("read").is_empty());
    }
}
