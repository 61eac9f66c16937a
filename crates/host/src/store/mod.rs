//! Persistence: sessions, transcripts, tool invocations, forms and approvals, so a conversation
//! survives a restart of the host. One contract, [`Store`], on two engines: an embedded SQLite
//! file (`sqlite/`, the default) and a PostgreSQL database that several hosts can share
//! (`postgres/`). Nothing outside this module knows which engine a store has.
//!
//! - **Committed before answered.** Every async write returns only after its transaction
//!   committed durably, on either engine: nothing reaches a plugin before its commit.
//! - **Verbatim JSON.** JSON goes in as [`RawValue`] and is stored as that text, so key order
//!   and spelling come back byte for byte; `content`, `structuredContent` and `_meta` of a tool
//!   result are separate columns.
//! - **Nothing per session in memory.** Every write is a short job; nothing is cached between
//!   them, so ten thousand pending forms cost the host no memory here.
//! - **Private.** Directories the store creates are 0700, its files 0600; an existing database
//!   readable by others is narrowed at open (`files.rs`).
//!
//! **Invariant:** no table holds re-serialised JSON; every JSON column is the caller's text.
//! **Invariant:** both engines pass the same store test suite (`tests/store/`), with the same
//! ids, order and errors.

mod error;
mod files;
mod inputs;
mod postgres;
mod records;
mod sqlite;
mod uploads;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;

pub use crate::store_url::{DEFAULT_PG_PORT, PgUrl, StoreUrl, StoreUrlError};
pub use error::StoreError;
pub use postgres::listen::StoreNotice;
pub use records::{
    AbandonedCall, AppRecord, AppStatePart, AppStateRecord, ApprovalChoice, ApprovalRecord,
    ApprovalResolution, ApprovalStatus, EntryDetail, EntryKind, FormRecord, FormResolution,
    FormStatus, HOST_STOPPED, InvocationOutcome, InvocationRecord, InvocationStatus, NewApproval,
    NewForm, NewInvocation, PlainEntryKind, Recovery, RoundRecord, SessionRecord, StoreStats,
    ToolResult, TranscriptEntry, UnixMillis,
};
pub use sqlite::schema::SCHEMA_VERSION;
pub use uploads::{
    MAX_UPLOAD_BYTES, UPLOAD_KEPT_FOR, UPLOADS_DIR, Upload, mark_upload_used, remove_stale_uploads,
    save_upload,
};

use inputs::{ApprovalEnd, ApprovalInput, FormEnd, FormInput, InvocationEnd, InvocationInput};
use postgres::Postgres;
use records::Stats;
use sqlite::Sqlite;

/// How many writes a store takes at once: the PostgreSQL store keeps as many connections, and
/// the host runs as many writers of sessions' events (`session/saving.rs`). SQLite's one
/// writer thread commits together what they queue.
pub(crate) const WRITES_AT_ONCE: usize = 16;

/// Runs one statement function of the same name on whichever engine the store has: `write`
/// commits before it returns, `read` sees a consistent snapshot.
macro_rules! on_engine {
    ($store:ident.$mode:ident($op:ident($($arg:expr),*))) => {
        match &$store.inner.engine {
            Engine::Sqlite(db) => db.$mode(move |conn| sqlite::sql::$op(conn, $($arg),*)).await,
            Engine::Postgres(db) => {
                on_engine!(@postgres $store, db, $mode, move |tx| Box::pin(async move {
                    postgres::sql::$op(tx, $($arg),*).await
                }))
            }
        }
    };
    (@postgres $store:ident, $db:ident, write, $op:expr) => {
        $db.write(&$store.inner.stats, $op).await
    };
    (@postgres $store:ident, $db:ident, read, $op:expr) => {
        $db.read($op).await
    };
}

/// The environment variable naming the data directory, overriding the user's data dir.
pub const DATA_DIR_ENV: &str = "FORMWORK_DATA_DIR";

/// The database's file name inside the data directory.
pub const DATABASE_FILE: &str = "formwork.db";

