//! Persistence: sessions, transcripts, tool invocations, forms and approvals in an embedded
//! SQLite database, so a conversation survives a restart of the host.
//!
//! - **One writer.** A single thread owns the writing connection and groups whatever is queued
//!   into one transaction (group commit); every async write returns only after its transaction
//!   committed. Reads use a second connection, which WAL lets run beside the writer.
//! - **Durable.** WAL with `synchronous = FULL`: an acknowledged write survives `kill -9` at any
//!   moment (tested) and a power loss. A process kill alone would not need FULL, since the OS
//!   keeps written pages; FULL costs one WAL sync per batch, not per write.
//! - **Verbatim JSON.** JSON goes in as [`RawValue`] and is stored as that text, so key order
//!   and spelling come back byte for byte; `content`, `structuredContent` and `_meta` of a tool
//!   result are separate columns.
//! - **Nothing per session in memory.** Every write is a short job; nothing is cached between
//!   them, so ten thousand pending forms cost the host no memory here.
//! - **Restart.** Opening the store cancels, with reason [`HOST_STOPPED`], every form and
//!   approval still pending and every invocation still running: their host is gone. A lock
//!   file beside the database's canonical path keeps a second host process from opening (and
//!   so cancelling) a live database, however it names the file.
//! - **Private.** Directories the store creates are 0700, its files 0600; an existing database
//!   readable by others is narrowed at open (`files.rs`).
//!
//! **Invariant:** no table holds re-serialised JSON; every JSON column is the caller's text.

mod error;
mod files;
mod lock;
mod records;
mod schema;
mod sql;
mod uploads;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

pub use error::StoreError;
pub use records::{
    AppRecord, AppStatePart, AppStateRecord, ApprovalChoice, ApprovalRecord, ApprovalResolution,
    ApprovalStatus, EntryDetail, EntryKind, FormRecord, FormResolution, FormStatus, HOST_STOPPED,
    InvocationOutcome, InvocationRecord, InvocationStatus, NewApproval, NewForm, NewInvocation,
    PlainEntryKind, Recovery, RoundRecord, SessionRecord, StoreStats, ToolResult, TranscriptEntry,
    UnixMillis,
};
pub use schema::SCHEMA_VERSION;
pub use uploads::{
    MAX_UPLOAD_BYTES, UPLOAD_KEPT_FOR, UPLOADS_DIR, Upload, mark_upload_used, remove_stale_uploads,
    save_upload,
};

use writer::{ClosureJob, Message, Stats};

/// The environment variable naming the data directory, overriding the user's data dir.
pub const DATA_DIR_ENV: &str = "FORMWORK_DATA_DIR";

/// The database's file name inside the data directory.
pub const DATABASE_FILE: &str = "formwork.db";

/// A handle to the database; clones share the same writer thread and reader connection.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: Option<PathBuf>,
    sender: mpsc::Sender<Message>,
    /// `None` for in-memory stores, whose reads go through the writer (a second connection
    /// would see a different database).
    reader: Option<Arc<Mutex<Option<Connection>>>>,
    recovery: Recovery,
    stats: Arc<Stats>,
}

