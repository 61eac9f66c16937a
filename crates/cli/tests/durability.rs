//! Durability at the process level: `formwork serve` with the TS SDK plugin's recording tool
//! (`ask_and_record` in tests/peers/ts_plugin.mjs) behind an approval card, driven over the
//! session socket as the page drives it, SIGKILLed while forms are answered, and started again on
//! the same data directory, [`ROUNDS`] times.
//!
//! After each restart, read from the database and from the restarted server's socket: every
//! answer the plugin recorded receiving is stored exactly as received (and is what the test
//! sent); a call the plugin was let run has its approval stored as allowed; an answer that never
//! reached the plugin is stored as sent or cancelled `host-stopped`; a form never answered is
//! cancelled `host-stopped`; and the sessions of earlier rounds are byte for byte as they were.
//!
//! Where the kill lands: in even rounds the plugin kills the host itself, right after it wrote
//! down the approval's effect or an answer (`kill_host_after`), which is the very moment a host
//! that sent an answer before storing it would lose it; in odd rounds the test kills it a random
//! few milliseconds after sending an answer. The moments come from a seeded generator; the seed
//! is printed, and `DURABILITY_SEED=N` replays it.
//!
//! The rounds run on the SQLite file (whose restart sweeps what the killed host left open) and on
//! a PostgreSQL database (a throwaway cluster): there nothing sweeps, and the restarted host ends
//! the killed one's call, as a replica ends a stopped one's, once its lease (1 s here) expired.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use common::{TIMEOUT, kill_group, node_bin_dir, peers_dir};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

/// Kill and restart rounds.
const ROUNDS: u32 = 20;
/// Forms the recording tool asks per call.
const FORMS: u32 = 3;
/// The host's reason for forms it found open at start.
const HOST_STOPPED: &str = "host-stopped";

#[test]
fn answers_a_plugin_received_survive_kill_nine_at_random_moments() {
    kill_nine_rounds(None);
}

/// The same on PostgreSQL: nothing sweeps at a restart there; the restarted host ends the dead
/// one's call once its lease (1 s here) has expired, as a replica ends a stopped one's.
#[test]
fn answers_a_plugin_received_survive_kill_nine_at_random_moments_on_postgres() {
    kill_nine_rounds(Some(
        formwork_testkit::postgres::Cluster::shared().new_database(),
    ));
}

/// [`ROUNDS`] kills and restarts, on the SQLite file in the data directory or on the
/// PostgreSQL database at `postgres`.
fn kill_nine_rounds(postgres: Option<String>) {
    let started = Instant::now();
    let mut random = Random::seeded();
    let dir = tempfile::tempdir().unwrap();
    // formwork creates the data directory, and makes it private.
    let data = dir.path().join("data");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = Stored::new(&data, postgres);
    let mut earlier = BTreeMap::new();
    let mut totals = Totals::default();
    let mut serve = Serve::start(dir.path(), &data, 0, &store);
    if let Stored::Sqlite(_) = store {
        assert_eq!(mode(&data), 0o700, "the data directory formwork created");
    }
    for round in 0..ROUNDS {
        let kill = if round % 2 == 0 {
            Kill::Plugin(random.below(u64::from(FORMS) + 1) as u32)
        } else {
            Kill::Test {
                after: random.below(u64::from(FORMS) + 1) as u32,
                delay: Duration::from_millis(random.below(21)),
            }
        };
        let played = runtime.block_on(play(&mut serve, round, kill, &mut random));
        let status = serve.wait_dead();
        assert_eq!(status.signal(), Some(9), "round {round}: {status}");
        wait_gone(&played.plugins, round);
        let record = read_record(&serve.record);
        // The restart: the same data directory; what the killed host left open ends now (on
        // PostgreSQL, once its lease has expired).
        serve = Serve::start(dir.path(), &data, round + 1, &store);
        store.wait_until_ended(&played.session, round);
        let checked = check_store(&store, &played, &record, &mut earlier);
        runtime.block_on(check_snapshot(&serve, &played, &record));
        totals.add(&checked);
    }
    // While the server runs, SQLite's -wal and -shm files are there too.
    if let Stored::Sqlite(_) = store {
        for name in [
            "formwork.db",
            "formwork.db-wal",
            "formwork.db-shm",
            "formwork.db.lock",
        ] {
            assert_eq!(mode(&data.join(name)), 0o600, "{name}");
        }
    }
    let stderr = serve.stop();
    assert!(!stderr.contains("panicked"), "{stderr}");
    eprintln!(
        "{} {ROUNDS} kills in {:.1?}: {} answers the plugin received checked, {} stored but never \
         delivered, {} answered but lost with the host, {} calls let run",
        store.engine(),
        started.elapsed(),
        totals.received,
        totals.stored_not_received,
        totals.lost_unreceived,
        totals.started,
    );
}

