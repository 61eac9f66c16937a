//! The SQLite engine: an embedded database file, the default.
//!
//! - **One writer.** A single thread owns the writing connection and groups whatever is queued
//!   into one transaction (group commit); every async write returns only after its transaction
//!   committed. Reads use a second connection, which WAL lets run beside the writer.
//! - **Durable.** WAL with `synchronous = FULL`: an acknowledged write survives `kill -9` at any
//!   moment (tested) and a power loss. A process kill alone would not need FULL, since the OS
//!   keeps written pages; FULL costs one WAL sync per batch, not per write.
//! - **Restart.** Opening cancels, with reason [`HOST_STOPPED`](super::HOST_STOPPED), every form
//!   and approval still pending and every invocation still running: their host is gone. A lock
//!   file beside the database's canonical path keeps a second host process from opening (and
//!   so cancelling) a live database, however it names the file.

mod lock;
pub(crate) mod schema;
pub(crate) mod sql;
mod writer;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::error::StoreError;
use super::files;
use super::records::{Recovery, Stats};
use writer::{ClosureJob, Message};

/// An open SQLite database: the writer thread's queue and the reading connection.
#[derive(Debug)]
pub(crate) struct Sqlite {
    sender: mpsc::Sender<Message>,
    /// `None` for in-memory stores, whose reads go through the writer (a second connection
    /// would see a different database).
    reader: Option<Arc<Mutex<Option<Connection>>>>,
}

impl Sqlite {
    /// Opens (creating if needed) the database at `path`, migrates it, cancels what the previous
    /// host left pending and starts the writer thread. Blocking.
    pub(crate) fn open(path: &Path, stats: Arc<Stats>) -> Result<(Sqlite, Recovery), StoreError> {
        let database = files::prepare(path)?;
        let lock = lock::acquire(&database, path)?;
        let opening = |source| StoreError::opening(path.to_path_buf(), source);
        let mut writer = Connection::open(&database).map_err(opening)?;
        schema::configure_writer(&writer, Some(path))?;
        schema::migrate(&mut writer, path)?;
        let recovery = schema::recover(&mut writer, super::inputs::now()).map_err(opening)?;
        let reader = Connection::open(&database).map_err(opening)?;
        schema::configure_reader(&reader).map_err(opening)?;
        if recovery != Recovery::default() {
            tracing::info!(?recovery, path = %path.display(), "cancelled what the last host left pending");
        }
        let sqlite = Self::start(Some(path), writer, Some(lock), Some(reader), stats)?;
        Ok((sqlite, recovery))
    }

    /// A private database that lives as long as the engine.
    pub(crate) fn open_in_memory(stats: Arc<Stats>) -> Result<Sqlite, StoreError> {
        let mut writer = Connection::open_in_memory()?;
        schema::configure_writer(&writer, None)?;
        schema::migrate(&mut writer, Path::new(":memory:"))?;
        Self::start(None, writer, None, None, stats)
    }

    fn start(
        path: Option<&Path>,
        writer: Connection,
        lock: Option<lock::InstanceLock>,
        reader: Option<Connection>,
        stats: Arc<Stats>,
    ) -> Result<Sqlite, StoreError> {
        let (sender, _thread) =
            writer::spawn(writer, lock, stats).map_err(|source| StoreError::Io {
                path: path.map(Path::to_path_buf).unwrap_or_default(),
                source,
            })?;
        Ok(Sqlite {
            sender,
            reader: reader.map(|reader| Arc::new(Mutex::new(Some(reader)))),
        })
    }

    /// Commits what is queued, closes the database and releases its lock file.
    pub(crate) async fn close(&self) {
        if let Some(reader) = &self.reader {
            reader.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
        let (done, closed) = oneshot::channel();
        if self.sender.send(Message::Close(done)).await.is_ok() {
            // An error means the writer is gone already, which is what we wait for.
            let _ = closed.await;
        }
    }

    /// Queues `op` for the writer and waits until its transaction committed. A write once
    /// queued is carried out even if the caller stops waiting.
    pub(crate) async fn write<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send(Message::Job(Box::new(ClosureJob { op, reply })))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `op` on a consistent snapshot, off the async threads.
    pub(crate) async fn read<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let Some(reader) = &self.reader else {
            return self.write(op).await;
        };
        let reader = Arc::clone(reader);
        tokio::task::spawn_blocking(move || {
            let guard = reader.lock().unwrap_or_else(PoisonError::into_inner);
            let conn = guard.as_ref().ok_or(StoreError::Closed)?;
            let snapshot = conn.unchecked_transaction()?;
            let value = op(&snapshot)?;
            snapshot.commit()?;
            Ok(value)
        })
        .await
        .map_err(|_| StoreError::Closed)?
    }
}
