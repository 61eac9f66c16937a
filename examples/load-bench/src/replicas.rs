//! Replicas on one PostgreSQL database (`load-bench --replicas <peers dir> FORMS`), for
//! `cargo xtask bench --only replicas`: hosts in this process, each with a store of its own (its
//! own pool and listening connection) on one database of a throwaway cluster, and one Streamable
//! HTTP plugin on the official Rust SDK ([`crate::rust_plugin`]).
//!
//! - **The answer's path**: a form asked by a call on A is answered, and the time runs from the
//!   answer to the answer's message leaving A for the plugin (the host's `formwork::wire` trace),
//!   and on to the call's result at A's UI. Answered on A itself with SQLite (the embedded
//!   default), on A itself with PostgreSQL, and on B (across replicas), in turns.
//! - **Throughput**: `FORMS` forms open across 1, 2 and 4 replicas, all answered at once, each on
//!   another replica than the one holding its call (on the one replica when alone).
//! - **Memory per pending form** on PostgreSQL, and on SQLite beside it: the host's resident
//!   growth while `FORMS` forms are open on one replica (one MCP session shared by its sessions),
//!   divided by `FORMS`, counted after a warm-up that opens the store pool's connections (the
//!   database server's own memory is not counted).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use formwork_host::config::Config;
use formwork_host::store::{Store, StoreUrl};
use formwork_host::{Event, Host, HostOptions};
use formwork_testkit::postgres::Cluster;
use tokio::sync::mpsc;

use crate::{HttpPlugin, Mode, PluginKind, Samples, WireClock, answer, call, check, ms, verdict};

/// Answers timed per way, in turns of [`TURN`].
const ANSWERS: usize = 300;
const TURN: usize = 50;

/// The pause between a form shown and its answer: long enough for the form's own write to be
/// committed, so that every way times the answer alone.
const SETTLE: Duration = Duration::from_millis(15);

pub async fn run(peers: &Path, forms: usize) -> anyhow::Result<()> {
    // Memory first, each engine in a process of its own, so that memory one run freed does not
    // make the next look small.
    let memory = memory_in_own_process(peers, "postgres", forms)?;
    let memory_sqlite = memory_in_own_process(peers, "sqlite", forms)?;

    let plugin = HttpPlugin::start(peers, PluginKind::Rust, Mode::PerSession)?;
    let cluster = Cluster::shared();
    let dir = tempfile_dir()?;

    let database = StoreUrl::parse(&cluster.new_database())?;
    let sqlite = StoreUrl::Sqlite(dir.join("formwork.db"));
    let single_sqlite = replica(&plugin.url, &sqlite).await?;
    let single_pg = replica(&plugin.url, &database).await?;
    let across = [single_pg.clone(), replica(&plugin.url, &database).await?];
    let ways: [(&str, &Host, &Host); 3] = [
        ("one replica, SQLite", &single_sqlite, &single_sqlite),
        ("one replica, PostgreSQL", &single_pg, &single_pg),
        (
            "across replicas (asked on A, answered on B)",
            &across[0],
            &across[1],
        ),
    ];
    let mut to_plugin = vec![Vec::new(); ways.len()];
    let mut to_result = vec![Vec::new(); ways.len()];
    let mut sessions = Vec::new();
    for (_, asking, answering) in &ways {
        sessions.push(open_session(asking, answering).await?);
    }
    let mut n = 0;
    for _ in 0..ANSWERS / TURN {
        for (idx, (_, asking, answering)) in ways.iter().enumerate() {
            let session = &mut sessions[idx];
            for _ in 0..TURN {
                let (out, finished) = answer_once(asking, answering, session, n).await?;
                to_plugin[idx].push(out);
                to_result[idx].push(finished);
                n += 1;
            }
        }
    }
    println!(
        "the answer's path, {ANSWERS} answers each (answer -> its message leaves for the plugin; -> the call's result at the UI):"
    );
    let mut medians = Vec::new();
    for (idx, (label, _, _)) in ways.iter().enumerate() {
        let out = Samples::of(std::mem::take(&mut to_plugin[idx]));
        let back = Samples::of(std::mem::take(&mut to_result[idx]));
        println!(
            "  {label:<46} to the plugin: median {:.2} ms, p99 {:.2} ms; to the result: median {:.2} ms, p99 {:.2} ms",
            ms(out.p50),
            ms(out.p99),
            ms(back.p50),
            ms(back.p99)
        );
        medians.push(out.p50);
    }
    println!(
        "  across replicas: {:.2} ms median to the plugin, {:.2}x one replica on SQLite ({})",
        ms(medians[2]),
        ms(medians[2]) / ms(medians[0]),
        verdict(ms(medians[2]) <= 5.0, "<= 5 ms")
    );
    for host in [single_sqlite, single_pg] {
        host.shutdown().await;
    }
    across[1].shutdown().await;

    println!(
        "forms answered per second, {forms} forms open, each answered on another replica than its call's:"
    );
    for count in [1, 2, 4] {
        let database = StoreUrl::parse(&cluster.new_database())?;
        let rate = throughput(&plugin.url, &database, count, forms).await?;
        println!("  {count} replica(s): {rate:.0} forms/s");
    }
    println!(
        "host memory per pending form on PostgreSQL: {memory:.1} KB ({}); on SQLite, the same run: {memory_sqlite:.1} KB\n  \
         (the store's share is the difference; the rest is the session and its call's open stream to the plugin)",
        verdict(memory <= 10.0, "<= 10 KB")
    );
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "All replicas run in this one process on this machine's cores, beside the database server and the plugin: more\n\
         replicas add listening connections and notices to read, not cores; each answer is one commit (synchronous)."
    );
    Ok(())
}

