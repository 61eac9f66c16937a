//! Files the person adds to a resource picker (`x-openai-input` with `userOptions`): copied into
//! `uploads/<session>/` beside the database, private like the database's own files, and named
//! to the plugin by the `file://` URI of the copy.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::error::StoreError;
use super::files::FILE_MODE;

/// The directory, beside the database, that holds the uploads (one folder per session).
pub const UPLOADS_DIR: &str = "uploads";

/// The largest file accepted, in bytes.
pub const MAX_UPLOAD_BYTES: usize = 32 * 1024 * 1024;

/// The longest file name kept from the person's (the rest is cut).
const MAX_NAME_CHARS: usize = 80;

/// A copy of an added file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// Where the copy is.
    pub path: PathBuf,
    /// Its `file://` URI, what the plugin is answered.
    pub uri: String,
    /// The name it was saved under (the person's, made safe).
    pub name: String,
}

/// Writes `bytes` as a new file named after `name` in `<root>/<session>/` (folders created 0700,
/// the file 0600, never over an existing file) and returns the copy.
///
/// `session` must be a plain name (letters, digits, `-`, `_`); `name` is only a hint: every
/// character but letters, digits, `.`, `-` and `_` becomes `_`, a leading dot is dropped, and a
/// number in front keeps each copy apart.
pub fn save_upload(
    root: &Path,
    session: &str,
    name: &str,
    bytes: &[u8],
) -> Result<Upload, StoreError> {
    let invalid = |detail: String| StoreError::Io {
        path: root.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, detail),
    };
    if session.is_empty()
        || !session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(invalid(format!("`{session}` is not a session id")));
    }
    if bytes.len() > MAX_UPLOAD_BYTES {
        return Err(invalid(format!(
            "the file is {} bytes; at most {MAX_UPLOAD_BYTES} are accepted",
            bytes.len()
        )));
    }
    let dir = root.join(session);
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|source| StoreError::Io {
            path: dir.clone(),
            source,
        })?;
    let safe = safe_name(name);
    for number in 1u32.. {
        let file_name = format!("{number}-{safe}");
        let path = dir.join(&file_name);
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&path);
        let mut file = match opened {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(source) = written {
            let _ = std::fs::remove_file(&path);
            return Err(StoreError::Io { path, source });
        }
        let canonical = path.canonicalize().map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        let uri = url::Url::from_file_path(&canonical)
            .map_err(|()| invalid(format!("{} has no file URI", canonical.display())))?
            .to_string();
        return Ok(Upload {
            path: canonical,
            uri,
            name: file_name,
        });
    }
    Err(invalid("no free file name".to_owned()))
}

fn safe_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME_CHARS)
        .collect();
    let cleaned = cleaned.trim_start_matches('.');
    if cleaned.is_empty() {
        "file".to_owned()
    } else {
        cleaned.to_owned()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn copies_are_private_and_never_overwrite() {
        let root = tempfile::tempdir().unwrap();
        let first = save_upload(root.path(), "s1", "../../etc/pass wd", b"one").unwrap();
        let second = save_upload(root.path(), "s1", "../../etc/pass wd", b"two").unwrap();
        let dir = root.path().canonicalize().unwrap().join("s1");
        assert_eq!(first.path, dir.join("1-pass_wd"));
        assert_eq!(second.path, dir.join("2-pass_wd"));
        assert_eq!(first.name, "1-pass_wd");
        assert_eq!(
            first.uri,
            url::Url::from_file_path(dir.join("1-pass_wd"))
                .unwrap()
                .to_string()
        );
        assert!(first.uri.starts_with("file:///"));
        assert_eq!(std::fs::read(&first.path).unwrap(), b"one");
        assert_eq!(std::fs::read(&second.path).unwrap(), b"two");
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&first.path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(safe_name(".hidden"), "hidden");
        assert_eq!(safe_name(""), "file");
        assert!(save_upload(root.path(), "../x", "a", b"").is_err());
    }
}
