//! `cargo xtask bench`: the elicitation round trip through formwork against two other clients of the same plugin.
//!
//! One plugin, `tests/peers/bench_plugin.mjs` (the official TS SDK server), sends sequential `elicitation/create`
//! requests and times each one itself, from writing the request to parsing the result; so every client is timed
//! at the same points by the same code. The clients:
//! - formwork: the release binary, `formwork call --plugin 'node bench_plugin.mjs' bench --accept-defaults`;
//! - the TS SDK client: `tests/peers/bench_ts_client.mjs`, the official `Client` with an auto-accepting handler;
//! - the floor: [`floor`], a raw JSON-RPC client in Rust that answers each request with one fixed write.
//!
//! The same round trip over Streamable HTTP, plain and TLS, through formwork and the TS SDK client, and over plain
//! HTTP through a raw floor: [`http`].
//! The host's own time in a model turn with one tool call, against a simulated provider: [`model`].
//!
//! The machine is noisy, so the clients take turns over several rounds (a fresh process each, with its own
//! warm-up) and the samples are pooled per client. The report is a table of median and p99 per client and the
//! targets with PASS/MISS. A miss still exits 0: this is a report. Only a client that fails makes it fail.
//!
//! The plugin is the instrument, and node's JIT compiles and GC pauses land on every client's samples (a slow
//! round trip recurs at the same iterations whatever the client). It runs single-threaded ([`INSTRUMENT_FLAGS`]),
//! and the report gives the floor's own tail beside formwork's p99.

mod browser;
mod codex;
mod floor;
mod http;
mod model;
mod rounds;
mod workbench;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::{cargo, peers, run_command, target_dir};

const USAGE: &str = "\
usage: cargo xtask bench [--rounds R] [--n N] [--warmup W] [--formwork PATH] [--load N,N] [--forms N]
                         [--mrtr-rounds R] [--mrtr-calls C] [--apps N] [--http-rounds R] [--model-turns N]
                         [--codex-forms N] [--replica-forms N] [--only PART]
  --rounds R       rounds of the round-trip part, clients alternated (default 10)
  --n N            measured elicitations per client and round of the round-trip and HTTP parts (default 200)
  --warmup W       unmeasured elicitations before them (default 300)
  --formwork PATH  time this formwork binary instead of building target/release/formwork
  --load N,N       session counts of the load part (default 1000,10000; 0 skips it)
  --forms N        forms of the browser part, the workbench in Chromium (default 50; 0 skips it)
  --mrtr-rounds R  rounds of the 2026-07-28 part, client and server side (default 5; 0 skips it)
  --mrtr-calls C   calls per contender and round of that part (default 10)
  --apps N         calls per tool of the MCP Apps part, in Chromium (default 30; 0 skips it)
  --http-rounds R  rounds of the HTTP part, the round trip over Streamable HTTP and TLS (default 10; 0 skips it)
  --model-turns N  turns per wire of the model part, the host's time in a model turn (default 200; 0 skips it)
  --codex-forms N  forms per runtime of the Codex part, the executor's part of a form round (default 300; 0 skips it)
  --replica-forms N  forms of the replicas part, on PostgreSQL: open at once per throughput run, and pending while
                   memory is measured (default 1000; 0 skips it)
  --only PART      run one part: round-trip, http, mrtr, load, model, codex, replicas, forms or apps (its own flags
                   still apply)";

/// formwork's median against the TS SDK client's, formwork's median against the floor's, formwork's p99 against
/// its own median: each must stay at or below its limit.
const TARGET_VS_TS_SDK: f64 = 0.5;
const TARGET_VS_FLOOR: f64 = 1.5;
const TARGET_P99_OVER_MEDIAN: f64 = 2.0;

/// Node flags of the plugin, the instrument. On two cores, the background threads of V8's compiler and GC compete
/// with the client for the second core and put multi-millisecond stalls on every client's samples alike; a
/// single-threaded instrument keeps its own work on its own thread. Clients run with node's defaults.
const INSTRUMENT_FLAGS: &[&str] = &[
    "--single-threaded",
    "--min-semi-space-size=256",
    "--max-semi-space-size=256",
];

