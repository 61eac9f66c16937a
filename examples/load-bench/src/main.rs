//! The host under load, for `cargo xtask bench`: many sessions against one Streamable HTTP
//! plugin, written with the official TypeScript SDK (`tests/peers/http_plugin.mjs`) or with the
//! official Rust SDK ([`rust_plugin`], which has no garbage collector to add its pauses).
//!
//! It reports the host's memory per pending form (resident set growth while N forms are open,
//! divided by N) and the answer round trip — from the UI's answer to the tool's result at the
//! UI, through the plugin — for one session alone, and under load: N forms open, answered one
//! after another while the others wait. Both ways of reaching the plugin are measured: an MCP
//! session per host session (the default), and one MCP session shared by all host sessions
//! (`share_session = true`; the plugin sends each form on its call's stream).
//!
//! A round trip is the host's work and the plugin's. The host's own part is timed apart, from
//! its `formwork::wire` trace events: answer to the answer's message leaving, and the result's
//! message arriving to the result's event. The rest is the plugin's, the kernel's, and time
//! spent waiting for a core; a plugin that stalls (node pausing for its JIT compiler and
//! garbage collector) shows there.
//!
//! usage: load-bench <peers dir> [sessions...]   (default: 1000 10000)
//!
//! `load-bench --replicas <peers dir> FORMS` measures replicas on one PostgreSQL database (see
//! [`replicas`]). Two measurements serve the MCP Apps part of the browser bench:
//! `load-bench --direct-calls ...`, its direct baseline (see [`direct`]), and
//! `load-bench --socket-calls ...`, a page's call without the browser (see [`socket_calls`]).
//! `load-bench --serve-bench-plugin [--cert FILE --key FILE]` is an instrument of the bench's HTTP
//! part ([`bench_plugin`]).

mod bench_plugin;
mod direct;
mod replicas;
mod rust_plugin;
mod socket_calls;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use formwork_host::config::Config;
use formwork_host::{Command, Event, FormAnswer, Host, HostOptions};
use serde_json::json;
use tokio::sync::mpsc;

const USAGE: &str = "usage: load-bench <peers dir> [sessions...]";

