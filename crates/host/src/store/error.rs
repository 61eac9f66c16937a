//! Errors of the persistence layer, of both engines.

use std::path::PathBuf;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file exists but is not a SQLite database, or is damaged.
    #[error(
        "the formwork database {} is corrupt or not a SQLite database ({source}); \
         move it away to start afresh",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's word.
        source: rusqlite::Error,
    },
    /// The database file could not be opened, read or set up.
    #[error("cannot open the formwork database {}: {source}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// SQLite's word.
        source: rusqlite::Error,
    },
    /// A file or folder next to the database could not be created or opened.
    #[error("cannot open {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS's word.
        source: std::io::Error,
    },
    /// Another formwork process has the database open.
    #[error(
        "the formwork database {} is in use by another formwork process (lock file {})",
        path.display(),
        lock.display()
    )]
    Locked {
        /// The database file.
        path: PathBuf,
        /// The lock file held by the other process.
        lock: PathBuf,
    },
    /// SQLite could not put the database in write-ahead-log mode (e.g. a network file system).
    #[error(
        "the formwork database {} cannot use write-ahead logging (journal mode stays {mode:?}); \
         put the data directory on a local disk",
        path.display()
    )]
    NoWal {
        /// The database file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// The database was written by a newer formwork.
    #[error(
        "the formwork database {} has schema version {found}, newer than the {supported} this \
         formwork understands; upgrade formwork",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The version in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// Neither `FORMWORK_DATA_DIR` nor a user data directory is available.
    #[error("no data directory: set FORMWORK_DATA_DIR or pass --data-dir")]
    NoDataDir,
    /// The record a write refers to does not exist.
    #[error("{kind} {id:?} does not exist")]
    NotFound {
        /// `session`, `invocation`, `form` or `approval`.
        kind: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A record with this id exists already.
    #[error("{kind} {id:?} exists already")]
    AlreadyExists {
        /// `session`, `invocation`, `form` or `approval`.
        kind: &'static str,
        /// The id.
        id: String,
    },
    /// The record has already ended; its first ending stands.
    #[error("{kind} {id:?} is already {status}")]
    AlreadyResolved {
        /// `invocation`, `form` or `approval`.
        kind: &'static str,
        /// The id.
        id: String,
        /// How it ended.
        status: &'static str,
    },
    /// A `CallToolResult` handed to [`ToolResult::from_json`](super::ToolResult::from_json) is
    /// not a JSON object of the expected shape.
    #[error("invalid tool result: {0}")]
    ToolResult(#[source] serde_json::Error),
    /// A stored column holds a value this build does not know.
    #[error("the database holds {value:?} in {column}, which this formwork does not know")]
    UnknownValue {
        /// `table.column`.
        column: &'static str,
        /// What was found.
        value: String,
    },
    /// A stored JSON column no longer parses.
    #[error("the database holds invalid JSON in {column}: {source}")]
    StoredJson {
        /// `table.column`.
        column: &'static str,
        /// The parser's word.
        source: serde_json::Error,
    },
    /// The transaction carrying this write did not commit, so the write is not stored.
    #[error("the write was not committed: {0}")]
    Commit(String),
    /// The PostgreSQL server could not be reached or refused the connection.
    #[error("cannot connect to the formwork database {database}: {source}")]
    Connect {
        /// The database's URL, without its password.
        database: String,
        /// The client's word.
        source: tokio_postgres::Error,
    },
    /// The PostgreSQL database was migrated by a newer formwork.
    #[error(
        "the formwork database {database} has schema version {found}, newer than the {supported} \
         this formwork understands on PostgreSQL; upgrade formwork"
    )]
    PostgresSchemaTooNew {
        /// The database's URL, without its password.
        database: String,
        /// The version in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The PostgreSQL connection pool failed.
    #[error("database connection pool: {0}")]
    Pool(String),
    /// Any other PostgreSQL error.
    #[error("database error: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// Any other SQLite error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The store has been closed (or its writer thread is gone).
    #[error("the store is closed")]
    Closed,
}

impl StoreError {
    /// Classifies an error met while opening `path`.
    pub(super) fn opening(path: PathBuf, source: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match source.sqlite_error_code() {
            Some(NotADatabase | DatabaseCorrupt) => StoreError::Corrupt { path, source },
            _ => StoreError::Open { path, source },
        }
    }
}

/// Whether `error` is a primary-key or unique violation, i.e. the id exists already.
pub(super) fn is_duplicate(error: &rusqlite::Error) -> bool {
    const SQLITE_CONSTRAINT_PRIMARYKEY: i32 = 1555;
    const SQLITE_CONSTRAINT_UNIQUE: i32 = 2067;
    matches!(
        error,
        rusqlite::Error::SqliteFailure(inner, _)
            if inner.extended_code == SQLITE_CONSTRAINT_PRIMARYKEY
                || inner.extended_code == SQLITE_CONSTRAINT_UNIQUE
    )
}