/// The fixtures this command copies next to the pinned node_modules.
const PLUGIN: &str = "bench_plugin.mjs";
const TS_CLIENT: &str = "bench_ts_client.mjs";
/// The TS SDK plugin of the load part (`examples/load-bench`).
const LOAD_PLUGIN: &str = "http_plugin.mjs";
/// The form every part's plugin asks for, and the file it reads it from.
const FORM: &str = "bench_form.mjs";
const FORM_DATA: &str = "bench_form.json";

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    if args.iter().any(|arg| arg == "-h" || arg == "--help") {
        println!("{USAGE}");
        return Ok(());
    }
    let options = Options::parse(args)?;
    let setup = Setup::prepare(root, options.formwork.as_deref())?;
    if options.round_trip {
        round_trip(&options, &setup)?;
    }
    if options.http_rounds > 0 {
        http::run(
            root,
            &setup,
            &http::Options {
                rounds: options.http_rounds,
                per_round: options.per_round,
                warmup: options.warmup,
            },
        )?;
    }
    if options.mrtr.rounds > 0 {
        let pinned = Pinning::start(&setup);
        let node_command = &setup.plugin_command[..setup.plugin_command.len() - 1];
        rounds::run(
            &rounds::Tools {
                root,
                formwork: &setup.formwork,
                node_command,
                npm_dir: &setup.npm_dir,
            },
            &options.mrtr,
        )?;
        drop(pinned);
    }
    if !options.load_sessions.is_empty() {
        load_bench(root, &options.load_sessions)?;
    }
    if options.model_turns > 0 {
        model::run(
            root,
            &setup.formwork,
            &model::Options {
                turns: options.model_turns,
            },
        )?;
    }
    if options.codex_forms > 0 {
        codex::run(
            root,
            &setup.formwork,
            &setup.node,
            &codex::Options {
                forms: options.codex_forms,
            },
        )?;
    }
    if options.replica_forms > 0 {
        replicas_bench(root, options.replica_forms)?;
    }
    if options.forms == 0 && options.apps == 0 {
        return Ok(());
    }
    browser::run(
        root,
        &setup.formwork,
        &setup.node,
        &browser::Parts {
            forms: options.forms,
            apps: options.apps,
        },
    )
}

/// The elicitation round trip: formwork, the TS SDK client and the floor, in turns.
fn round_trip(options: &Options, setup: &Setup) -> Result<()> {
    let tool_args = serde_json::json!({ "n": options.per_round, "warmup": options.warmup });

    let load_before = load_average();
    let pinned = Pinning::start(setup);
    let labels = CLIENTS.map(Client::label);
    let summaries = take_turns(options.rounds, options.per_round, &labels, |idx| {
        CLIENTS[idx].run(setup, &tool_args)
    })?;
    drop(pinned);
    let load = [load_before, load_average()];
    print_report(options, &summaries, &load);
    Ok(())
}

/// Runs each contender once per round, the order rotated every round so that none always runs first, and pools
/// each one's samples. `run(idx)` is one run of contender `labels[idx]`: its `per_round` samples in nanoseconds.
fn take_turns(
    rounds: usize,
    per_round: usize,
    labels: &[&str],
    mut run: impl FnMut(usize) -> Result<Vec<u64>>,
) -> Result<Vec<Summary>> {
    let mut samples = vec![Vec::new(); labels.len()];
    let mut round_medians = vec![Vec::new(); labels.len()];
    let width = labels.iter().map(|label| label.len()).max().unwrap_or(0);
    for round in 0..rounds {
        for offset in 0..labels.len() {
            let idx = (round + offset) % labels.len();
            let label = labels[idx];
            let mut ns = run(idx)
                .with_context(|| format!("round {}: the {label} client failed", round + 1))?;
            if ns.len() != per_round {
                bail!(
                    "round {}: {label} returned {} samples, expected {per_round}",
                    round + 1,
                    ns.len(),
                );
            }
            ns.sort_unstable();
            let median = percentile(&ns, 0.5);
            eprintln!(
                "xtask: round {}/{rounds}: {label:<width$} median {}",
                round + 1,
                micros(median)
            );
            round_medians[idx].push(median);
            samples[idx].extend(ns);
        }
    }
    Ok(samples
        .into_iter()
        .zip(round_medians)
        .map(|(mut ns, round_medians)| {
            ns.sort_unstable();
            Summary {
                count: ns.len(),
                median: percentile(&ns, 0.5),
                p99: percentile(&ns, 0.99),
                round_medians,
            }
        })
        .collect())
}