/// Where a round's kill lands.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// The plugin SIGKILLs the host right after recording line `n` (0: the call started).
    Plugin(u32),
    /// The test SIGKILLs the host `delay` after sending answer `after` (0: the approval).
    Test { after: u32, delay: Duration },
}

/// What one round did before the kill.
#[derive(Debug)]
struct Played {
    round: u32,
    tag: String,
    session: String,
    kill: Kill,
    /// The approval's id, once it was asked for.
    approval: Option<String>,
    /// Answers sent, by form number: the form's id and the `answer` of `answer_form`.
    sent: HashMap<u32, (String, Value)>,
    /// The plugin processes the host ran, to wait for after the kill.
    plugins: Vec<u32>,
}

/// One round: a new session, one call of `ask_and_record`, its approval and forms answered
/// until the host dies.
async fn play(serve: &mut Serve, round: u32, kill: Kill, random: &mut Random) -> Played {
    let session = serve.create_session().await;
    let mut socket = serve.socket(&session).await;
    while socket.next().await.expect("snapshot")["type"] != "snapshot_done" {}
    let tag = format!("round {round}");
    let mut arguments = json!({"tag": tag, "forms": FORMS});
    if let Kill::Plugin(after) = kill {
        arguments["kill_host_after"] = json!(after);
    }
    socket
        .send(json!({"type": "call_tool", "server": "rec", "tool": "ask_and_record", "arguments": arguments}))
        .await;
    let mut played = Played {
        round,
        tag: tag.clone(),
        session,
        kill,
        approval: None,
        sent: HashMap::new(),
        plugins: Vec::new(),
    };
    // Until the socket closes because the host died (or the test killed it).
    while let Some(event) = socket.next().await {
        let answered = match event["type"].as_str() {
            Some("approval_requested") => {
                let id = event["approval_id"].as_str().unwrap().to_owned();
                // The plugin is running by now (the tool list came from it), and maybe the
                // one the workbench lists its palette with.
                played.plugins = children(serve.process.id());
                socket
                    .send(json!({"type": "answer_approval", "approval_id": id, "choice": "allow"}))
                    .await;
                played.approval = Some(id);
                Some(0)
            }
            Some("form_requested") => {
                let id = event["form_id"].as_str().unwrap().to_owned();
                let message = event["body"]["render"]["message"].as_str().unwrap();
                let number: u32 = message
                    .strip_prefix(&format!("{tag} form "))
                    .unwrap_or_else(|| panic!("not a form of {tag}: {event}"))
                    .parse()
                    .unwrap();
                let answer = random_answer(random);
                socket
                    .send(json!({"type": "answer_form", "form_id": id, "answer": answer}))
                    .await;
                played.sent.insert(number, (id, answer));
                Some(number)
            }
            // The plugin kills the host before its call can end, and the test stops reading
            // once it killed it.
            Some("tool_call_finished") => panic!("round {round}: the call ended: {event}"),
            _ => None,
        };
        if let (Some(number), Kill::Test { after, delay }) = (answered, kill)
            && number == after
        {
            tokio::time::sleep(delay).await;
            serve.process.kill();
            break;
        }
    }
    played
}

/// An answer as the page sends it: mostly accepts with varied content, some declines and
/// cancels.
fn random_answer(random: &mut Random) -> Value {
    const NOTES: [&str; 8] = [
        "plain",
        "é ü 漢字",
        "a \"quote\" and a \\ backslash",
        "line\nbreak\tand tab",
        "<b>not markup</b>",
        "emoji 🦀",
        "",
        "  spaced  ",
    ];
    const PICKS: [&str; 3] = ["alpha", "beta", "gamma"];
    match random.below(10) {
        0 | 1 => json!({"action": "decline"}),
        2 | 3 => json!({"action": "cancel"}),
        _ => {
            let note = NOTES[random.below(NOTES.len() as u64) as usize];
            // Odd eighths: numbers with a fraction that print the same in every language.
            let ratio = (random.below(200) as f64 * 2.0 - 199.0) / 8.0;
            json!({"action": "accept", "content": {
                "note": format!("{note} #{}", random.below(1000)),
                "count": random.below(2001) as i64 - 1000,
                "ratio": ratio,
                "ok": random.below(2) == 1,
                "pick": PICKS[random.below(3) as usize],
            }})
        }
    }
}