/// Runs each measurement in a process of its own (`load-bench --run <peers> <plugin> <mode>
/// <size>`), so that memory one run freed does not make the next look small.
fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
    };
    if let [flag] = args.as_slice()
        && flag == "--serve-plugin"
    {
        return runtime()?.block_on(rust_plugin::serve());
    }
    if let Some((flag, tls)) = args.split_first()
        && flag == "--serve-bench-plugin"
    {
        let identity = match tls {
            [] => None,
            [cert_flag, cert, key_flag, key] if cert_flag == "--cert" && key_flag == "--key" => {
                Some(bench_plugin::Identity {
                    cert: Path::new(cert),
                    key: Path::new(key),
                })
            }
            _ => bail!("usage: load-bench --serve-bench-plugin [--cert FILE --key FILE]"),
        };
        // One thread, as the TS instrument has: the bench pins it to a core of its own.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        return runtime.block_on(bench_plugin::serve(identity));
    }
    if let [flag, command, tool, arguments, count] = args.as_slice()
        && flag == "--direct-calls"
    {
        return runtime()?.block_on(direct::calls(command, tool, arguments, count.parse()?));
    }
    if let [flag, origin, token, session, server, tool, arguments, count] = args.as_slice()
        && flag == "--socket-calls"
    {
        let target = socket_calls::Target {
            origin,
            token,
            session,
        };
        return runtime()?.block_on(socket_calls::calls(
            &target,
            server,
            tool,
            arguments,
            count.parse()?,
        ));
    }
    if let [flag, peers, engine, forms] = args.as_slice()
        && flag == "--replica-memory"
    {
        return runtime()?.block_on(replicas::memory(Path::new(peers), engine, forms.parse()?));
    }
    if let [flag, peers, forms] = args.as_slice()
        && flag == "--replicas"
    {
        WireClock::install()?;
        return runtime()?.block_on(replicas::run(Path::new(peers), forms.parse()?));
    }
    if let [flag, peers, plugin, mode, size] = args.as_slice()
        && flag == "--run"
    {
        let plugin = PluginKind::parse(plugin)?;
        let mode = Mode::parse(mode)?;
        let size: usize = size.parse()?;
        WireClock::install()?;
        return runtime()?.block_on(measure(Path::new(peers), plugin, mode, size));
    }
    let (peers, sizes) = args.split_first().context(USAGE)?;
    let mut sizes: Vec<usize> = sizes
        .iter()
        .map(|arg| arg.parse())
        .collect::<Result<_, _>>()
        .context(USAGE)?;
    if sizes.is_empty() {
        sizes = vec![1000, 10_000];
    }
    let open_files = raise_open_files_limit(sizes.iter().copied().max().unwrap_or(0))?;
    for (plugin, mode) in [
        (PluginKind::TypeScript, Mode::PerSession),
        (PluginKind::TypeScript, Mode::Shared),
        (PluginKind::Rust, Mode::PerSession),
        (PluginKind::Rust, Mode::Shared),
    ] {
        println!("{}, {}:", plugin.label(), mode.label());
        for &size in &sizes {
            // Each pending form holds its call's stream, and per session also the listening
            // stream: sockets on both sides, in this process and in the plugin's.
            let sockets = size as u64 * mode.sockets_per_form() + 512;
            if sockets > open_files {
                println!(
                    "  {size} sessions: not run, {sockets} sockets needed and {open_files} open files allowed per process"
                );
                continue;
            }
            let status = std::process::Command::new(std::env::current_exe()?)
                .args([
                    "--run",
                    peers,
                    plugin.name(),
                    mode.name(),
                    &size.to_string(),
                ])
                .status()?;
            if !status.success() {
                bail!(
                    "the run of {size} sessions ({}, {}) failed",
                    plugin.name(),
                    mode.name()
                );
            }
        }
    }
    println!(
        "A round trip includes the plugin's own time: under load the TS SDK plugin's tail is node's own pauses (JIT\n\
         compiles, garbage collection), which the Rust SDK plugin does not have; the host's own part is under each."
    );
    Ok(())
}

/// One plugin, the single-session baseline, then `size` sessions with a form open each.
async fn measure(peers: &Path, kind: PluginKind, mode: Mode, size: usize) -> anyhow::Result<()> {
    let plugin = HttpPlugin::start(peers, kind, mode)?;
    let baseline = single_session(&plugin.url, mode, 200).await?;
    let run = many_sessions(&plugin.url, mode, size).await?;
    let per_form = run.grown_bytes as f64 / size as f64 / 1024.0;
    println!("  {size} sessions, all answered by their own calls:");
    println!(
        "    host memory per pending form {per_form:.1} KB ({})",
        verdict(per_form <= 20.0, "<= 20 KB")
    );
    let ratio = ms(run.round_trip.p99) / ms(baseline.round_trip);
    println!(
        "    answer round trip: p50 {:.2} ms, p99 {:.2} ms = {ratio:.2}x the single-session median of {:.2} ms ({})",
        ms(run.round_trip.p50),
        ms(run.round_trip.p99),
        ms(baseline.round_trip),
        verdict(ratio <= 3.0, "<= 3x"),
    );
    println!(
        "      the host's own part of it: p50 {:.2} ms, p99 {:.2} ms (single session: median {:.2} ms); the rest is the plugin's",
        ms(run.host_part.p50),
        ms(run.host_part.p99),
        ms(baseline.host_part),
    );
    Ok(())
}

#[derive(Clone, Copy)]
enum PluginKind {
    /// `tests/peers/http_plugin.mjs`, on node.
    TypeScript,
    /// [`rust_plugin`], this binary with `--serve-plugin`.
    Rust,
}