/// The host under load (`examples/load-bench`): memory per pending form and the answer round
/// trip with many forms open, against a Streamable HTTP plugin on the TS SDK (`tests/peers`) and
/// one on the Rust SDK, each with an MCP session per host session and with `share_session`.
fn load_bench(root: &Path, sessions: &[usize]) -> Result<()> {
    let target = target_dir(root);
    let load_bench = build_load_bench(root, "the load part")?;
    println!();
    println!("host under load: sessions with a form open at once, one Streamable HTTP plugin");
    run_command(
        Command::new(load_bench)
            .arg(target.join("peers"))
            .args(sessions.iter().map(ToString::to_string)),
    )
    .context("running the load bench")
}

/// Replicas on one PostgreSQL database (`load-bench --replicas`, a throwaway cluster): the
/// answer's path across replicas beside one replica on SQLite and on PostgreSQL, forms answered per
/// second with 1, 2 and 4 replicas, and memory per pending form.
fn replicas_bench(root: &Path, forms: usize) -> Result<()> {
    let target = target_dir(root);
    let load_bench = build_load_bench(root, "the replicas part")?;
    println!();
    println!("replicas on one PostgreSQL database, one Streamable HTTP plugin (Rust SDK):");
    run_command(
        Command::new(load_bench)
            .arg("--replicas")
            .arg(target.join("peers"))
            .arg(forms.to_string()),
    )
    .context("running the replicas bench")
}

/// Builds the release `load-bench` (`examples/load-bench`), which serves `role` in a part of
/// the bench; its path.
fn build_load_bench(root: &Path, role: &str) -> Result<PathBuf> {
    run_command(
        cargo()
            .args([
                "build",
                "--release",
                "--quiet",
                "--package",
                "formwork-load-bench",
            ])
            .current_dir(root),
    )
    .with_context(|| format!("building load-bench, {role}"))?;
    Ok(target_dir(root).join("release/load-bench"))
}

struct Options {
    rounds: usize,
    per_round: usize,
    warmup: usize,
    /// A prebuilt binary to time, e.g. an experimental build; none means build the release binary.
    formwork: Option<PathBuf>,
    /// Session counts for the load part; empty skips it.
    load_sessions: Vec<usize>,
    /// Measured forms of the browser part; 0 skips it.
    forms: usize,
    /// The 2026-07-28 part.
    mrtr: rounds::Options,
    /// Calls per tool of the MCP Apps part; 0 skips it.
    apps: usize,
    /// Whether the elicitation round trip runs (not with `--only` another part).
    round_trip: bool,
    /// Rounds of the round trip over Streamable HTTP; 0 skips it.
    http_rounds: usize,
    /// Measured turns per wire of the model part; 0 skips it.
    model_turns: usize,
    /// Measured forms per runtime of the Codex part; 0 skips it.
    codex_forms: usize,
    /// Forms of the replicas part; 0 skips it.
    replica_forms: usize,
}

