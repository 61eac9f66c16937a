//! The persistence layer at its boundary: a real SQLite file on disk and a real PostgreSQL
//! database (a throwaway cluster of this test binary), reopened as a restarted host would,
//! written by a thousand tasks at once, and (SQLite) killed with SIGKILL mid-write. The tests of
//! the contract run on both engines (`on_both_engines!`), named `sqlite::*` and `postgres::*`.
//!
//! The kill test re-executes this test binary as a child (`STORE_CHILD` selects what it does);
//! the child's functions are ordinary tests that return at once when the variable is unset.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use formwork_host::store::{
    AppRecord, AppStatePart, ApprovalChoice, ApprovalResolution, ApprovalStatus, EntryDetail,
    EntryKind, FormResolution, FormStatus, HOST_STOPPED, InvocationOutcome, InvocationStatus,
    NewApproval, NewForm, NewInvocation, PlainEntryKind, Recovery, Store, StoreError, StoreNotice,
    StoreUrl, ToolResult,
};
use formwork_testkit::postgres::Cluster;
use serde_json::value::RawValue;

/// Instantiates each `async fn NAME(engine: Engine)` listed as two tests, `sqlite::NAME` and
/// `postgres::NAME`.
macro_rules! on_both_engines {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::Engine::Sqlite).await;
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::Engine::Postgres).await;
                }
            )+
        }
    };
}

mod files;
mod older_schema;
mod postgres;
mod records;
mod reopening;

/// The engine a test of the contract runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    Sqlite,
    Postgres,
}

/// Where a fresh, empty store lives: a SQLite file in a new directory, or a new database of
/// this binary's PostgreSQL cluster.
fn fresh_url(engine: Engine, dir: &Path) -> StoreUrl {
    match engine {
        Engine::Sqlite => StoreUrl::Sqlite(dir.join("data").join("formwork.db")),
        Engine::Postgres => StoreUrl::parse(&Cluster::shared().new_database()).unwrap(),
    }
}

/// A fresh, empty store on `engine`; the directory holds its files (SQLite) or uploads.
async fn fresh(engine: Engine) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(engine, dir.path());
    let store = Store::connect(&url, dir.path()).await.unwrap();
    (dir, store)
}

/// Selects a child mode when this binary is re-executed by a test.
const CHILD_ENV: &str = "STORE_CHILD";
/// The database the child writes to.
const CHILD_DB_ENV: &str = "STORE_CHILD_DB";

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

fn temp_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data").join("formwork.db");
    (dir, path)
}

// JSON deliberately out of alphabetical order, with spellings a re-serialiser would change.
const ARGUMENTS: &str = r#"{"zeta":1,"alpha":{"y":[1.50,1e3,-0.0],"b":"\u00e9\n"},"m":null}"#;
const CONTENT: &str =
    r#"[{"type":"text","text":"hi","annotations":{"priority":1,"audience":["user"]}}]"#;
const STRUCTURED: &str = r#"{"total":12.0,"items":[{"z":1,"a":2}]}"#;
const META: &str = r#"{"progressToken":7,"io.formwork/trace":{"b":1,"a":0}}"#;
const REQUEST: &str = r#"{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]},"_meta":{"z":1,"a":2}}"#;
const RENDER: &str =
    r#"{"fields":[{"key":"name","widget":"text"},{"key":"age","widget":"number"}]}"#;
const ANSWER: &str = r#"{"name":"Ada","age":36}"#;
const RENDERING: &str =
    r#"{"title":"Run rm?","destructive":true,"args":{"path":"/tmp/x","force":false}}"#;

#[test]
fn default_path_follows_formwork_data_dir() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "default_path_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "default-path")
        .env("FORMWORK_DATA_DIR", "/srv/formwork-data")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("path=/srv/formwork-data/formwork.db\n"),
        "{stdout}"
    );
    let path = Store::path_in(Path::new("/x"));
    assert_eq!(path, Path::new("/x/formwork.db"));
}

