//! The lock file that keeps a second formwork process off a database it would disturb: opening
//! the store cancels every pending form, which must never hit the forms of a live host.
//!
//! `flock` on `<database>.lock`, not on the database itself, so it never meets SQLite's own
//! POSIX locks. The kernel drops the lock when the process dies, `kill -9` included. The lock
//! file sits beside the database's canonical path, so a database reached through a symlink
//! finds the same lock as one opened directly.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::store::error::StoreError;
use crate::store::files;

/// Held for as long as the store is open.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    _file: Flock<File>,
}

/// Takes the lock for the database at the canonical path `database`, or says which lock file
/// is taken; `shown` is the database as the caller named it, for the error.
pub(crate) fn acquire(database: &Path, shown: &Path) -> Result<InstanceLock, StoreError> {
    let lock = files::with_suffix(database, ".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(files::FILE_MODE)
        .open(&lock)
        .map_err(|source| StoreError::Io {
            path: lock.clone(),
            source,
        })?;
    files::make_private(&lock);
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(file) => Ok(InstanceLock { _file: file }),
        Err((_, Errno::EWOULDBLOCK)) => Err(StoreError::Locked {
            path: shown.to_path_buf(),
            lock,
        }),
        Err((_, errno)) => Err(StoreError::Io {
            path: lock,
            source: errno.into(),
        }),
    }
}