impl Options {
    fn parse(args: &[String]) -> Result<Self> {
        let mut options = Options {
            // Short rounds and many of them: a round now and then runs slow as a whole (the instrument's JIT
            // settles differently in some processes), and pooled over ten rounds one such round moves no median.
            rounds: 10,
            per_round: 200,
            warmup: 300,
            formwork: None,
            load_sessions: vec![1000, 10_000],
            forms: 50,
            mrtr: rounds::Options {
                rounds: 5,
                calls: 10,
            },
            apps: 30,
            round_trip: true,
            http_rounds: 10,
            model_turns: 200,
            codex_forms: 300,
            replica_forms: 1000,
        };
        let mut only = None;
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
            let slot = match flag.as_str() {
                "--rounds" => &mut options.rounds,
                "--n" => &mut options.per_round,
                "--warmup" => &mut options.warmup,
                "--forms" => &mut options.forms,
                "--mrtr-rounds" => &mut options.mrtr.rounds,
                "--mrtr-calls" => &mut options.mrtr.calls,
                "--apps" => &mut options.apps,
                "--http-rounds" => &mut options.http_rounds,
                "--model-turns" => &mut options.model_turns,
                "--codex-forms" => &mut options.codex_forms,
                "--replica-forms" => &mut options.replica_forms,
                "--only" => {
                    only = Some(value.clone());
                    continue;
                }
                "--formwork" => {
                    options.formwork = Some(PathBuf::from(value));
                    continue;
                }
                "--load" => {
                    options.load_sessions = value
                        .split(',')
                        .filter(|part| !part.is_empty() && *part != "0")
                        .map(str::parse)
                        .collect::<Result<_, _>>()
                        .with_context(|| {
                            format!("--load {value}: not a list of numbers\n{USAGE}")
                        })?;
                    continue;
                }
                other => bail!("unexpected argument `{other}`\n{USAGE}"),
            };
            *slot = value
                .parse()
                .with_context(|| format!("{flag} {value}: not a number\n{USAGE}"))?;
        }
        if options.rounds == 0 || options.per_round == 0 {
            bail!("--rounds and --n must be at least 1");
        }
        if let Some(part) = only {
            let keep = |name: &str| part == name;
            let parts = [
                "round-trip",
                "http",
                "mrtr",
                "load",
                "model",
                "codex",
                "replicas",
                "forms",
                "apps",
            ];
            if !parts.contains(&part.as_str()) {
                bail!("--only {part}: not a part of the bench\n{USAGE}");
            }
            options.round_trip = keep("round-trip");
            if !keep("http") {
                options.http_rounds = 0;
            }
            if !keep("mrtr") {
                options.mrtr.rounds = 0;
            }
            if !keep("load") {
                options.load_sessions.clear();
            }
            if !keep("model") {
                options.model_turns = 0;
            }
            if !keep("codex") {
                options.codex_forms = 0;
            }
            if !keep("replicas") {
                options.replica_forms = 0;
            }
            if !keep("forms") {
                options.forms = 0;
            }
            if !keep("apps") {
                options.apps = 0;
            }
        }
        Ok(options)
    }
}

/// Paths resolved once: the release binary, node, and the fixtures next to `node_modules`.
struct Setup {
    formwork: PathBuf,
    node: PathBuf,
    npm_dir: PathBuf,
    /// How every client starts the plugin: pinned to its own CPU when `taskset` is there, node with
    /// [`INSTRUMENT_FLAGS`], the plugin file.
    plugin_command: Vec<String>,
    ts_client: PathBuf,
    /// Where the plugin and the clients run, when they can be pinned.
    cpus: Option<Cpus>,
}

impl Setup {
    fn prepare(root: &Path, prebuilt: Option<&Path>) -> Result<Self> {
        let target = target_dir(root);
        let npm_dir = target.join("peers/npm");
        if !npm_dir
            .join("node_modules/@modelcontextprotocol/sdk")
            .is_dir()
        {
            peers::install(root)?;
        }
        // Copied every run, so that the imports resolve against the pinned SDK and edits take effect.
        for name in [PLUGIN, TS_CLIENT, LOAD_PLUGIN, FORM, FORM_DATA]
            .into_iter()
            .chain(rounds::FIXTURES)
        {
            let source = root.join("tests/peers").join(name);
            std::fs::copy(&source, npm_dir.join(name))
                .with_context(|| format!("copying {}", source.display()))?;
        }
        let formwork = match prebuilt {
            Some(path) => std::path::absolute(path)?,
            None => {
                run_command(
                    cargo()
                        .args(["build", "--release", "--package", "formwork"])
                        .current_dir(root),
                )
                .context("building the release formwork")?;
                target.join("release/formwork")
            }
        };
        let bundled_node = npm_dir.join("node_modules/.bin/node");
        let node = if bundled_node.is_file() {
            bundled_node
        } else {
            PathBuf::from("node")
        };
        let cpus = Cpus::find();
        let mut plugin_command = Vec::new();
        if let Some(cpus) = &cpus {
            plugin_command.extend([
                display(&cpus.taskset),
                "-c".to_owned(),
                cpus.plugin.to_string(),
            ]);
        }
        plugin_command.push(display(&node));
        plugin_command.extend(INSTRUMENT_FLAGS.iter().map(|flag| (*flag).to_owned()));
        plugin_command.push(display(&npm_dir.join(PLUGIN)));
        Ok(Setup {
            formwork,
            node,
            plugin_command,
            ts_client: npm_dir.join(TS_CLIENT),
            npm_dir,
            cpus,
        })
    }
}