/// Child mode of [`default_path_follows_formwork_data_dir`].
#[test]
fn default_path_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("default-path") {
        return;
    }
    let path = Store::default_path().unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "path={}", path.display()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_writers_are_all_acknowledged_on_sqlite() {
    a_thousand_concurrent_writers_are_all_acknowledged(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_writers_are_all_acknowledged_on_postgres() {
    a_thousand_concurrent_writers_are_all_acknowledged(Engine::Postgres).await;
}

async fn a_thousand_concurrent_writers_are_all_acknowledged(engine: Engine) {
    const SESSIONS: usize = 1000;
    const MESSAGES: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let url = fresh_url(engine, dir.path());
    let store = Store::connect(&url, dir.path()).await.unwrap();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for idx in 0..SESSIONS {
        let store = store.clone();
        tasks.spawn(async move {
            let session = format!("s{idx}");
            let form = format!("f{idx}");
            let request = raw(REQUEST);
            store.create_session(&session, None).await.unwrap();
            store
                .insert_form(NewForm {
                    id: &form,
                    session: &session,
                    invocation: None,
                    plugin: "p",
                    request: &request,
                    render: None,
                    asked_as: None,
                })
                .await
                .unwrap();
            for turn in 0..MESSAGES {
                let message = raw(&format!(r#"{{"text":"message {turn}"}}"#));
                store
                    .append_entry(&session, PlainEntryKind::UserMessage, &message)
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    let elapsed = started.elapsed();
    let writes = SESSIONS * (2 + MESSAGES);
    let stats = store.stats();
    eprintln!(
        "{engine:?}: {writes} acknowledged writes from {SESSIONS} concurrent tasks in {elapsed:?} \
         ({:.0} writes/s) in {} transactions",
        writes as f64 / elapsed.as_secs_f64(),
        stats.transactions
    );
    assert_eq!(stats.writes, writes as u64);
    match engine {
        // Group commit: far fewer transactions (and WAL syncs) than writes.
        Engine::Sqlite => assert!(
            stats.transactions * 5 < stats.writes,
            "{stats:?}: writes were not grouped"
        ),
        // A transaction per write, each committed before it is answered.
        Engine::Postgres => assert_eq!(stats.transactions, stats.writes),
    }

    let sessions = store.list_sessions().await.unwrap();
    assert_eq!(sessions.len(), SESSIONS);
    for idx in (0..SESSIONS).step_by(97) {
        let transcript = store.transcript(&format!("s{idx}")).await.unwrap();
        assert_eq!(transcript.len(), 1 + MESSAGES);
        assert!(matches!(&transcript[0].detail,
            Some(EntryDetail::Form(form)) if form.status == FormStatus::Pending));
    }
    store.close().await;
    let reopened = Store::connect(&url, dir.path()).await.unwrap();
    match engine {
        Engine::Sqlite => assert_eq!(reopened.recovery().forms_cancelled, SESSIONS as u64),
        // Other hosts may share a PostgreSQL database: opening it cancels nothing.
        Engine::Postgres => {
            assert_eq!(reopened.recovery(), Recovery::default());
            let form = reopened.form("f0").await.unwrap().unwrap();
            assert_eq!(form.status, FormStatus::Pending);
        }
    }
}

/// Several rounds of: start a child that writes as fast as it can and prints every id the store
/// acknowledged, SIGKILL it at a random moment, then check the file and every printed id.
#[test]
fn kill_nine_loses_no_acknowledged_write() {
    const ROUNDS: u32 = 6;
    let (_dir, path) = temp_db();
    let mut random = Random::seeded();
    let mut total = 0;
    for round in 0..ROUNDS {
        let acknowledged = write_until_killed(round, path.as_os_str(), &mut random);
        let acks: Vec<&str> = acknowledged.iter().map(String::as_str).collect();
        total += acks.len();
        check_after_kill(&path, &acks);
    }
    eprintln!("{total} acknowledged writes checked over {ROUNDS} kills");
}

/// Runs the child of round `round` on the store `database` (a path or a URL), SIGKILLs it at a
/// random moment once writes flow, and returns what it acknowledged (`ack` lines, without
/// the prefix).
fn write_until_killed(round: u32, database: &std::ffi::OsStr, random: &mut Random) -> Vec<String> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill_nine_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("kill-nine:{round}"))
        .env(CHILD_DB_ENV, database)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        let mut line = Vec::new();
        // Only whole lines count: the kill may cut the last one short.
        while stdout.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            if line.ends_with(b"\n") {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                if lines.send(text).is_err() {
                    break;
                }
            }
            line.clear();
        }
    });
    // Kill only once writes are flowing, then at a random moment within them.
    let mut acknowledged = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !acknowledged
        .iter()
        .any(|line: &String| line.starts_with("ack "))
    {
        let line = received
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the child acknowledged no write in time");
        acknowledged.push(line);
    }
    std::thread::sleep(Duration::from_millis(random.below(400) + 20));
    child.kill().unwrap(); // SIGKILL on Unix.
    child.wait().unwrap();
    reader.join().unwrap();
    acknowledged.extend(received.try_iter());
    acknowledged
        .iter()
        .filter_map(|line| line.strip_prefix("ack "))
        .map(str::to_owned)
        .collect()
}

/// The file is intact and holds every acknowledged write.
fn check_after_kill(path: &Path, acks: &[&str]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    let count = |sql: &str, params: &[&dyn rusqlite::ToSql]| -> i64 {
        conn.query_row(sql, params, |row| row.get(0)).unwrap()
    };
    for ack in acks {
        let fields: Vec<&str> = ack.split(' ').collect();
        match fields.as_slice() {
            ["session", id] => assert_eq!(
                count("SELECT COUNT(*) FROM sessions WHERE id = ?1", &[id]),
                1,
                "{ack}"
            ),
            ["form", id] => assert_eq!(
                count("SELECT COUNT(*) FROM forms WHERE id = ?1", &[id]),
                1,
                "{ack}"
            ),
            ["resolved", id] => assert_eq!(
                count(
                    "SELECT COUNT(*) FROM forms WHERE id = ?1 AND status = 'accepted'",
                    &[id]
                ),
                1,
                "{ack}"
            ),
            ["entry", session, seq] => {
                let seq: i64 = seq.parse().unwrap();
                assert_eq!(
                    count(
                        "SELECT COUNT(*) FROM transcript WHERE session_id = ?1 AND seq = ?2",
                        &[session, &seq]
                    ),
                    1,
                    "{ack}"
                );
            }
            _ => panic!("unexpected line from the child: {ack}"),
        }
    }
    drop(conn);
    // Opening as a host would: forms left pending by the killed child are cancelled.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Store::open(path).unwrap();
        for ack in acks {
            if let Some(id) = ack.strip_prefix("form ") {
                let form = store.form(id).await.unwrap().unwrap();
                match form.status {
                    FormStatus::Accepted => {}
                    FormStatus::Cancelled => {
                        assert_eq!(form.reason.as_deref(), Some(HOST_STOPPED));
                    }
                    status => panic!("form {id} is {status}"),
                }
            }
        }
        store.close().await;
    });
}

/// Child mode of [`kill_nine_loses_no_acknowledged_write`]: writes until killed.
#[test]
fn kill_nine_child() {
    let Some(round) = std::env::var(CHILD_ENV)
        .ok()
        .and_then(|mode| mode.strip_prefix("kill-nine:").map(str::to_owned))
    else {
        return;
    };
    let database = StoreUrl::parse(&std::env::var(CHILD_DB_ENV).unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let uploads = tempfile::tempdir().unwrap();
        let store = Store::connect(&database, uploads.path()).await.unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for task in 0..32 {
            let store = store.clone();
            let session = format!("r{round}-t{task}");
            tasks.spawn(async move {
                store.create_session(&session, None).await.unwrap();
                acknowledge(&format!("session {session}"));
                let request = raw(REQUEST);
                let answer = raw(ANSWER);
                for n in 0.. {
                    let form = format!("{session}-f{n}");
                    let seq = store
                        .insert_form(NewForm {
                            id: &form,
                            session: &session,
                            invocation: None,
                            plugin: "p",
                            request: &request,
                            render: None,
                            asked_as: None,
                        })
                        .await
                        .unwrap();
                    acknowledge(&format!("form {form}"));
                    acknowledge(&format!("entry {session} {seq}"));
                    if n % 2 == 0 {
                        store
                            .resolve_form(
                                &form,
                                FormResolution::Accepted {
                                    content: Some(&answer),
                                },
                            )
                            .await
                            .unwrap();
                        acknowledge(&format!("resolved {form}"));
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    });
}

/// Prints one acknowledged id as a whole line in one write.
fn acknowledge(what: &str) {
    let line = format!("ack {what}\n");
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(line.as_bytes()).unwrap();
    stdout.flush().unwrap();
}

/// A small xorshift generator; the seed is printed so a failing round can be replayed.
struct Random(u64);

impl Random {
    fn seeded() -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let seed = u64::from(nanos) | 1;
        eprintln!("kill timing seed {seed}");
        Random(seed)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}