/// What one check found, for the summary.
#[derive(Default)]
struct Totals {
    received: usize,
    stored_not_received: usize,
    lost_unreceived: usize,
    started: usize,
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.received += other.received;
        self.stored_not_received += other.stored_not_received;
        self.lost_unreceived += other.lost_unreceived;
        self.started += other.started;
    }
}

/// How a form's row reads: status, content, reason.
type FormRow = (String, Option<String>, Option<String>);

/// The row an answer (`answer_form`'s or an `ElicitResult`) must leave.
fn row_of(answer: &Value) -> FormRow {
    match answer["action"].as_str().unwrap() {
        "accept" => (
            "accepted".to_owned(),
            Some(serde_json::to_string(&answer["content"]).unwrap()),
            None,
        ),
        "decline" => ("declined".to_owned(), None, None),
        _ => (
            "cancelled".to_owned(),
            None,
            Some("cancelled by the person".to_owned()),
        ),
    }
}

fn host_stopped() -> FormRow {
    ("cancelled".to_owned(), None, Some(HOST_STOPPED.to_owned()))
}

/// The round's rows against what the plugin recorded and what the test sent; the other
/// sessions against their state at earlier checks.
fn check_store(
    store: &Stored,
    played: &Played,
    record: &[Value],
    earlier: &mut BTreeMap<String, String>,
) -> Totals {
    let round = played.round;
    if let Stored::Sqlite(database) = store {
        let conn = rusqlite::Connection::open_with_flags(
            database,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        let integrity: String = conn
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(integrity, "ok", "round {round}");
    }
    let session = played.session.as_str();
    let context = || format!("round {round}, {played:?}, record {record:#?}");

    let mut totals = Totals::default();
    let started = record
        .iter()
        .any(|line| line["tag"] == played.tag.as_str() && line["started"] == true);
    let received: HashMap<u32, &Value> = record
        .iter()
        .filter(|line| line["tag"] == played.tag.as_str())
        .filter_map(|line| Some((u32::try_from(line["form"].as_u64()?).ok()?, &line["result"])))
        .collect();
    // The plugin's own kill came right after the line it was told to write.
    if let Kill::Plugin(after) = played.kill {
        let wrote = if after == 0 {
            started
        } else {
            received.contains_key(&after)
        };
        assert!(wrote, "the plugin did not kill where told: {}", context());
    }

    // The approval: a call the plugin was let run was allowed, in the store.
    let approvals: Vec<(String, String, Option<String>, Option<String>)> = store
        .rows(&format!(
            "SELECT id, status, choice, reason FROM approvals WHERE session_id = '{session}'"
        ))
        .into_iter()
        .map(|row| (text(&row[0]), text(&row[1]), row[2].clone(), row[3].clone()))
        .collect();
    let allowed = |approval: &(String, String, Option<String>, Option<String>)| {
        approval.1 == "answered" && approval.2.as_deref() == Some("allow")
    };
    if let [approval] = approvals.as_slice() {
        assert_eq!(Some(&approval.0), played.approval.as_ref(), "{}", context());
    }
    match (approvals.as_slice(), started) {
        ([approval], true) => {
            assert!(
                allowed(approval),
                "the call ran: {approval:?}; {}",
                context()
            );
            totals.started += 1;
        }
        ([approval], false) => assert!(
            allowed(approval)
                || (approval.1 == "cancelled" && approval.3.as_deref() == Some(HOST_STOPPED)),
            "{approval:?}; {}",
            context()
        ),
        // Killed before the card's row was written.
        ([], false) => {}
        (approvals, _) => panic!("approvals {approvals:?}; {}", context()),
    }

    // The forms, by number.
    let forms: Vec<(String, String, FormRow)> = store
        .rows(&format!(
            "SELECT id, request, status, content, reason FROM forms WHERE session_id = '{session}'
             ORDER BY (SELECT seq FROM transcript WHERE ref_id = forms.id AND kind = 'form')"
        ))
        .into_iter()
        .map(|row| {
            (
                text(&row[0]),
                text(&row[1]),
                (text(&row[2]), row[3].clone(), row[4].clone()),
            )
        })
        .collect();
    for (number, form) in (1..).zip(&forms) {
        let (id, request, row) = form;
        let request: Value = serde_json::from_str(request).unwrap();
        assert_eq!(
            request["message"],
            format!("{} form {number}", played.tag),
            "{}",
            context()
        );
        let sent = played.sent.get(&number);
        if let Some((sent_id, _)) = sent {
            assert_eq!(sent_id, id, "{}", context());
        }
        match (received.get(&number), sent) {
            (Some(result), Some((_, answer))) => {
                // Delivered: stored exactly as the plugin got it, which is what was sent.
                assert_eq!(*row, row_of(result), "form {number}: {}", context());
                assert_eq!(
                    result["content"],
                    answer["content"],
                    "form {number}: {}",
                    context()
                );
                assert_eq!(result["action"], answer["action"], "{}", context());
                totals.received += 1;
            }
            (Some(result), None) => panic!("form {number} got {result} unanswered: {}", context()),
            (None, Some((_, answer))) => {
                if *row == row_of(answer) {
                    totals.stored_not_received += 1;
                } else {
                    assert_eq!(*row, host_stopped(), "form {number}: {}", context());
                    totals.lost_unreceived += 1;
                }
            }
            (None, None) => assert_eq!(*row, host_stopped(), "form {number}: {}", context()),
        }
    }
    assert!(
        received
            .keys()
            .all(|number| *number as usize <= forms.len()),
        "the plugin got answers to forms the store lacks: {}",
        context()
    );
    assert!(forms.len() as u32 <= FORMS, "{}", context());

    // The call: cancelled at the restart if it was still running, which it was unless the
    // test's kill came after the last answer had let it finish.
    let calls: Vec<(String, Option<String>)> = store
        .rows(&format!(
            "SELECT status, error FROM invocations WHERE session_id = '{session}'"
        ))
        .into_iter()
        .map(|row| (text(&row[0]), row[1].clone()))
        .collect();
    let finished = received.len() as u32 == FORMS && matches!(played.kill, Kill::Test { .. });
    match calls.as_slice() {
        [(status, error)] if status == "cancelled" && error.as_deref() == Some(HOST_STOPPED) => {}
        [(status, None)] if status == "completed" && finished => {}
        [] if approvals.is_empty() => {}
        calls => panic!("calls {calls:?}; {}", context()),
    }
    // Nothing else entered the round's transcript (no diagnostic, no message).
    let kinds: Vec<String> = store
        .rows(&format!(
            "SELECT DISTINCT kind FROM transcript WHERE session_id = '{session}' ORDER BY kind"
        ))
        .iter()
        .map(|row| text(&row[0]))
        .collect();
    for kind in &kinds {
        assert!(
            [
                "invocation",
                "invocation_end",
                "approval",
                "approval_end",
                "form",
                "form_end"
            ]
            .contains(&kind.as_str()),
            "{kind} in the transcript: {}",
            context()
        );
    }

    // Every other session is as it was at the last check; then remember them all.
    let now = dump_sessions(store);
    for (session, before) in earlier.iter() {
        assert_eq!(
            now.get(session),
            Some(before),
            "session {session} changed in round {round}"
        );
    }
    *earlier = now;
    totals
}

/// Every row of every session, as text, by session id.
fn dump_sessions(store: &Stored) -> BTreeMap<String, String> {
    let sessions = store.rows("SELECT id FROM sessions ORDER BY id");
    let mut dumps = BTreeMap::new();
    for session in sessions {
        let session = text(&session[0]);
        let mut dump = String::new();
        for (table, column, order) in [
            ("sessions", "id", "id"),
            ("transcript", "session_id", "seq"),
            ("invocations", "session_id", "id"),
            ("forms", "session_id", "id"),
            ("approvals", "session_id", "id"),
        ] {
            let rows = store.rows(&format!(
                "SELECT * FROM {table} WHERE {column} = '{session}' ORDER BY {order}"
            ));
            for row in rows {
                dump.push_str(&format!("{table} {row:?}\n"));
            }
        }
        dumps.insert(session, dump);
    }
    dumps
}

/// A value that is never NULL.
fn text(value: &Option<String>) -> String {
    value.clone().expect("a value, not NULL")
}

/// Where `formwork serve` keeps its sessions in this test, and how the test reads them.
enum Stored {
    /// The SQLite file in the data directory.
    Sqlite(PathBuf),
    /// A PostgreSQL database: its URL, and a client on a runtime of its own (the test's
    /// runtime runs only inside its `block_on`).
    Postgres {
        url: String,
        client: tokio_postgres::Client,
        runtime: Box<tokio::runtime::Runtime>,
    },
}

impl Stored {
    fn new(data: &Path, postgres: Option<String>) -> Stored {
        let Some(url) = postgres else {
            return Stored::Sqlite(data.join("formwork.db"));
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
        });
        Stored::Postgres {
            url,
            client,
            runtime: Box::new(runtime),
        }
    }

    fn engine(&self) -> &'static str {
        match self {
            Stored::Sqlite(_) => "SQLite:",
            Stored::Postgres { .. } => "PostgreSQL:",
        }
    }

    /// The rows of `sql`, every value as text (`None` for NULL).
    fn rows(&self, sql: &str) -> Vec<Vec<Option<String>>> {
        match self {
            Stored::Sqlite(database) => {
                let conn = rusqlite::Connection::open_with_flags(
                    database,
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )
                .unwrap();
                let mut statement = conn.prepare(sql).unwrap();
                let columns = statement.column_count();
                let mut rows = statement.query([]).unwrap();
                let mut all = Vec::new();
                while let Some(row) = rows.next().unwrap() {
                    let values = (0..columns)
                        .map(|idx| match row.get_ref(idx).unwrap() {
                            rusqlite::types::ValueRef::Null => None,
                            rusqlite::types::ValueRef::Integer(n) => Some(n.to_string()),
                            rusqlite::types::ValueRef::Real(x) => Some(x.to_string()),
                            rusqlite::types::ValueRef::Text(text)
                            | rusqlite::types::ValueRef::Blob(text) => {
                                Some(String::from_utf8_lossy(text).into_owned())
                            }
                        })
                        .collect();
                    all.push(values);
                }
                all
            }
            Stored::Postgres {
                client, runtime, ..
            } => {
                let messages = runtime.block_on(client.simple_query(sql)).unwrap();
                messages
                    .iter()
                    .filter_map(|message| match message {
                        tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                            (0..row.len())
                                .map(|idx| row.get(idx).map(str::to_owned))
                                .collect(),
                        ),
                        _ => None,
                    })
                    .collect()
            }
        }
    }

    /// Waits (at most 30 s) until the killed host's call of `session` is no longer running: at
    /// once on SQLite, whose restart sweeps; on PostgreSQL once the restarted host ended it.
    fn wait_until_ended(&self, session: &str, round: u32) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let sql = format!(
            "SELECT count(*) FROM invocations WHERE session_id = '{session}' AND status = 'running'"
        );
        while self.rows(&sql)[0][0].as_deref() != Some("0") {
            assert!(
                Instant::now() < deadline,
                "round {round}: the killed host's call still runs 30 s after the restart"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The restarted server shows each answer the plugin received as that form's last outcome.
async fn check_snapshot(serve: &Serve, played: &Played, record: &[Value]) {
    let mut socket = serve.socket(&played.session).await;
    let mut outcome: HashMap<String, Value> = HashMap::new();
    loop {
        let event = socket.next().await.expect("snapshot");
        match event["type"].as_str() {
            Some("snapshot_done") => break,
            Some("form_resolved") => {
                outcome.insert(event["form_id"].as_str().unwrap().to_owned(), event);
            }
            _ => {}
        }
    }
    socket.close().await;
    for line in record
        .iter()
        .filter(|line| line["tag"] == played.tag.as_str())
    {
        let Some(number) = line["form"].as_u64() else {
            continue;
        };
        let (form_id, _) = &played.sent[&(number as u32)];
        let shown = &outcome[form_id];
        let result = &line["result"];
        assert_eq!(shown["action"], result["action"], "round {}", played.round);
        assert_eq!(
            shown["content"], result["content"],
            "round {}",
            played.round
        );
    }
}

/// The whole lines the plugin has written to its record file.
fn read_record(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Waits until the plugins of the killed host have exited (they see their stdin close), so
/// that their record is complete.
fn wait_gone(pids: &[u32], round: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    for pid in pids {
        while alive(*pid) {
            if Instant::now() > deadline {
                kill_group(*pid);
                panic!("round {round}: plugin {pid} outlived its host by 10 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Whether `pid` runs (a zombie, exited but not reaped by its new parent, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(!matches!(state, 'Z' | 'X'))
        })
        .unwrap_or(false)
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if ppid == Some(parent) {
            pids.push(pid);
        }
    }
    pids
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// One `formwork serve` on the data directory, with the recording plugin as server `rec`.
struct Serve {
    process: formwork_testkit::Serve,
    port: u16,
    token: String,
    /// The file the plugin records into in this run.
    record: PathBuf,
}

impl Serve {
    /// Starts run `run` on `store`, writing its config (with a record file of its own) under
    /// `dir`.
    fn start(dir: &Path, data: &Path, run: u32, store: &Stored) -> Serve {
        let record = dir.join(format!("record-{run}.jsonl"));
        let config = dir.join(format!("formwork-{run}.toml"));
        let node = node_bin_dir().join("node").display().to_string();
        let plugin = peers_dir().join("npm/ts_plugin.mjs").display().to_string();
        std::fs::write(
            &config,
            format!(
                "[mcp_servers.rec]\ncommand = {node:?}\nargs = [{plugin:?}]\n\
                 default_tools_approval_mode = \"prompt\"\nenv = {{ FORMWORK_TEST_RECORD = {:?} }}\n\n\
                 [mcp_servers.demo]\nenabled = false\n\n[store]\nlease_seconds = 1\n",
                record.display().to_string()
            ),
        )
        .unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_formwork"));
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(data)
            .arg("--config")
            .arg(&config);
        if let Stored::Postgres { url, .. } = store {
            command.arg("--store").arg(url);
        }
        let process = formwork_testkit::Serve::start(&mut command);
        Serve {
            port: process.port(),
            token: process.token().to_owned(),
            process,
            record,
        }
    }

    /// Waits for the killed server; its exit status.
    fn wait_dead(&mut self) -> std::process::ExitStatus {
        self.process.wait_dead()
    }

    /// SIGTERM, as Ctrl-C would; returns its stderr.
    fn stop(self) -> String {
        let (status, stderr) = self.process.stop_with_status();
        assert!(status.success(), "{status}");
        stderr
    }

    /// Creates a session over the REST API.
    async fn create_session(&self) -> String {
        let (name, value) = credential(&self.token);
        let request = format!(
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n\
             {name}: {value}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            port = self.port
        );
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        tokio::time::timeout(TIMEOUT, stream.read_to_string(&mut response))
            .await
            .unwrap()
            .unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 201"), "{response}");
        let body: Value = serde_json::from_str(body).unwrap();
        body["id"].as_str().unwrap().to_owned()
    }

    /// Opens the session's socket as the page does.
    async fn socket(&self, session: &str) -> Socket {
        let url = format!("ws://127.0.0.1:{}/api/sessions/{session}/socket", self.port);
        let mut request = url.into_client_request().unwrap();
        let origin = format!("http://127.0.0.1:{}", self.port);
        let (name, value) = credential(&self.token);
        let headers = request.headers_mut();
        headers.insert("Origin", HeaderValue::from_str(&origin).unwrap());
        headers.insert(name, HeaderValue::from_str(&value).unwrap());
        let (ws, _) = tokio::time::timeout(TIMEOUT, tokio_tungstenite::connect_async(request))
            .await
            .unwrap()
            .unwrap();
        Socket { ws }
    }
}

/// How the test proves it holds the workbench's token: the one place to change when the
/// workbench's credential changes.
fn credential(token: &str) -> (&'static str, String) {
    ("Authorization", format!("Bearer {token}"))
}

/// The page's side of a session socket.
struct Socket {
    ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
}

impl Socket {
    async fn send(&mut self, command: Value) {
        // A host killed a moment ago may refuse it; the round ends on the next read.
        let _ = self
            .ws
            .send(Message::Text(command.to_string().into()))
            .await;
    }

    /// The next JSON message, or `None` once the socket closed.
    async fn next(&mut self) -> Option<Value> {
        loop {
            let message = tokio::time::timeout(TIMEOUT, self.ws.next())
                .await
                .expect("no message from formwork serve in time")?;
            match message {
                Ok(Message::Text(text)) => {
                    return Some(serde_json::from_str(text.as_str()).unwrap());
                }
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    }

    async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// A small xorshift generator; the seed is printed so a failing run can be replayed.
struct Random(u64);

impl Random {
    fn seeded() -> Self {
        let seed = std::env::var("DURABILITY_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or_else(|| {
                let nanos = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .subsec_nanos();
                u64::from(nanos) | 1
            });
        eprintln!("kill timing seed {seed} (DURABILITY_SEED={seed} replays it)");
        Random(seed)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}