#[derive(Clone, Copy)]
enum Client {
    Formwork,
    TsSdk,
    Floor,
}

const CLIENTS: [Client; 3] = [Client::Formwork, Client::TsSdk, Client::Floor];

impl Client {
    fn label(self) -> &'static str {
        match self {
            Client::Formwork => "formwork",
            Client::TsSdk => "TS SDK client",
            Client::Floor => "floor (raw)",
        }
    }

    /// One bench call through this client: the measured round trips in nanoseconds.
    fn run(self, setup: &Setup, tool_args: &Value) -> Result<Vec<u64>> {
        let result = match self {
            Client::Formwork => {
                let plugin: Vec<String> = setup
                    .plugin_command
                    .iter()
                    .map(|word| shell_quote(word))
                    .collect();
                let plugin = plugin.join(" ");
                let mut cmd = Command::new(&setup.formwork);
                cmd.args([
                    "call",
                    "--plugin",
                    &plugin,
                    "bench",
                    "--args",
                    &tool_args.to_string(),
                    "--accept-defaults",
                ]);
                call_tool_result(&mut cmd)?
            }
            Client::TsSdk => {
                let mut cmd = Command::new(&setup.node);
                cmd.arg(&setup.ts_client)
                    .arg(tool_args.to_string())
                    .args(&setup.plugin_command)
                    .current_dir(&setup.npm_dir);
                call_tool_result(&mut cmd)?
            }
            Client::Floor => floor::call_bench(&setup.plugin_command, tool_args)?,
        };
        durations(&result)
    }
}

/// Runs a client command that prints a `CallToolResult` on stdout.
fn call_tool_result(cmd: &mut Command) -> Result<Value> {
    let output = cmd
        .output()
        .with_context(|| format!("could not start {cmd:?}"))?;
    if !output.status.success() {
        bail!(
            "{cmd:?} failed ({})\nstdout: {}\nstderr: {}",
            output.status,
            String::from_utf8_lossy(&output.stdout).trim(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{cmd:?} printed no CallToolResult"))
}

/// The `{"ns":[...]}` text of a successful bench call.
fn durations(result: &Value) -> Result<Vec<u64>> {
    let text = result.pointer("/content/0/text").and_then(Value::as_str);
    if result.get("isError") == Some(&Value::Bool(true)) {
        bail!("the bench tool failed: {}", text.unwrap_or("(no text)"));
    }
    let text = text.with_context(|| format!("no text content in {result}"))?;
    let parsed: Value = serde_json::from_str(text).with_context(|| format!("parsing {text}"))?;
    let ns = parsed
        .get("ns")
        .and_then(Value::as_array)
        .with_context(|| format!("no `ns` array in {text}"))?;
    ns.iter()
        .map(|value| {
            value
                .as_u64()
                .with_context(|| format!("not a duration: {value}"))
        })
        .collect()
}

struct Summary {
    count: usize,
    median: u64,
    p99: u64,
    round_medians: Vec<u64>,
}

fn print_report(options: &Options, summaries: &[Summary], load: &[Option<String>; 2]) {
    let [formwork, ts_sdk, floor] = summaries else {
        return;
    };
    println!(
        "elicitation round trip, timed in the plugin: {} rounds x {} (+{} warm-up) per client, clients alternated",
        options.rounds, options.per_round, options.warmup
    );
    print_load(load);
    print_table(
        &CLIENTS.map(Client::label),
        &summaries.iter().collect::<Vec<_>>(),
    );
    println!();
    print_targets(&[
        (
            "formwork median / TS SDK median",
            ratio(formwork.median, ts_sdk.median),
            TARGET_VS_TS_SDK,
        ),
        (
            "formwork median / floor median",
            ratio(formwork.median, floor.median),
            TARGET_VS_FLOOR,
        ),
        (
            "formwork p99 / formwork median",
            ratio(formwork.p99, formwork.median),
            TARGET_P99_OVER_MEDIAN,
        ),
    ]);
    println!();
    println!(
        "The plugin ({PLUGIN} on node) is the instrument: its JIT and GC pauses land on every client alike,\n\
         so the floor's p99/median ({:.2}x) is the instrument's own tail; formwork's p99 is {:.2}x the floor's.",
        ratio(floor.p99, floor.median),
        ratio(formwork.p99, floor.p99)
    );
}

/// The load average before and after a part, to judge how noisy its run was.
fn print_load(load: &[Option<String>; 2]) {
    if let [Some(before), Some(after)] = load {
        let cores = std::thread::available_parallelism().map_or(0, usize::from);
        println!("load average {before} before, {after} after, on {cores} cores");
    }
}

/// One row per client: samples, median, p99, p99/median, and the median of each round.
fn print_table(labels: &[&str], summaries: &[&Summary]) {
    let width = labels
        .iter()
        .map(|label| label.len() + 1)
        .fold(14, usize::max);
    println!(
        "{:<width$} {:>7} {:>10} {:>10} {:>8}  round medians",
        "client", "samples", "median", "p99", "p99/med"
    );
    for (label, summary) in labels.iter().zip(summaries) {
        let rounds: Vec<String> = summary
            .round_medians
            .iter()
            .map(|&ns| format!("{:.0}", ns as f64 / 1e3))
            .collect();
        println!(
            "{label:<width$} {:>7} {:>10} {:>10} {:>7.2}x  {} us",
            summary.count,
            micros(summary.median),
            micros(summary.p99),
            ratio(summary.p99, summary.median),
            rounds.join(" ")
        );
    }
}

/// One line per target: what is compared, its value, the limit, PASS or MISS.
fn print_targets<S: AsRef<str>>(targets: &[(S, f64, f64)]) {
    let width = targets
        .iter()
        .map(|target| target.0.as_ref().len())
        .fold(32, usize::max);
    for (what, value, limit) in targets {
        let (what, value, limit) = (what.as_ref(), *value, *limit);
        let verdict = if value <= limit { "PASS" } else { "MISS" };
        println!("{what:<width$} {value:>6.2}x  target <= {limit:.1}x  {verdict}");
    }
}

/// The 1-minute load average (Linux), to judge how noisy the run was.
fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next().map(str::to_owned)
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], fraction: f64) -> u64 {
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len().max(1)) - 1)
        .copied()
        .unwrap_or(0)
}

