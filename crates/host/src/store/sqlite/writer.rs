//! The writer thread: the only code that writes to the database.
//!
//! Callers queue jobs on a bounded channel. The thread takes everything queued (up to
//! [`MAX_BATCH`]) and runs it in one transaction, each job inside its own savepoint so a failing
//! job undoes only itself; then it commits once and only then answers every job of the batch.
//! Under load, a thousand writers waiting at once cost a handful of commits (and WAL syncs), not a
//! thousand. Nothing is kept between batches, so memory does not grow with the number of
//! sessions or pending forms.

use std::sync::Arc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use super::lock::InstanceLock;
use crate::store::error::StoreError;
use crate::store::records::Stats;

/// Most jobs committed in one transaction; bounds the time the first job of a batch waits.
const MAX_BATCH: usize = 1024;

/// Jobs that may wait in the queue before callers wait to enqueue.
pub(crate) const QUEUE_CAPACITY: usize = 4096;

/// A unit of work queued for the writer thread.
pub(crate) enum Message {
    /// Run in the next transaction.
    Job(Box<dyn Job>),
    /// Commit what came before, close the connection, release the lock, then answer.
    Close(oneshot::Sender<()>),
}

/// A write (or, for in-memory stores, a read) run by the writer thread.
pub(crate) trait Job: Send {
    /// Runs inside the open transaction; the returned answer is sent once the outcome of the
    /// commit is known.
    fn run(self: Box<Self>, conn: &Connection) -> Box<dyn Answer>;
    /// The transaction could not even start: answer with the error.
    fn fail(self: Box<Self>, error: String);
}

/// The pending answer of a job that ran.
pub(crate) trait Answer: Send {
    /// Sends the job's own result if the commit succeeded, else the commit's error.
    fn send(self: Box<Self>, commit: Result<(), &str>);
}

/// A job made of a closure and the channel its result goes back on.
pub(crate) struct ClosureJob<T, F> {
    pub(crate) op: F,
    pub(crate) reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T, F> Job for ClosureJob<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Box<dyn Answer> {
        let result = in_savepoint(conn, self.op);
        Box::new(ClosureAnswer {
            result,
            reply: self.reply,
        })
    }

    fn fail(self: Box<Self>, error: String) {
        // The caller may have stopped waiting; the write simply did not happen.
        let _ = self.reply.send(Err(StoreError::Commit(error)));
    }
}

struct ClosureAnswer<T> {
    result: Result<T, StoreError>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<T: Send> Answer for ClosureAnswer<T> {
    fn send(self: Box<Self>, commit: Result<(), &str>) {
        let result = match (self.result, commit) {
            (Ok(value), Ok(())) => Ok(value),
            (Ok(_), Err(error)) => Err(StoreError::Commit(error.to_owned())),
            // A failed job rolled back to its savepoint; its own error says more.
            (Err(error), _) => Err(error),
        };
        let _ = self.reply.send(result);
    }
}

/// Starts the writer thread, which owns `conn` and `lock` until it ends.
pub(crate) fn spawn(
    conn: Connection,
    lock: Option<InstanceLock>,
    stats: Arc<Stats>,
) -> std::io::Result<(mpsc::Sender<Message>, JoinHandle<()>)> {
    let (sender, receiver) = mpsc::channel(QUEUE_CAPACITY);
    let handle = std::thread::Builder::new()
        .name("formwork-store-writer".to_owned())
        .spawn(move || run(conn, lock, receiver, &stats))?;
    Ok((sender, handle))
}

fn run(
    conn: Connection,
    lock: Option<InstanceLock>,
    mut receiver: mpsc::Receiver<Message>,
    stats: &Stats,
) {
    let mut closing = None;
    let mut batch: Vec<Box<dyn Job>> = Vec::new();
    while closing.is_none() {
        let Some(first) = receiver.blocking_recv() else {
            break;
        };
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Job(job) => batch.push(job),
                Message::Close(done) => {
                    closing = Some(done);
                    break;
                }
            }
            next = if batch.len() < MAX_BATCH {
                receiver.try_recv().ok()
            } else {
                None
            };
        }
        if !batch.is_empty() {
            commit_batch(&conn, std::mem::take(&mut batch), stats);
        }
    }
    // Jobs queued after a close are dropped unanswered, which their callers see as `Closed`.
    drop(receiver);
    if let Err((_, error)) = conn.close() {
        tracing::warn!(%error, "closing the formwork database");
    }
    drop(lock);
    if let Some(done) = closing {
        let _ = done.send(());
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Box<dyn Job>>, stats: &Stats) {
    let count = batch.len() as u64;
    if let Err(error) = conn.execute_batch("BEGIN IMMEDIATE") {
        let error = error.to_string();
        for job in batch {
            job.fail(error.clone());
        }
        return;
    }
    let mut answers = Vec::with_capacity(batch.len());
    let mut jobs = batch.into_iter();
    let mut aborted = None;
    for job in jobs.by_ref() {
        answers.push(job.run(conn));
        if conn.is_autocommit() {
            // Some errors (disk full, I/O) make SQLite roll the whole transaction back.
            aborted = Some("SQLite rolled the transaction back".to_owned());
            break;
        }
    }
    let commit = match aborted {
        Some(error) => Err(error),
        None => conn.execute_batch("COMMIT").map_err(|error| {
            let _ = conn.execute_batch("ROLLBACK");
            error.to_string()
        }),
    };
    stats.record(count, commit.is_ok());
    for answer in answers {
        answer.send(commit.as_ref().map(|_| ()).map_err(String::as_str));
    }
    if let Err(error) = &commit {
        for job in jobs {
            job.fail(error.clone());
        }
    }
}

/// Runs `op` so that its failure undoes only its own changes.
fn in_savepoint<T>(
    conn: &Connection,
    op: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.prepare_cached("SAVEPOINT job")?.execute([])?;
    match op(conn) {
        Ok(value) => {
            conn.prepare_cached("RELEASE job")?.execute([])?;
            Ok(value)
        }
        Err(error) => {
            conn.prepare_cached("ROLLBACK TO job")?.execute([])?;
            conn.prepare_cached("RELEASE job")?.execute([])?;
            Err(error)
        }
    }
}
