//! The lock file that keeps a second formwork process off a database it would disturb: opening
//! the store cancels every pending form, which must never hit the forms of a live host.
//!
//! `flock` on `<database>.lock`, not on the database itself, so it never meets SQLite's own
//! POSIX locks. The kernel drops the lock when the process dies, `kill -9` included.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use super::error::StoreError;

/// Held for as long as the store is open.
#[derive(Debug)]
pub(super) struct InstanceLock {
    _file: Flock<File>,
}

/// Takes the lock for `database`, or says which process-wide lock file is taken.
pub(super) fn acquire(database: &Path) -> Result<InstanceLock, StoreError> {
    let lock = lock_path(database);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .map_err(|source| StoreError::Io {
            path: lock.clone(),
            source,
        })?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(file) => Ok(InstanceLock { _file: file }),
        Err((_, Errno::EWOULDBLOCK)) => Err(StoreError::Locked {
            path: database.to_path_buf(),
            lock,
        }),
        Err((_, errno)) => Err(StoreError::Io {
            path: lock,
            source: errno.into(),
        }),
    }
}

fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}
