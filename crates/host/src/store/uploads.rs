//! Files the person adds to a resource picker (`x-openai-input` with `userOptions`): copied into
//! `uploads/<session>/` beside the database, private like the database's own files, and named
//! to the plugin by the `file://` URI of the copy.

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::error::StoreError;
use super::files::FILE_MODE;

/// The directory, beside the database, that holds the uploads (one folder per session).
pub const UPLOADS_DIR: &str = "uploads";

/// The largest file accepted, in bytes.
pub const MAX_UPLOAD_BYTES: usize = 32 * 1024 * 1024;

/// The longest file name kept from the person's (the rest is cut).
const MAX_NAME_CHARS: usize = 80;

/// How long an upload is kept once it was saved or last named in an answer.
pub const UPLOAD_KEPT_FOR: Duration = Duration::from_secs(7 * 24 * 60 * 60);

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

/// Deletes the uploads under `root` (`<root>/<session>/<file>`) unused for `kept_for` at `now`
/// (their modification time, which [`mark_upload_used`] moves), and the session folders left
/// empty. Returns how many files went; what cannot be read or removed is left.
pub fn remove_stale_uploads(root: &Path, kept_for: Duration, now: SystemTime) -> usize {
    let Some(cutoff) = now.checked_sub(kept_for) else {
        return 0;
    };
    let Ok(folders) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for folder in folders.flatten() {
        let folder = folder.path();
        let Ok(files) = std::fs::read_dir(&folder) else {
            continue;
        };
        for file in files.flatten() {
            let stale = file
                .metadata()
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| modified < cutoff);
            if stale && std::fs::remove_file(file.path()).is_ok() {
                removed += 1;
            }
        }
        // Only an empty folder goes.
        let _ = std::fs::remove_dir(&folder);
    }
    removed
}

/// Marks the upload at `uri` (a `file://` URI of a copy) used now, so it is kept another
/// [`UPLOAD_KEPT_FOR`].
pub fn mark_upload_used(uri: &str) {
    let Some(path) = url::Url::parse(uri)
        .ok()
        .and_then(|url| url.to_file_path().ok())
    else {
        return;
    };
    if let Ok(file) = OpenOptions::new().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
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

    #[test]
    fn uploads_unused_for_a_week_are_removed_with_their_empty_folders() {
        let root = tempfile::tempdir().unwrap();
        let old = save_upload(root.path(), "s1", "old.txt", b"old").unwrap();
        let used = save_upload(root.path(), "s2", "used.txt", b"used").unwrap();
        let week_ago = SystemTime::now() - UPLOAD_KEPT_FOR - Duration::from_secs(60);
        for upload in [&old, &used] {
            let file = OpenOptions::new().append(true).open(&upload.path).unwrap();
            file.set_modified(week_ago).unwrap();
        }
        // Named in an answer since: kept another week.
        mark_upload_used(&used.uri);
        let removed = remove_stale_uploads(root.path(), UPLOAD_KEPT_FOR, SystemTime::now());
        assert_eq!(removed, 1);
        assert!(!old.path.exists());
        assert!(!root.path().join("s1").exists(), "the empty folder stays");
        assert!(used.path.exists());
        // A week on, unused, it goes too.
        let later = SystemTime::now() + UPLOAD_KEPT_FOR + Duration::from_secs(60);
        assert_eq!(remove_stale_uploads(root.path(), UPLOAD_KEPT_FOR, later), 1);
        assert!(!root.path().join("s2").exists());
    }
}