impl Store {
    /// Opens (creating if needed, with its directories) the database at `path`, migrates it,
    /// cancels what the previous host left pending (see [`Store::recovery`]) and starts the
    /// writer thread. Fails with [`StoreError::Locked`] while another store has it open (in this
    /// process or another), whatever path that one used.
    ///
    /// Blocking: call it at startup or from `spawn_blocking`.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        let database = files::prepare(&path)?;
        let lock = lock::acquire(&database, &path)?;
        let opening = |source| StoreError::opening(path.clone(), source);
        let mut writer = Connection::open(&database).map_err(opening)?;
        schema::configure_writer(&writer, Some(&path))?;
        schema::migrate(&mut writer, &path)?;
        let recovery = schema::recover(&mut writer, sql::now()).map_err(opening)?;
        let reader = Connection::open(&database).map_err(opening)?;
        schema::configure_reader(&reader).map_err(opening)?;
        if recovery != Recovery::default() {
            tracing::info!(?recovery, path = %path.display(), "cancelled what the last host left pending");
        }
        let store = Self::start(Some(path), writer, Some(lock), Some(reader), recovery)?;
        store.sweep_uploads_while_open();
        Ok(store)
    }

    /// Removes stale uploads now, and every hour while the store is open (a workbench may run
    /// for weeks).
    fn sweep_uploads_while_open(&self) {
        let Some(root) = self.uploads_dir() else {
            return;
        };
        let sweep = move |root: &Path| {
            let removed = remove_stale_uploads(root, UPLOAD_KEPT_FOR, std::time::SystemTime::now());
            if removed > 0 {
                tracing::info!(removed, root = %root.display(), "removed uploads unused for 7 days");
            }
        };
        sweep(&root);
        let open = Arc::downgrade(&self.inner);
        let _ = std::thread::Builder::new()
            .name("formwork-uploads".to_owned())
            .spawn(move || {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(60 * 60));
                    if open.upgrade().is_none() {
                        return;
                    }
                    sweep(&root);
                }
            });
    }

    /// A private database that lives as long as the store; for tests.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let mut writer = Connection::open_in_memory()?;
        schema::configure_writer(&writer, None)?;
        schema::migrate(&mut writer, Path::new(":memory:"))?;
        Self::start(None, writer, None, None, Recovery::default())
    }

    fn start(
        path: Option<PathBuf>,
        writer: Connection,
        lock: Option<lock::InstanceLock>,
        reader: Option<Connection>,
        recovery: Recovery,
    ) -> Result<Store, StoreError> {
        let stats = Arc::new(Stats::default());
        let (sender, _thread) =
            writer::spawn(writer, lock, Arc::clone(&stats)).map_err(|source| StoreError::Io {
                path: path.clone().unwrap_or_default(),
                source,
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                path,
                sender,
                reader: reader.map(|reader| Arc::new(Mutex::new(Some(reader)))),
                recovery,
                stats,
            }),
        })
    }

    /// Where the database lives by default: `$FORMWORK_DATA_DIR/formwork.db` if that is set,
    /// else `<user data dir>/formwork/formwork.db` (`~/.local/share` on Linux, `~/Library/
    /// Application Support` on macOS).
    pub fn default_path() -> Result<PathBuf, StoreError> {
        Ok(Self::path_in(&Self::default_data_dir()?))
    }

    /// The data directory by default: `$FORMWORK_DATA_DIR` if that is set, else
    /// `<user data dir>/formwork`. It also holds the OAuth credentials file
    /// ([`crate::CREDENTIALS_FILE`]).
    pub fn default_data_dir() -> Result<PathBuf, StoreError> {
        if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|dir| !dir.is_empty()) {
            return Ok(PathBuf::from(dir));
        }
        let data = dirs::data_dir().ok_or(StoreError::NoDataDir)?;
        Ok(data.join("formwork"))
    }

    /// The database file inside a data directory (what `--data-dir DIR` means).
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join(DATABASE_FILE)
    }

    /// The database file; `None` for an in-memory store.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Where the person's added files are copied: `uploads/` beside the database; `None` for
    /// an in-memory store, which keeps no files.
    pub fn uploads_dir(&self) -> Option<PathBuf> {
        let database = self.path()?;
        Some(database.parent().unwrap_or(Path::new("")).join(UPLOADS_DIR))
    }

    /// What opening found unfinished and cancelled.
    pub fn recovery(&self) -> Recovery {
        self.inner.recovery
    }

    /// How many writes and transactions the writer has carried out.
    pub fn stats(&self) -> StoreStats {
        self.inner.stats.snapshot()
    }

    /// Commits what is queued, closes the database and releases its lock file; later calls on
    /// any clone fail with [`StoreError::Closed`]. Waits until the file is free to reopen.
    pub async fn close(&self) {
        if let Some(reader) = &self.inner.reader {
            reader.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
        let (done, closed) = oneshot::channel();
        if self.inner.sender.send(Message::Close(done)).await.is_ok() {
            // An error means the writer is gone already, which is what we wait for.
            let _ = closed.await;
        }
    }

    // ---- sessions ----

    /// Creates a session; fails with [`StoreError::AlreadyExists`] if the id is taken.
    pub async fn create_session(
        &self,
        id: &str,
        title: Option<&str>,
    ) -> Result<SessionRecord, StoreError> {
        let (id, title) = (id.to_owned(), title.map(str::to_owned));
        self.write(move |conn| sql::insert_session(conn, &id, title.as_deref()))
            .await
    }

    /// Deletes a session and everything stored of it: transcript, calls, forms, approvals, app
    /// state and the model's items. Deleting one that is not there does nothing.
    pub async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        self.write(move |conn| sql::delete_session(conn, &id)).await
    }

    /// Renames a session.
    pub async fn set_session_title(&self, id: &str, title: Option<&str>) -> Result<(), StoreError> {
        let (id, title) = (id.to_owned(), title.map(str::to_owned));
        self.write(move |conn| sql::set_session_title(conn, &id, title.as_deref()))
            .await
    }

    /// All sessions, most recently written first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        self.read(sql::list_sessions).await
    }

    /// One session.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| sql::session(conn, &id)).await
    }

    // ---- transcript ----

    /// Appends a message or diagnostic to the session's transcript; returns its `seq`.
    pub async fn append_entry(
        &self,
        session: &str,
        kind: PlainEntryKind,
        payload: &RawValue,
    ) -> Result<u64, StoreError> {
        let (session, payload) = (session.to_owned(), payload.get().to_owned());
        self.write(move |conn| sql::append_entry(conn, &session, kind.into(), None, &payload))
            .await
    }

    /// The session's transcript in order, each reference entry joined with its invocation, form
    /// or approval as it stands now; [`StoreError::NotFound`] if there is no such session.
    pub async fn transcript(&self, session: &str) -> Result<Vec<TranscriptEntry>, StoreError> {
        let session = session.to_owned();
        self.read(move |conn| {
            sql::transcript(conn, &session)?.ok_or(StoreError::NotFound {
                kind: "session",
                id: session,
            })
        })
        .await
    }

    // ---- invocations ----

    /// Records a tool call as `running` and appends its transcript entry; returns the entry's
    /// `seq`.
    pub async fn begin_invocation(&self, invocation: NewInvocation<'_>) -> Result<u64, StoreError> {
        let input = sql::InvocationInput {
            id: invocation.id.to_owned(),
            session: invocation.session.to_owned(),
            server: invocation.server.to_owned(),
            tool: invocation.tool.to_owned(),
            arguments: invocation.arguments.map(|raw| raw.get().to_owned()),
            asked_by: invocation.asked_by.map(str::to_owned),
        };
        self.write(move |conn| sql::begin_invocation(conn, &input))
            .await
    }

    /// Records how a running tool call ended; [`StoreError::AlreadyResolved`] if it had ended.
    pub async fn finish_invocation(
        &self,
        id: &str,
        outcome: InvocationOutcome<'_>,
    ) -> Result<(), StoreError> {
        let text = |raw: Option<&RawValue>| raw.map(|raw| raw.get().to_owned());
        let end = match outcome {
            InvocationOutcome::Completed(result) => sql::InvocationEnd {
                status: InvocationStatus::Completed,
                content: text(result.content),
                structured_content: text(result.structured_content),
                meta: text(result.meta),
                is_error: result.is_error,
                error: None,
            },
            InvocationOutcome::Failed { error } => sql::InvocationEnd {
                status: InvocationStatus::Failed,
                content: None,
                structured_content: None,
                meta: None,
                is_error: false,
                error: Some(error.to_owned()),
            },
            InvocationOutcome::Cancelled { reason } => sql::InvocationEnd {
                status: InvocationStatus::Cancelled,
                content: None,
                structured_content: None,
                meta: None,
                is_error: false,
                error: Some(reason.to_owned()),
            },
        };
        let id = id.to_owned();
        self.write(move |conn| sql::finish_invocation(conn, &id, &end))
            .await
    }

    /// One invocation.
    pub async fn invocation(&self, id: &str) -> Result<Option<InvocationRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| sql::invocation(conn, &id)).await
    }

    /// Records an `input_required` round of a running tool call: a transcript entry of kind
    /// [`EntryKind::InvocationRound`] referring to the call.
    pub async fn record_round(
        &self,
        invocation: &str,
        round: u32,
        asked: &[String],
        request_state: bool,
    ) -> Result<(), StoreError> {
        let invocation = invocation.to_owned();
        let asked = asked.to_vec();
        self.write(move |conn| sql::record_round(conn, &invocation, round, &asked, request_state))
            .await
    }

    /// Records the UI resource (MCP App) a tool call declared: a transcript entry of kind
    /// [`EntryKind::InvocationApp`] referring to the call.
    pub async fn record_app(&self, invocation: &str, app: AppRecord) -> Result<(), StoreError> {
        let invocation = invocation.to_owned();
        self.write(move |conn| sql::record_app(conn, &invocation, &app))
            .await
    }

    /// Replaces one part of the state an invocation's app left behind (`value`: JSON text,
    /// kept as it is).
    pub async fn save_app_state(
        &self,
        invocation: &str,
        part: AppStatePart,
        value: String,
    ) -> Result<(), StoreError> {
        let invocation = invocation.to_owned();
        self.write(move |conn| sql::save_app_state(conn, &invocation, part, &value))
            .await
    }

    /// The states the apps of a session's invocations left behind.
    pub async fn app_states(&self, session: &str) -> Result<Vec<AppStateRecord>, StoreError> {
        let session = session.to_owned();
        self.read(move |conn| sql::app_states(conn, &session)).await
    }

    /// Records the Codex thread `session` runs in.
    pub async fn set_codex_thread(&self, session: &str, thread: &str) -> Result<(), StoreError> {
        let session = session.to_owned();
        let thread = thread.to_owned();
        self.write(move |conn| sql::set_codex_thread(conn, &session, &thread))
            .await
    }

    /// Appends items of the model's conversation of `session` (each JSON text, kept as is).
    pub async fn append_model_items(
        &self,
        session: &str,
        items: Vec<String>,
    ) -> Result<(), StoreError> {
        let session = session.to_owned();
        self.write(move |conn| sql::append_model_items(conn, &session, &items))
            .await
    }

    /// The items of the model's conversation of `session`, in order.
    pub async fn model_items(&self, session: &str) -> Result<Vec<String>, StoreError> {
        let session = session.to_owned();
        self.read(move |conn| sql::model_items(conn, &session))
            .await
    }

    /// The `input_required` rounds of a tool call, in order.
    pub async fn rounds(&self, invocation: &str) -> Result<Vec<RoundRecord>, StoreError> {
        let invocation = invocation.to_owned();
        self.read(move |conn| sql::rounds(conn, &invocation)).await
    }

    // ---- forms ----

    /// Records a form as `pending` and appends its transcript entry; returns the entry's `seq`.
    pub async fn insert_form(&self, form: NewForm<'_>) -> Result<u64, StoreError> {
        let input = sql::FormInput {
            id: form.id.to_owned(),
            session: form.session.to_owned(),
            invocation: form.invocation.map(str::to_owned),
            plugin: form.plugin.to_owned(),
            request: form.request.get().to_owned(),
            render: form.render.map(|raw| raw.get().to_owned()),
        };
        self.write(move |conn| sql::insert_form(conn, &input)).await
    }

    /// Records how a pending form ended; [`StoreError::AlreadyResolved`] if it had ended (the
    /// first ending stands, e.g. a cancellation that beat a late answer).
    pub async fn resolve_form(
        &self,
        id: &str,
        resolution: FormResolution<'_>,
    ) -> Result<(), StoreError> {
        let end = match resolution {
            FormResolution::Accepted { content } => sql::FormEnd {
                status: FormStatus::Accepted,
                content: content.map(|raw| raw.get().to_owned()),
                reason: None,
            },
            FormResolution::Declined { reason } => sql::FormEnd {
                status: FormStatus::Declined,
                content: None,
                reason: reason.map(str::to_owned),
            },
            FormResolution::Cancelled { reason } => sql::FormEnd {
                status: FormStatus::Cancelled,
                content: None,
                reason: Some(reason.to_owned()),
            },
        };
        let id = id.to_owned();
        self.write(move |conn| sql::resolve_form(conn, &id, &end))
            .await
    }

    /// One form.
    pub async fn form(&self, id: &str) -> Result<Option<FormRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| sql::form(conn, &id)).await
    }

    // ---- approvals ----

    /// Records an approval card as `pending` and appends its transcript entry; returns the
    /// entry's `seq`.
    pub async fn insert_approval(&self, approval: NewApproval<'_>) -> Result<u64, StoreError> {
        let input = sql::ApprovalInput {
            id: approval.id.to_owned(),
            session: approval.session.to_owned(),
            invocation: approval.invocation.map(str::to_owned),
            server: approval.server.to_owned(),
            tool: approval.tool.to_owned(),
            rendering: approval.rendering.get().to_owned(),
        };
        self.write(move |conn| sql::insert_approval(conn, &input))
            .await
    }

    /// Records how a pending approval ended; [`StoreError::AlreadyResolved`] if it had ended.
    pub async fn resolve_approval(
        &self,
        id: &str,
        resolution: ApprovalResolution<'_>,
    ) -> Result<(), StoreError> {
        let end = match resolution {
            ApprovalResolution::Answered { choice, reason } => sql::ApprovalEnd {
                status: ApprovalStatus::Answered,
                choice: Some(choice),
                reason: reason.map(str::to_owned),
            },
            ApprovalResolution::Cancelled { reason } => sql::ApprovalEnd {
                status: ApprovalStatus::Cancelled,
                choice: None,
                reason: Some(reason.to_owned()),
            },
        };
        let id = id.to_owned();
        self.write(move |conn| sql::resolve_approval(conn, &id, &end))
            .await
    }

    /// One approval card.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| sql::approval(conn, &id)).await
    }

    // ---- plumbing ----

    /// Queues `op` for the writer and waits until its transaction committed. A write once
    /// queued is carried out even if the caller stops waiting.
    async fn write<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.inner
            .sender
            .send(Message::Job(Box::new(ClosureJob { op, reply })))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `op` on a consistent snapshot, off the async threads.
    async fn read<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let Some(reader) = &self.inner.reader else {
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