fn ratio(numerator: u64, denominator: u64) -> f64 {
    numerator as f64 / denominator.max(1) as f64
}

fn micros(ns: u64) -> String {
    format!("{:.1} us", ns as f64 / 1e3)
}

/// Single-quotes a word for `sh -c`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// The CPUs of the run: the first two this process may use, one for the plugin and one for the
/// clients, and the whole list to give back after.
struct Cpus {
    taskset: PathBuf,
    plugin: usize,
    client: usize,
    /// This process's affinity list before pinning, as `taskset` prints it (`0-3,6`).
    original: String,
}

impl Cpus {
    fn find() -> Option<Cpus> {
        let taskset = find_program("taskset")?;
        let output = Command::new(&taskset)
            .args(["-cp", &std::process::id().to_string()])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let original = text.rsplit(':').next()?.trim().to_owned();
        let mut allowed = cpu_list(&original).into_iter();
        let (plugin, client) = (allowed.next()?, allowed.next()?);
        Some(Cpus {
            taskset,
            plugin,
            client,
            original,
        })
    }
}

/// The CPUs of an affinity list such as `0-3,6`.
fn cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let mut ends = part.trim().splitn(2, '-').map(str::parse::<usize>);
        match (ends.next(), ends.next()) {
            (Some(Ok(first)), None) => cpus.push(first),
            (Some(Ok(first)), Some(Ok(last))) => cpus.extend(first..=last),
            _ => {}
        }
    }
    cpus
}

/// While alive, this process (the floor client, and every client it starts) runs on the
/// clients' CPU; dropped, it gets back the CPUs it had.
///
/// A round trip between two processes costs differently when the scheduler puts them on one core or on two, and
/// it moves them between rounds: medians of one client differed by 1.6x from round to round unpinned. Pinned, the
/// plugin and the client each keep a core of their own in every round, whichever the client.
struct Pinning<'a> {
    cpus: Option<&'a Cpus>,
}