/// Runs `load-bench --replica-memory PEERS ENGINE FORMS` and reads its figure, KB per form.
fn memory_in_own_process(peers: &Path, engine: &str, forms: usize) -> anyhow::Result<f64> {
    let output = std::process::Command::new(std::env::current_exe()?)
        .arg("--replica-memory")
        .arg(peers)
        .arg(engine)
        .arg(forms.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()?;
    if !output.status.success() {
        bail!("the memory run on {engine} failed");
    }
    Ok(String::from_utf8(output.stdout)?.trim().parse()?)
}

/// `load-bench --replica-memory`: prints the host's memory per pending form, in KB, with `forms`
/// forms open on one replica on `engine` (`postgres`, a database of a throwaway cluster, or
/// `sqlite`, a file in a temporary directory).
pub async fn memory(peers: &Path, engine: &str, forms: usize) -> anyhow::Result<()> {
    let plugin = HttpPlugin::start(peers, PluginKind::Rust, Mode::PerSession)?;
    let dir = tempfile_dir()?;
    let url = match engine {
        "postgres" => StoreUrl::parse(&Cluster::shared().new_database())?,
        "sqlite" => StoreUrl::Sqlite(dir.join("formwork.db")),
        other => bail!("unknown engine `{other}`"),
    };
    let per_form = pending_memory(&plugin.url, &url, forms).await;
    let _ = std::fs::remove_dir_all(&dir);
    println!("{:.1}", per_form?);
    Ok(())
}

fn tempfile_dir() -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("formwork-replicas-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A host on the store at `url` with the plugin at `plugin` as server `http`.
async fn replica(plugin: &str, url: &StoreUrl) -> anyhow::Result<Host> {
    replica_sharing(plugin, url, false).await
}

/// [`replica`], with one MCP session for all host sessions when `shared`.
async fn replica_sharing(plugin: &str, url: &StoreUrl, shared: bool) -> anyhow::Result<Host> {
    let config = Config::from_toml(
        &format!(
            "[mcp_servers.http]\nurl = {plugin:?}\ndefault_tools_approval_mode = \"approve\"\n\
             share_session = {shared}\n"
        ),
        None,
    )?;
    let options = HostOptions {
        request_timeout: Duration::from_secs(600),
        ..HostOptions::default()
    };
    let store = Store::connect(url, &std::env::temp_dir()).await?;
    Ok(Host::with_store(config, options, store).await?)
}

/// A session made on `asking`, followed there and on `answering` (which may be the same host).
struct Followed {
    id: String,
    asked: tokio::sync::broadcast::Receiver<std::sync::Arc<Event>>,
    seen: tokio::sync::broadcast::Receiver<std::sync::Arc<Event>>,
}

async fn open_session(asking: &Host, answering: &Host) -> anyhow::Result<Followed> {
    let id = asking.create_session();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !answering.has_session(&id) {
        if Instant::now() > deadline {
            bail!("the session did not reach the other replica");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (_, asked) = asking.subscribe(&id)?;
    let (_, seen) = answering.subscribe(&id)?;
    Ok(Followed { id, asked, seen })
}

/// One call on `asking`, its form answered on `answering` once shown there: from the answer to
/// its message leaving for the plugin, and to the result at `asking`'s UI.
async fn answer_once(
    asking: &Host,
    answering: &Host,
    session: &mut Followed,
    n: usize,
) -> anyhow::Result<(Duration, Duration)> {
    call(asking, &session.id, n)?;
    let form = loop {
        if let Event::FormRequested { form_id, .. } = &*session.seen.recv().await? {
            break form_id.clone();
        }
    };
    // As a person would, after the form is stored (it shows on another replica only then).
    tokio::time::sleep(SETTLE).await;
    let started = WireClock::start();
    answer(answering, &session.id, &form)?;
    loop {
        if let Event::ToolCallFinished { result, .. } = &*session.asked.recv().await? {
            let finished = Instant::now();
            check(result.as_ref(), n)?;
            let out = WireClock::first_out(started)?;
            return Ok((out, finished - started));
        }
    }
}

/// `forms` forms open across `count` replicas (sessions in turn), then all answered at once, each
/// on the next replica; forms answered per second, from the first answer to the last result.
async fn throughput(
    plugin: &str,
    url: &StoreUrl,
    count: usize,
    forms: usize,
) -> anyhow::Result<f64> {
    let mut replicas = Vec::new();
    for _ in 0..count {
        replicas.push(replica(plugin, url).await?);
    }
    let (tx, mut events) = mpsc::unbounded_channel();
    let mut sessions = Vec::with_capacity(forms);
    for n in 0..forms {
        let holder = &replicas[n % count];
        let id = holder.create_session();
        let (_, mut live) = holder.subscribe(&id)?;
        let tx = tx.clone();
        let session = id.clone();
        tokio::spawn(async move {
            while let Ok(event) = live.recv().await {
                if matches!(*event, Event::ToolCallFinished { .. })
                    && tx.send(session.clone()).is_err()
                {
                    return;
                }
            }
        });
        call(holder, &id, n)?;
        sessions.push(id);
    }
    // Every form open and shown on the replica that will answer it.
    let mut shown: HashMap<&str, String> = HashMap::with_capacity(forms);
    let deadline = Instant::now() + Duration::from_secs(120);
    while shown.len() < forms {
        for (n, session) in sessions.iter().enumerate() {
            if shown.contains_key(session.as_str()) {
                continue;
            }
            let answerer = &replicas[(n + 1) % count];
            if !answerer.has_session(session) {
                continue;
            }
            let form = answerer
                .events(session)?
                .iter()
                .find_map(|event| match &**event {
                    Event::FormRequested { form_id, .. } => Some(form_id.clone()),
                    _ => None,
                });
            if let Some(form) = form {
                shown.insert(session, form);
            }
        }
        if Instant::now() > deadline {
            bail!(
                "{} of {forms} forms shown on their answering replica",
                shown.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = Instant::now();
    for (n, session) in sessions.iter().enumerate() {
        answer(
            &replicas[(n + 1) % count],
            session,
            &shown[session.as_str()],
        )?;
    }
    let mut finished = 0;
    while finished < forms {
        tokio::time::timeout(Duration::from_secs(120), events.recv())
            .await
            .context("results within 120 s")?
            .context("events ended")?;
        finished += 1;
    }
    let rate = forms as f64 / started.elapsed().as_secs_f64();
    for host in replicas {
        host.shutdown().await;
    }
    Ok(rate)
}

/// Forms opened and answered at once before [`pending_memory`] counts: four times the store
/// pool's connections.
const WARM_UP_FORMS: usize = 64;

/// The host's resident growth per form while `forms` forms are open on one replica, in KB.
async fn pending_memory(plugin: &str, url: &StoreUrl, forms: usize) -> anyhow::Result<f64> {
    let host = replica_sharing(plugin, url, true).await?;
    // Forms first, many at once and then answered, so that what all calls share is in before
    // the count starts: the connection code's first use, the store pool's connections (opened
    // as its writers get busy), the allocator's room per thread. What is counted is then what
    // each pending form adds.
    let mut warming = Vec::new();
    for n in 0..WARM_UP_FORMS {
        let warm = host.create_session();
        let (_, live) = host.subscribe(&warm)?;
        call(&host, &warm, n)?;
        warming.push((warm, live));
    }
    for (warm, mut live) in warming {
        loop {
            if let Event::FormRequested { form_id, .. } = &*live.recv().await? {
                answer(&host, &warm, form_id)?;
                break;
            }
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = crate::resident_bytes()?;
    let mut sessions = Vec::with_capacity(forms);
    for n in 0..forms {
        let id = host.create_session();
        call(&host, &id, n)?;
        sessions.push(id);
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let open = sessions
            .iter()
            .filter(|id| {
                host.events(id).is_ok_and(|events| {
                    events
                        .iter()
                        .any(|event| matches!(**event, Event::FormRequested { .. }))
                })
            })
            .count();
        if open == forms {
            break;
        }
        if Instant::now() > deadline {
            bail!("{open} of {forms} forms open");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // What waits to be written is not what a pending form holds: let the store catch up.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = crate::resident_bytes()?.saturating_sub(before);
    host.shutdown().await;
    Ok(grown as f64 / forms as f64 / 1024.0)
}
