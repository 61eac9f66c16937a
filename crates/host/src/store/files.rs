//! The store's files: the data directory, the database with its `-wal` and `-shm` companions,
//! and the lock file, all private to the person who runs formwork.
//!
//! Transcripts and answers are the person's own, so whatever formwork creates is theirs alone:
//! directories 0700, files 0600. The database file is created before SQLite opens it, because
//! SQLite gives `-wal` and `-shm` the mode of the database file. Files of an existing database
//! that others may read are narrowed to the owner's bits when it is opened; a directory that
//! already exists is left as it is (it may be one the person chose for more than formwork, and
//! the files in it are private either way).

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::error::StoreError;

/// The mode of a directory formwork creates.
const DIR_MODE: u32 = 0o700;

/// The mode of a file formwork creates.
pub(super) const FILE_MODE: u32 = 0o600;

/// Creates what is missing of the database's directory (every missing level 0700) and the
/// database file (0600), narrows the modes of the database's files that already exist, and
/// returns the database's canonical path: symlinks and `..` resolved, so that every way of
/// naming one database finds the same lock.
pub(super) fn prepare(database: &Path) -> Result<PathBuf, StoreError> {
    if let Some(parent) = database
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(parent)
            .map_err(io_error(parent))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(FILE_MODE)
        .open(database)
        .map_err(io_error(database))?;
    let canonical = database.canonicalize().map_err(io_error(database))?;
    for suffix in ["", "-wal", "-shm"] {
        make_private(&with_suffix(&canonical, suffix));
    }
    Ok(canonical)
}

/// `path` with `suffix` appended to its file name (`formwork.db` → `formwork.db-wal`).
pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Takes group and other bits off `path` if it exists and has any. A file formwork cannot
/// change (owned by someone else) is reported and left: opening it will tell whether it is
/// usable at all.
pub(super) fn make_private(path: &Path) {
    let Ok(metadata) = std::fs::metadata(path) else {
        return;
    };
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return;
    }
    let narrowed = mode & 0o700;
    match std::fs::set_permissions(path, Permissions::from_mode(narrowed)) {
        Ok(()) => tracing::warn!(
            target: "formwork::store",
            path = %path.display(),
            "others could read this file of the formwork database; its mode went from {mode:o} to {narrowed:o}"
        ),
        Err(err) => tracing::warn!(
            target: "formwork::store",
            path = %path.display(),
            %err,
            "others can read this file of the formwork database (mode {mode:o}) and formwork cannot change that"
        ),
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
