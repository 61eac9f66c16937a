//! Errors of the configuration layer. A bad file is reported like a compiler reports a bad
//! source file: `file:line:column: key: message`, so a person can jump straight to the line.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The name shown for configuration text that did not come from a file.
pub const NO_FILE: &str = "<formwork.toml>";

/// Something is wrong with a configuration file or with a file `config import` reads.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be written.
    #[error("{}: cannot write: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not valid: bad TOML or JSON, an unknown key, a value of the wrong kind.
    #[error("{0}")]
    Invalid(Box<Invalid>),
    /// The request cannot be carried out on a valid file (for example formwork's own path is
    /// not UTF-8, or the server to remember an approval for is not configured).
    #[error("{}: {message}", .path.display())]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// Where a configuration file is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The file, or `None` for text that did not come from a file.
    pub path: Option<PathBuf>,
    /// 1-based line, when the position is known.
    pub line: Option<usize>,
    /// 1-based column in characters, when the position is known.
    pub column: Option<usize>,
    /// The dotted key path (`mcp_servers.x.default_tools_approval_mode`); empty for a syntax
    /// error outside any key.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "{}", path.display())?,
            None => f.write_str(NO_FILE)?,
        }
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if self.key.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.key, self.message)
        }
    }
}

impl ConfigError {
    /// Builds an [`ConfigError::Invalid`] for a byte range of `text`.
    pub(crate) fn invalid(
        path: Option<&Path>,
        text: &str,
        span: Option<Range<usize>>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = match span {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                (Some(line), Some(column))
            }
            None => (None, None),
        };
        ConfigError::Invalid(Box::new(Invalid {
            path: path.map(Path::to_path_buf),
            line,
            column,
            key: key.into(),
            message: message.into(),
        }))
    }

    /// The details of an invalid file, if that is what this error is.
    pub fn as_invalid(&self) -> Option<&Invalid> {
        match self {
            ConfigError::Invalid(invalid) => Some(invalid),
            _ => None,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset. An offset past the end or inside
/// a character is clamped to the nearest character boundary before it.
pub(crate) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Formats one key of a dotted path the way TOML would need it written: bare when it can be,
/// quoted otherwise.
pub(crate) fn key_segment(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        // A JSON string is a valid TOML basic string for everything a key can hold.
        serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
    }
}

/// Joins keys into a dotted path.
pub(crate) fn dotted<'a>(keys: impl IntoIterator<Item = &'a str>) -> String {
    keys.into_iter()
        .map(key_segment)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let text = "a = 1\nb = \"é\" x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        let x = text.find('x').unwrap_or_default();
        assert_eq!(line_column(text, x), (2, 9));
        assert_eq!(line_column(text, 10_000), (3, 1));
    }

    #[test]
    fn keys_are_quoted_only_when_needed() {
        assert_eq!(
            dotted(["mcp_servers", "my server", "tools", "a.b"]),
            r#"mcp_servers."my server".tools."a.b""#
        );
    }
}
