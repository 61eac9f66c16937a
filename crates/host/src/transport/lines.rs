//! Splitting a byte stream into lines of at most a given length, without ever holding more than
//! that: a longer line is skipped to its end and reported, and the lines after it are read as
//! usual. (tokio-util's `LinesCodec` ends the stream after such a line.)

/// What [`LineSplitter::feed`] completed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Split {
    /// A whole line, without its `\n` (or `\r\n`).
    Line(Vec<u8>),
    /// A line longer than the limit, skipped.
    Oversized,
}

/// The state between chunks: the start of the current line, or that it is being skipped.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    line: Vec<u8>,
    skipping: bool,
    limit: usize,
}

impl LineSplitter {
    /// Lines may be up to `limit` bytes long, line end excluded.
    pub(crate) fn new(limit: usize) -> Self {
        LineSplitter {
            line: Vec::new(),
            skipping: false,
            limit,
        }
    }

    /// Takes bytes from `chunk` up to and including the first line end. Returns how many were
    /// taken, and the line they completed, if any.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> (usize, Option<Split>) {
        let end = chunk.iter().position(|&byte| byte == b'\n');
        let body = &chunk[..end.unwrap_or(chunk.len())];
        if !self.skipping {
            if self.line.len() + body.len() > self.limit {
                self.skipping = true;
                self.line = Vec::new();
            } else {
                self.line.extend_from_slice(body);
            }
        }
        match end {
            None => (chunk.len(), None),
            Some(at) => (at + 1, Some(self.finish_line())),
        }
    }

    /// The end of the stream: the unfinished last line, if there is one.
    pub(crate) fn finish(&mut self) -> Option<Split> {
        (self.skipping || !self.line.is_empty()).then(|| self.finish_line())
    }

    fn finish_line(&mut self) -> Split {
        if std::mem::take(&mut self.skipping) {
            return Split::Oversized;
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Split::Line(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` as a reader would (each chunk until it is used up), then ends the stream.
    fn split(limit: usize, chunks: &[&[u8]]) -> Vec<Split> {
        let mut splitter = LineSplitter::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            let mut rest = *chunk;
            while !rest.is_empty() {
                let (used, split) = splitter.feed(rest);
                rest = &rest[used..];
                out.extend(split);
            }
        }
        out.extend(splitter.finish());
        out
    }

    fn line(text: &str) -> Split {
        Split::Line(text.as_bytes().to_vec())
    }

    #[test]
    fn lines_across_chunks_with_either_line_end() {
        assert_eq!(
            split(10, &[b"ab", b"c\nde\r\n", b"\nf"]),
            [line("abc"), line("de"), line(""), line("f")]
        );
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_and_the_next_one_read() {
        assert_eq!(
            split(4, &[b"1234\n12345\n", b"ok\n"]),
            [line("1234"), Split::Oversized, line("ok")]
        );
        // Over the limit only once its chunks add up, and never held whole.
        assert_eq!(
            split(4, &[b"12", b"34", b"5", b"6789", b"\nok"]),
            [Split::Oversized, line("ok")]
        );
        assert_eq!(split(4, &[b"123456"]), [Split::Oversized]);
    }
}