impl PluginKind {
    fn name(self) -> &'static str {
        match self {
            PluginKind::TypeScript => "ts",
            PluginKind::Rust => "rust",
        }
    }

    fn parse(name: &str) -> anyhow::Result<PluginKind> {
        match name {
            "ts" => Ok(PluginKind::TypeScript),
            "rust" => Ok(PluginKind::Rust),
            other => bail!("unknown plugin `{other}`"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            PluginKind::TypeScript => "TS SDK plugin",
            PluginKind::Rust => "Rust SDK plugin",
        }
    }
}

#[derive(Clone, Copy)]
enum Mode {
    /// An MCP session per host session; the plugin's forms come on the listening stream.
    PerSession,
    /// `share_session = true`; the plugin's forms come on their calls' streams.
    Shared,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::PerSession => "per-session",
            Mode::Shared => "shared",
        }
    }

    fn parse(name: &str) -> anyhow::Result<Mode> {
        match name {
            "per-session" => Ok(Mode::PerSession),
            "shared" => Ok(Mode::Shared),
            other => bail!("unknown mode `{other}`"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::PerSession => "an MCP session per host session (default)",
            Mode::Shared => "one MCP session shared by the host sessions (share_session = true)",
        }
    }

    fn sockets_per_form(self) -> u64 {
        match self {
            Mode::PerSession => 2,
            Mode::Shared => 1,
        }
    }
}