impl<'a> Pinning<'a> {
    fn start(setup: &'a Setup) -> Pinning<'a> {
        let pinned = Pinning {
            cpus: setup.cpus.as_ref(),
        };
        if let Some(cpus) = pinned.cpus {
            pinned.set(&cpus.client.to_string());
        }
        pinned
    }

    fn set(&self, list: &str) {
        if let Some(cpus) = self.cpus {
            let pid = std::process::id().to_string();
            let status = Command::new(&cpus.taskset)
                .args(["-a", "-cp", list, &pid])
                .stdout(std::process::Stdio::null())
                .status();
            if !matches!(status, Ok(status) if status.success()) {
                eprintln!("xtask: could not set this process's CPUs to {list}");
            }
        }
    }
}

impl Drop for Pinning<'_> {
    fn drop(&mut self) {
        if let Some(cpus) = self.cpus {
            self.set(&cpus.original);
        }
    }
}

/// `name` on the PATH, if there.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::{Options, cpu_list, percentile};

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        Options::parse(&args)
    }

    #[test]
    fn only_codex_runs_the_codex_part_alone() -> anyhow::Result<()> {
        let options = parse(&["--only", "codex", "--codex-forms", "40"])?;
        assert!(!options.round_trip);
        assert_eq!(options.codex_forms, 40);
        assert_eq!((options.http_rounds, options.model_turns), (0, 0));
        assert_eq!(
            (options.forms, options.apps, options.mrtr.rounds),
            (0, 0, 0)
        );
        assert!(options.load_sessions.is_empty());
        assert_eq!(parse(&["--only", "model"])?.codex_forms, 0);
        assert_eq!(parse(&[])?.codex_forms, 300);
        Ok(())
    }

    #[test]
    fn only_replicas_runs_the_replicas_part_alone() -> anyhow::Result<()> {
        let options = parse(&["--only", "replicas", "--replica-forms", "50"])?;
        assert!(!options.round_trip);
        assert_eq!(options.replica_forms, 50);
        assert_eq!(
            (
                options.codex_forms,
                options.http_rounds,
                options.model_turns
            ),
            (0, 0, 0)
        );
        assert_eq!(
            (options.forms, options.apps, options.mrtr.rounds),
            (0, 0, 0)
        );
        assert!(options.load_sessions.is_empty());
        assert_eq!(parse(&["--only", "codex"])?.replica_forms, 0);
        assert_eq!(parse(&[])?.replica_forms, 1000);
        Ok(())
    }

    #[test]
    fn only_http_runs_the_http_part_alone() -> anyhow::Result<()> {
        let options = parse(&["--only", "http"])?;
        assert!(!options.round_trip);
        assert_eq!(options.http_rounds, 10);
        assert_eq!(options.mrtr.rounds, 0);
        assert!(options.load_sessions.is_empty());
        assert_eq!(options.model_turns, 0);
        assert_eq!((options.forms, options.apps), (0, 0));

        let options = parse(&["--only", "round-trip", "--http-rounds", "3"])?;
        assert!(options.round_trip);
        assert_eq!(options.http_rounds, 0);

        let options = parse(&["--http-rounds", "3"])?;
        assert!(options.round_trip);
        assert_eq!(options.http_rounds, 3);
        assert_eq!(options.forms, 50);
        Ok(())
    }

    #[test]
    fn only_model_runs_the_model_part_alone() -> anyhow::Result<()> {
        let options = parse(&["--only", "model", "--model-turns", "50"])?;
        assert_eq!(options.model_turns, 50);
        assert!(!options.round_trip);
        assert_eq!((options.http_rounds, options.mrtr.rounds), (0, 0));
        assert!(options.load_sessions.is_empty());
        assert_eq!((options.forms, options.apps), (0, 0));

        assert_eq!(parse(&[])?.model_turns, 200);
        assert_eq!(parse(&["--only", "apps"])?.model_turns, 0);
        Ok(())
    }

    #[test]
    fn reads_affinity_lists() {
        assert_eq!(cpu_list("0-3,6"), vec![0, 1, 2, 3, 6]);
        assert_eq!(cpu_list("1"), vec![1]);
        assert_eq!(cpu_list(" 4-5 , x"), vec![4, 5]);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 0.5), 50);
        assert_eq!(percentile(&sorted, 0.99), 99);
        assert_eq!(percentile(&[7], 0.99), 7);
        assert_eq!(percentile(&[], 0.5), 0);
    }
}