/// A handle to the database; clones share the same engine (writer thread and reader
/// connection, or connection pool).
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    engine: Engine,
    /// The SQLite file; `None` in memory and on PostgreSQL.
    path: Option<PathBuf>,
    /// Where added files are copied; `None` for an in-memory store.
    uploads: Option<PathBuf>,
    recovery: Recovery,
    stats: Arc<Stats>,
}

#[derive(Debug)]
enum Engine {
    Sqlite(Sqlite),
    Postgres(Postgres),
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
        let stats = Arc::new(Stats::default());
        let (sqlite, recovery) = Sqlite::open(&path, Arc::clone(&stats))?;
        let uploads = path.parent().unwrap_or(Path::new("")).join(UPLOADS_DIR);
        let store = Store {
            inner: Arc::new(Inner {
                engine: Engine::Sqlite(sqlite),
                path: Some(path),
                uploads: Some(uploads),
                recovery,
                stats,
            }),
        };
        store.sweep_uploads_while_open();
        Ok(store)
    }

    /// Opens the store at `url`: a SQLite file as [`Store::open`] does (off the async
    /// threads), or a PostgreSQL database, migrated if needed, whose added files go to
    /// `uploads/` under `data_dir`. On PostgreSQL nothing is cancelled at open (other hosts may
    /// share the database) and no lock file is taken.
    pub async fn connect(url: &StoreUrl, data_dir: &Path) -> Result<Store, StoreError> {
        Store::connect_with_lease(url, data_dir, Store::DEFAULT_LEASE).await
    }

    /// How long a running call's lease lasts on PostgreSQL unless said otherwise.
    pub const DEFAULT_LEASE: std::time::Duration = postgres::DEFAULT_LEASE;

    /// [`Store::connect`], with the lease of each running call on PostgreSQL: how long after
    /// this host stops renewing it another replica may take the call over (10 s by default).
    pub async fn connect_with_lease(
        url: &StoreUrl,
        data_dir: &Path,
        lease: std::time::Duration,
    ) -> Result<Store, StoreError> {
        match url {
            StoreUrl::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || Store::open(path))
                    .await
                    .map_err(|_| StoreError::Closed)?
            }
            StoreUrl::Postgres(url) => {
                let postgres = Postgres::connect(url, lease).await?;
                tracing::info!(database = %postgres.shown(), "the store is on PostgreSQL");
                let store = Store {
                    inner: Arc::new(Inner {
                        engine: Engine::Postgres(postgres),
                        path: None,
                        uploads: Some(data_dir.join(UPLOADS_DIR)),
                        recovery: Recovery::default(),
                        stats: Arc::default(),
                    }),
                };
                store.sweep_uploads_while_open();
                Ok(store)
            }
        }
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
        let stats = Arc::new(Stats::default());
        let sqlite = Sqlite::open_in_memory(Arc::clone(&stats))?;
        Ok(Store {
            inner: Arc::new(Inner {
                engine: Engine::Sqlite(sqlite),
                path: None,
                uploads: None,
                recovery: Recovery::default(),
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

    /// The SQLite database file; `None` for an in-memory store and on PostgreSQL.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Where the person's added files are copied: `uploads/` beside a SQLite database, or under
    /// the data directory given to [`Store::connect`] on PostgreSQL; `None` for an in-memory
    /// store, which keeps no files.
    pub fn uploads_dir(&self) -> Option<PathBuf> {
        self.inner.uploads.clone()
    }

    /// What opening found unfinished and cancelled (always nothing on PostgreSQL).
    pub fn recovery(&self) -> Recovery {
        self.inner.recovery
    }

    /// How many writes and transactions the store has carried out.
    pub fn stats(&self) -> StoreStats {
        self.inner.stats.snapshot()
    }

    /// Commits what is queued, closes the database (SQLite: and releases its lock file; waits
    /// until the file is free to reopen) or its connections; later calls on any clone fail
    /// with [`StoreError::Closed`].
    pub async fn close(&self) {
        match &self.inner.engine {
            Engine::Sqlite(db) => db.close().await,
            Engine::Postgres(db) => db.close(),
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
        on_engine!(self.write(insert_session(&id, title.as_deref())))
    }

    /// Deletes a session and everything stored of it: transcript, calls, forms, approvals, app
    /// state and the model's items. Deleting one that is not there does nothing.
    pub async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_owned();
        on_engine!(self.write(delete_session(&id)))
    }

    /// Renames a session.
    pub async fn set_session_title(&self, id: &str, title: Option<&str>) -> Result<(), StoreError> {
        let (id, title) = (id.to_owned(), title.map(str::to_owned));
        on_engine!(self.write(set_session_title(&id, title.as_deref())))
    }

    /// All sessions, most recently written first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionRecord>, StoreError> {
        on_engine!(self.read(list_sessions()))
    }

    /// One session.
    pub async fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.to_owned();
        on_engine!(self.read(session(&id)))
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
        on_engine!(self.write(append_entry(&session, kind.into(), None, &payload)))
    }

    /// The session's transcript in order, each reference entry joined with its invocation, form
    /// or approval as it stands now; [`StoreError::NotFound`] if there is no such session.
    pub async fn transcript(&self, session: &str) -> Result<Vec<TranscriptEntry>, StoreError> {
        let session = session.to_owned();
        let found = {
            let session = session.clone();
            on_engine!(self.read(transcript(&session)))?
        };
        found.ok_or(StoreError::NotFound {
            kind: "session",
            id: session,
        })
    }

    // ---- following other hosts ----

    /// This store's mark on what it writes, random per open: other hosts of a PostgreSQL
    /// database tell its writes from theirs by it.
    pub fn origin(&self) -> Option<&str> {
        match &self.inner.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(db) => Some(db.origin()),
        }
    }

    /// How long a running call's lease lasts on PostgreSQL; `None` on SQLite, which has none.
    pub fn lease(&self) -> Option<std::time::Duration> {
        match &self.inner.engine {
            Engine::Sqlite(_) => None,
            Engine::Postgres(db) => Some(db.lease()),
        }
    }

    /// The notices of what other hosts sharing the database commit, from the moment this
    /// returns until the store closes; `None` on SQLite, which one host holds.
    pub async fn follow(
        &self,
    ) -> Result<Option<tokio::sync::mpsc::UnboundedReceiver<StoreNotice>>, StoreError> {
        match &self.inner.engine {
            Engine::Sqlite(_) => Ok(None),
            Engine::Postgres(db) => db.follow().await.map(Some),
        }
    }

    /// The entries other hosts appended to the session after `after`, in order (each reference
    /// entry joined with its row as it stands now), and the `seq` of the session's last entry,
    /// whoever wrote it (`0` if it has none, or there is no such session).
    pub async fn entries_after(
        &self,
        session: &str,
        after: u64,
    ) -> Result<(Vec<TranscriptEntry>, u64), StoreError> {
        match &self.inner.engine {
            // One host writes a SQLite store: nothing in it is another's.
            Engine::Sqlite(_) => {
                let last = match self.transcript(session).await {
                    Ok(entries) => entries.last().map_or(0, |entry| entry.seq),
                    Err(StoreError::NotFound { .. }) => 0,
                    Err(err) => return Err(err),
                };
                Ok((Vec::new(), last))
            }
            Engine::Postgres(db) => {
                let (session, origin) = (session.to_owned(), db.origin().to_owned());
                db.read(move |tx| {
                    Box::pin(async move {
                        postgres::sql::entries_after(tx, &session, after, &origin).await
                    })
                })
                .await
            }
        }
    }

    /// Every session with the `seq` of its last entry (`0` when it has none), in no order.
    pub async fn session_heads(&self) -> Result<Vec<(String, u64)>, StoreError> {
        match &self.inner.engine {
            Engine::Sqlite(_) => {
                let mut heads = Vec::new();
                for session in self.list_sessions().await? {
                    let (_, last) = self.entries_after(&session.id, 0).await?;
                    heads.push((session.id, last));
                }
                Ok(heads)
            }
            Engine::Postgres(db) => {
                db.read(|tx| Box::pin(async move { postgres::sql::session_heads(tx).await }))
                    .await
            }
        }
    }

    /// The running calls of other replicas whose lease expired (their replica stopped), oldest
    /// first, each with its session; always none on SQLite, which one host holds.
    pub async fn expired_calls(&self) -> Result<Vec<(String, String)>, StoreError> {
        match &self.inner.engine {
            Engine::Sqlite(_) => Ok(Vec::new()),
            Engine::Postgres(db) => {
                db.read(|tx| Box::pin(async move { postgres::sql::expired_calls(tx).await }))
                    .await
            }
        }
    }

    /// Takes over the running call `invocation` if its lease expired: `true` when this store
    /// holds it now (exactly one of several replicas claiming at once does). Always `false` on
    /// SQLite.
    pub async fn claim_call(&self, invocation: &str) -> Result<bool, StoreError> {
        match &self.inner.engine {
            Engine::Sqlite(_) => Ok(false),
            Engine::Postgres(db) => {
                let id = invocation.to_owned();
                db.write(&self.inner.stats, move |tx| {
                    Box::pin(async move { postgres::sql::claim_call(tx, &id).await })
                })
                .await
            }
        }
    }

    /// Takes over the running call `invocation` if its lease expired and ends it as a restart
    /// ends what it finds running: its pending forms and approvals and the call `cancelled`
    /// with reason [`HOST_STOPPED`]; returns the forms and approvals it ended. `None` when
    /// another replica holds it (always on SQLite).
    pub async fn end_abandoned_call(
        &self,
        invocation: &str,
    ) -> Result<Option<AbandonedCall>, StoreError> {
        match &self.inner.engine {
            Engine::Sqlite(_) => Ok(None),
            Engine::Postgres(db) => {
                let id = invocation.to_owned();
                db.write(&self.inner.stats, move |tx| {
                    Box::pin(async move {
                        postgres::sql::end_abandoned_call(tx, &id, HOST_STOPPED).await
                    })
                })
                .await
            }
        }
    }

    // ---- invocations ----

    /// Records a tool call as `running` and appends its transcript entry; returns the entry's
    /// `seq`.
    pub async fn begin_invocation(&self, invocation: NewInvocation<'_>) -> Result<u64, StoreError> {
        let input = InvocationInput {
            id: invocation.id.to_owned(),
            session: invocation.session.to_owned(),
            server: invocation.server.to_owned(),
            tool: invocation.tool.to_owned(),
            arguments: invocation.arguments.map(|raw| raw.get().to_owned()),
            asked_by: invocation.asked_by.map(str::to_owned),
        };
        on_engine!(self.write(begin_invocation(&input)))
    }

    /// Records how a running tool call ended; [`StoreError::AlreadyResolved`] if it had ended.
    pub async fn finish_invocation(
        &self,
        id: &str,
        outcome: InvocationOutcome<'_>,
    ) -> Result<(), StoreError> {
        let end = InvocationEnd::from(outcome);
        let id = id.to_owned();
        on_engine!(self.write(finish_invocation(&id, &end)))
    }

    /// One invocation.
    pub async fn invocation(&self, id: &str) -> Result<Option<InvocationRecord>, StoreError> {
        let id = id.to_owned();
        on_engine!(self.read(invocation(&id)))
    }

    /// Records an `input_required` round of a running tool call, with its `requestState` if it
    /// carried one: a transcript entry of kind [`EntryKind::InvocationRound`] referring to the
    /// call.
    pub async fn record_round(
        &self,
        invocation: &str,
        round: u32,
        asked: &[String],
        state: Option<&str>,
    ) -> Result<(), StoreError> {
        let invocation = invocation.to_owned();
        let asked = asked.to_vec();
        let state = state.map(str::to_owned);
        on_engine!(self.write(record_round(&invocation, round, &asked, state.as_deref())))
    }

    /// Records the UI resource (MCP App) a tool call declared: a transcript entry of kind
    /// [`EntryKind::InvocationApp`] referring to the call.
    pub async fn record_app(&self, invocation: &str, app: AppRecord) -> Result<(), StoreError> {
        let invocation = invocation.to_owned();
        on_engine!(self.write(record_app(&invocation, &app)))
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
        on_engine!(self.write(save_app_state(&invocation, part, &value)))
    }

    /// The states the apps of a session's invocations left behind.
    pub async fn app_states(&self, session: &str) -> Result<Vec<AppStateRecord>, StoreError> {
        let session = session.to_owned();
        on_engine!(self.read(app_states(&session)))
    }

    /// Records the Codex thread `session` runs in.
    pub async fn set_codex_thread(&self, session: &str, thread: &str) -> Result<(), StoreError> {
        let session = session.to_owned();
        let thread = thread.to_owned();
        on_engine!(self.write(set_codex_thread(&session, &thread)))
    }

    /// Appends items of the model's conversation of `session` (each JSON text, kept as is).
    pub async fn append_model_items(
        &self,
        session: &str,
        items: Vec<String>,
    ) -> Result<(), StoreError> {
        let session = session.to_owned();
        on_engine!(self.write(append_model_items(&session, &items)))
    }

    /// The items of the model's conversation of `session`, in order.
    pub async fn model_items(&self, session: &str) -> Result<Vec<String>, StoreError> {
        let session = session.to_owned();
        on_engine!(self.read(model_items(&session)))
    }

    /// The `input_required` rounds of a tool call, in order.
    pub async fn rounds(&self, invocation: &str) -> Result<Vec<RoundRecord>, StoreError> {
        let invocation = invocation.to_owned();
        on_engine!(self.read(rounds(&invocation)))
    }

    // ---- forms ----

    /// Records a form as `pending` and appends its transcript entry; returns the entry's `seq`.
    pub async fn insert_form(&self, form: NewForm<'_>) -> Result<u64, StoreError> {
        let input = FormInput {
            id: form.id.to_owned(),
            session: form.session.to_owned(),
            invocation: form.invocation.map(str::to_owned),
            plugin: form.plugin.to_owned(),
            request: form.request.get().to_owned(),
            render: form.render.map(|raw| raw.get().to_owned()),
            asked_as: form.asked_as.map(str::to_owned),
        };
        on_engine!(self.write(insert_form(&input)))
    }

    /// Records how a pending form ended; [`StoreError::AlreadyResolved`] if it had ended (the
    /// first ending stands, e.g. a cancellation that beat a late answer).
    pub async fn resolve_form(
        &self,
        id: &str,
        resolution: FormResolution<'_>,
    ) -> Result<(), StoreError> {
        let end = FormEnd::from(resolution);
        let id = id.to_owned();
        on_engine!(self.write(resolve_form(&id, &end)))
    }

    /// One form.
    pub async fn form(&self, id: &str) -> Result<Option<FormRecord>, StoreError> {
        let id = id.to_owned();
        on_engine!(self.read(form(&id)))
    }

    // ---- approvals ----

    /// Records an approval card as `pending` and appends its transcript entry; returns the
    /// entry's `seq`.
    pub async fn insert_approval(&self, approval: NewApproval<'_>) -> Result<u64, StoreError> {
        let input = ApprovalInput {
            id: approval.id.to_owned(),
            session: approval.session.to_owned(),
            invocation: approval.invocation.map(str::to_owned),
            server: approval.server.to_owned(),
            tool: approval.tool.to_owned(),
            rendering: approval.rendering.get().to_owned(),
        };
        on_engine!(self.write(insert_approval(&input)))
    }

    /// Records how a pending approval ended; [`StoreError::AlreadyResolved`] if it had ended.
    pub async fn resolve_approval(
        &self,
        id: &str,
        resolution: ApprovalResolution<'_>,
    ) -> Result<(), StoreError> {
        let end = ApprovalEnd::from(resolution);
        let id = id.to_owned();
        on_engine!(self.write(resolve_approval(&id, &end)))
    }

    /// One approval card.
    pub async fn approval(&self, id: &str) -> Result<Option<ApprovalRecord>, StoreError> {
        let id = id.to_owned();
        on_engine!(self.read(approval(&id)))
    }
}