fn verdict(pass: bool, target: &str) -> String {
    format!("target {target}: {}", if pass { "PASS" } else { "MISS" })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The plugin process; killed when dropped.
struct HttpPlugin {
    child: Child,
    url: String,
}

impl HttpPlugin {
    fn start(peers: &Path, kind: PluginKind, mode: Mode) -> anyhow::Result<HttpPlugin> {
        let mut command = match kind {
            PluginKind::TypeScript => {
                let node = peers.join("npm/node_modules/.bin/node");
                let node = if node.exists() {
                    node
                } else {
                    PathBuf::from("node")
                };
                let mut command = Process::new(node);
                command
                    .arg(peers.join("npm/http_plugin.mjs"))
                    .arg("0")
                    .args(matches!(mode, Mode::Shared).then_some("--related"));
                command
            }
            PluginKind::Rust => {
                let mut command = Process::new(std::env::current_exe()?);
                command.arg("--serve-plugin");
                command
            }
        };
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the HTTP plugin")?;
        let stdout = child.stdout.take().context("the plugin's stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let port = line
            .trim()
            .strip_prefix("listening ")
            .context("the plugin did not start")?;
        Ok(HttpPlugin {
            url: format!("http://127.0.0.1:{port}/mcp"),
            child,
        })
    }
}

impl Drop for HttpPlugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn host(url: &str, mode: Mode) -> anyhow::Result<Host> {
    let shared = matches!(mode, Mode::Shared);
    let config = Config::from_toml(
        &format!(
            "[mcp_servers.http]\nurl = {url:?}\ndefault_tools_approval_mode = \"approve\"\nshare_session = {shared}\n"
        ),
        None,
    )?;
    let options = HostOptions {
        request_timeout: Duration::from_secs(600),
        ..HostOptions::default()
    };
    Ok(Host::new(config, options))
}

fn call(host: &Host, session: &str, n: usize) -> anyhow::Result<()> {
    host.command(
        session,
        Command::CallTool {
            server: "http".to_owned(),
            tool: "ask".to_owned(),
            arguments: Some(json!({ "n": n })),
        },
    )?;
    Ok(())
}

fn answer(host: &Host, session: &str, form_id: &str) -> anyhow::Result<()> {
    host.command(
        session,
        Command::AnswerForm {
            form_id: form_id.to_owned(),
            answer: FormAnswer::Accept {
                content: serde_json::Map::new(),
            },
        },
    )?;
    Ok(())
}

/// Medians of one session's answers.
struct Baseline {
    round_trip: Duration,
    host_part: Duration,
}

/// The answer round trip of one session, `rounds` times in a row.
async fn single_session(url: &str, mode: Mode, rounds: usize) -> anyhow::Result<Baseline> {
    let host = host(url, mode)?;
    let session = host.create_session();
    let (_, mut events) = host.subscribe(&session)?;
    let mut round_trips = Vec::with_capacity(rounds);
    let mut host_parts = Vec::with_capacity(rounds);
    for n in 0..rounds {
        call(&host, &session, n)?;
        let form = loop {
            if let Event::FormRequested { form_id, .. } = &*events.recv().await? {
                break form_id.clone();
            }
        };
        let started = WireClock::start();
        answer(&host, &session, &form)?;
        loop {
            if let Event::ToolCallFinished { result, .. } = &*events.recv().await? {
                let finished = Instant::now();
                check(result.as_ref(), n)?;
                round_trips.push(finished - started);
                host_parts.push(WireClock::host_part(started, finished)?);
                break;
            }
        }
    }
    host.shutdown().await;
    Ok(Baseline {
        round_trip: Samples::of(round_trips).p50,
        host_part: Samples::of(host_parts).p50,
    })
}

struct Samples {
    p50: Duration,
    p99: Duration,
}

impl Samples {
    fn of(mut samples: Vec<Duration>) -> Samples {
        samples.sort();
        Samples {
            p50: samples[samples.len() / 2],
            p99: samples[samples.len() * 99 / 100],
        }
    }
}

struct LoadRun {
    grown_bytes: u64,
    round_trip: Samples,
    host_part: Samples,
}

/// `size` sessions, all with a form open at once; then answered one after another.
async fn many_sessions(url: &str, mode: Mode, size: usize) -> anyhow::Result<LoadRun> {
    let host = host(url, mode)?;
    let before = resident_bytes()?;
    let (tx, mut events) = mpsc::unbounded_channel();
    let mut sessions = Vec::with_capacity(size);
    for n in 0..size {
        let session = host.create_session();
        let (_, mut live) = host.subscribe(&session)?;
        let tx = tx.clone();
        let id = session.clone();
        tokio::spawn(async move {
            while let Ok(event) = live.recv().await {
                let interesting = matches!(
                    *event,
                    Event::FormRequested { .. } | Event::ToolCallFinished { .. }
                );
                if interesting && tx.send((id.clone(), event, Instant::now())).is_err() {
                    return;
                }
            }
        });
        call(&host, &session, n)?;
        sessions.push(session);
    }
    let mut forms: HashMap<String, String> = HashMap::with_capacity(size);
    while forms.len() < size {
        let Some((session, event, _)) = events.recv().await else {
            bail!("events ended")
        };
        match &*event {
            Event::FormRequested { form_id, .. } => {
                forms.insert(session, form_id.clone());
            }
            Event::ToolCallFinished { result, error, .. } => {
                let result = result.as_ref().map(|result| result.to_string());
                bail!(
                    "a call ended before its form ({} of {size} open): error {error:?}, result {result:?}",
                    forms.len()
                )
            }
            _ => {}
        }
    }
    let grown_bytes = resident_bytes()?.saturating_sub(before);
    // Under load: the forms are answered one after another while the rest stay open, and
    // each answer's round trip is timed on its own.
    let index: HashMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .map(|(n, s)| (s.as_str(), n))
        .collect();
    let mut round_trips = Vec::with_capacity(size);
    let mut host_parts = Vec::with_capacity(size);
    for session in &sessions {
        let started = WireClock::start();
        answer(&host, session, &forms[session])?;
        loop {
            let Some((from, event, at)) = events.recv().await else {
                bail!("events ended")
            };
            if let Event::ToolCallFinished { result, .. } = &*event {
                if from != *session {
                    bail!("a call of another session finished first");
                }
                check(result.as_ref(), index[from.as_str()])?;
                round_trips.push(at - started);
                host_parts.push(WireClock::host_part(started, at)?);
                break;
            }
        }
    }
    host.shutdown().await;
    Ok(LoadRun {
        grown_bytes,
        round_trip: Samples::of(round_trips),
        host_part: Samples::of(host_parts),
    })
}

/// When the host's `formwork::wire` trace events happened during the answer being timed: `true`
/// for a message leaving for the plugin, `false` for one read from it. Answers are timed one at
/// a time; `None` between them, so that nothing is kept while forms open (memory is measured
/// then).
static WIRE: Mutex<Option<Vec<(bool, Instant)>>> = Mutex::new(None);

/// A tracing layer that notes the time of each wire event, and nothing else.
struct WireClock;

impl WireClock {
    fn install() -> anyhow::Result<()> {
        use tracing_subscriber::layer::SubscriberExt;
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(WireClock))?;
        Ok(())
    }

    /// Starts noting events; returns the start of an answer.
    fn start() -> Instant {
        *WIRE.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(Vec::new());
        Instant::now()
    }

    /// From the answer that started at `started` to its message leaving for the plugin.
    fn first_out(started: Instant) -> anyhow::Result<Duration> {
        let wire = WIRE
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take()
            .unwrap_or_default();
        let out = wire
            .iter()
            .find(|(out, _)| *out)
            .map(|&(_, at)| at)
            .context("an answer's message was not traced")?;
        Ok(out.saturating_duration_since(started))
    }

    /// The host's part of the answer that started at `started` and whose result reached the
    /// UI at `finished`: up to the first message out, and from the last message in.
    fn host_part(started: Instant, finished: Instant) -> anyhow::Result<Duration> {
        let wire = WIRE
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take()
            .unwrap_or_default();
        let out = wire.iter().find(|(out, _)| *out).map(|&(_, at)| at);
        let back = wire
            .iter()
            .rev()
            .find(|&&(out, at)| !out && at <= finished)
            .map(|&(_, at)| at);
        let (Some(out), Some(back)) = (out, back) else {
            bail!("an answer's messages were not traced")
        };
        Ok(out.saturating_duration_since(started) + finished.saturating_duration_since(back))
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for WireClock {
    fn register_callsite(
        &self,
        metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if metadata.target() == "formwork::wire" {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let at = Instant::now();
        let mut direction = Direction(None);
        event.record(&mut direction);
        if let Some(out) = direction.0
            && let Some(wire) = WIRE
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .as_mut()
        {
            wire.push((out, at));
        }
    }
}

/// Reads the `direction` field of a wire event.
struct Direction(Option<bool>);

impl tracing::field::Visit for Direction {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "direction" {
            self.0 = Some(value == "out");
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

/// The result must carry this call's own number and the defaults it was accepted with.
fn check(result: Option<&serde_json::Value>, n: usize) -> anyhow::Result<()> {
    let text = result
        .and_then(|result| result["content"][0]["text"].as_str())
        .context("a call ended without a result")?;
    let expected = format!(
        r#"result: {{"action":"accept","content":{{"strategy":"safe","retries":3}}}} n={n}"#
    );
    if text != expected {
        bail!("call {n} got {text:?}");
    }
    Ok(())
}

/// Each open form holds connections, so thousands of them need more descriptors than the usual
/// soft limit of 1,024. A privileged run also lifts the hard limit; the plugin, started after,
/// inherits what was raised. Returns the limit now in force.
fn raise_open_files_limit(sessions: usize) -> anyhow::Result<u64> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let wanted = (sessions as u64).saturating_mul(2).saturating_add(1024);
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= wanted {
        return Ok(soft);
    }
    if hard < wanted && setrlimit(Resource::RLIMIT_NOFILE, wanted, wanted).is_ok() {
        return Ok(wanted);
    }
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    Ok(hard)
}

/// The process's resident set, from /proc.
fn resident_bytes() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .context("no VmRSS in /proc/self/status")?
        .parse()?;
    Ok(kb * 1024)
}
