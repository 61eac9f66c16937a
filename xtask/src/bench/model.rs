//! The model part of `cargo xtask bench`: the host's own time in a model turn with one tool call, in the
//! workbench (`formwork serve --model-provider`), on each wire (Responses, Chat Completions).
//!
//! Every turn is one message from a WebSocket client here (the page's protocol, `send_message`), one function call
//! answered by the simulated provider (`tests/peers/sim_provider.py`), the call run by a stdio plugin
//! (`tests/peers/bench_model_plugin.py`, raw JSON-RPC), and a text answer streamed in [`WORDS`] deltas. The three
//! peers log their times on one clock (CLOCK_REALTIME: Python's `time.time_ns()`, Rust's `SystemTime`), and the
//! spans between them are the host's work:
//! - the provider writing the last event of its call answer → the plugin reading `tools/call` (the host reads no
//!   further than that event: the body's closing chunk after it is the sim's own last byte);
//! - the plugin writing its result → the provider reading the next request's request line;
//! - the provider writing a text delta → this client receiving its `message_delta`.
//!
//! Beside them, the named peer measured in the same run: the provider's own time per call answer (its request
//! line read → its last byte written), and each span as a ratio to it. A turn waits for the last one's
//! `turn_ended`; a session holds [`SESSION_TURNS`] turns, so the conversation sent each time stays short. Each
//! wire has a `formwork serve` of its own, its data directory (the SQLite store, which syncs every commit) in
//! `target/bench-model/WIRE/` beside the peers' logs. The target is each span's median under 1 ms; a miss is
//! reported, not failed.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tungstenite::Message;

use super::workbench::{Serve, Socket, now_ns};
use super::{load_average, micros, percentile, print_load, ratio};
use crate::target_dir;

/// Each span's median must stay under this.
const TARGET_NS: u64 = 1_000_000;
/// Turns before the measured ones, on each wire: the first session's plugin start and the host's cold paths.
const WARMUP_TURNS: usize = 20;
/// Turns per session: its history (four items a turn) goes with every request.
const SESSION_TURNS: usize = 20;
/// The final answer, one delta per word.
const WORDS: [&str; 5] = ["alpha ", "beta ", "gamma ", "delta ", "epsilon"];
/// Between the text deltas, so that each is measured alone rather than behind the one before.
const DELTA_GAP_MS: u64 = 1;

const PROVIDER: &str = "tests/peers/sim_provider.py";
const PLUGIN: &str = "tests/peers/bench_model_plugin.py";

/// How the model part runs.
pub struct Options {
    /// Measured turns per wire; 0 skips the part.
    pub turns: usize,
}

#[derive(Clone, Copy)]
enum Wire {
    Responses,
    Chat,
}

impl Wire {
    fn name(self) -> &'static str {
        match self {
            Wire::Responses => "responses",
            Wire::Chat => "chat",
        }
    }
}

/// The spans of one wire, in nanoseconds, and the provider's own time.
struct Spans {
    provider: Vec<u64>,
    to_call: Vec<u64>,
    to_request: Vec<u64>,
    to_socket: Vec<u64>,
    /// Spans that came out negative (counted as 0): the peers' clocks disagree.
    negative: usize,
}

pub fn run(root: &Path, formwork: &Path, options: &Options) -> Result<()> {
    let load_before = load_average();
    let mut measured = Vec::new();
    for wire in [Wire::Responses, Wire::Chat] {
        eprintln!(
            "xtask: model turns on the {} wire: {} (+{WARMUP_TURNS} warm-up)",
            wire.name(),
            options.turns
        );
        measured.push((wire, one_wire(root, formwork, wire, options.turns)?));
    }
    let load = [load_before, load_average()];

    println!();
    println!(
        "model turn with one tool call, in formwork serve: {} turns (+{WARMUP_TURNS} warm-up) per wire, \
         {SESSION_TURNS} per session, {} text deltas {DELTA_GAP_MS} ms apart each; times from the simulated \
         provider, the plugin and the socket client on one clock",
        options.turns,
        WORDS.len()
    );
    print_load(&load);
    let mut targets = Vec::new();
    for (wire, spans) in &mut measured {
        let name = wire.name();
        println!();
        println!(
            "{:<54} {:>7} {:>10} {:>10} {:>9} {:>9}",
            format!("{name} wire: span"),
            "samples",
            "median",
            "p99",
            "med/sim",
            "p99/sim"
        );
        let peer = summary(&mut spans.provider);
        print_row(
            "sim provider: request line in -> last byte out",
            &peer,
            &peer,
        );
        for (what, samples) in [
            (
                "call's last event -> plugin reads tools/call",
                &mut spans.to_call,
            ),
            (
                "plugin writes result -> next request at the sim",
                &mut spans.to_request,
            ),
            (
                "sim writes a delta -> message_delta at the client",
                &mut spans.to_socket,
            ),
        ] {
            let span = summary(samples);
            print_row(what, &span, &peer);
            targets.push((format!("{name}: {what}, median"), span.median));
        }
        if spans.negative > 0 {
            println!(
                "warning: {} spans came out negative (counted as 0): the peers' clocks disagree",
                spans.negative
            );
        }
    }
    println!();
    println!(
        "formwork's data directory is under target/ (SQLite, each commit synced to disk): the commits on a\n\
         span's path count in it. The simulated provider is Python's http.server, a thread per connection."
    );
    println!();
    let width = targets
        .iter()
        .map(|(what, _)| what.len())
        .fold(0, usize::max);
    for (what, median) in targets {
        let verdict = if median < TARGET_NS { "PASS" } else { "MISS" };
        println!(
            "{what:<width$} {:>10}  target < {}  {verdict}",
            micros(median),
            micros(TARGET_NS)
        );
    }
    Ok(())
}

struct Summary {
    count: usize,
    median: u64,
    p99: u64,
}

fn summary(samples: &mut [u64]) -> Summary {
    samples.sort_unstable();
    Summary {
        count: samples.len(),
        median: percentile(samples, 0.5),
        p99: percentile(samples, 0.99),
    }
}

fn print_row(what: &str, span: &Summary, peer: &Summary) {
    println!(
        "{what:<54} {:>7} {:>10} {:>10} {:>8.2}x {:>8.2}x",
        span.count,
        micros(span.median),
        micros(span.p99),
        ratio(span.median, peer.median),
        ratio(span.p99, peer.p99)
    );
}

/// Runs the turns of one wire in a fresh directory: the provider, `formwork serve`, the sessions; then reads the
/// peers' logs into spans.
fn one_wire(root: &Path, formwork: &Path, wire: Wire, turns: usize) -> Result<Spans> {
    let dir = target_dir(root).join("bench-model").join(wire.name());
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("data"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let file = |name: &str| dir.join(name);

    let answer = json!({"text": WORDS.concat(), "delay_ms": DELTA_GAP_MS});
    let call = json!({"calls": [{"name": "bench__stamp", "arguments": {}}]});
    let script = json!({"rules": [{"match": ".", "steps": [call, answer]}]});
    std::fs::write(file("script.json"), script.to_string())?;
    let provider = Provider::start(
        &root.join(PROVIDER),
        &file("script.json"),
        &file("provider.jsonl"),
    )?;

    let config = format!(
        "[mcp_servers.bench]\ncommand = \"python3\"\nargs = [{plugin:?}, {log:?}]\n\
         default_tools_approval_mode = \"approve\"\n\n\
         [mcp_servers.demo]\nenabled = false\n\n\
         [model_providers.sim]\nname = \"Sim\"\nbase_url = {url:?}\nwire_api = {wire:?}\n\
         request_max_retries = 0\nstream_max_retries = 0\n",
        plugin = display(&root.join(PLUGIN)),
        log = display(&file("plugin.jsonl")),
        url = provider.url,
        wire = wire.name(),
    );
    std::fs::write(file("formwork.toml"), config)?;
    let serve = Serve::start(
        formwork,
        &dir,
        &["--model-provider", "sim", "--model", "sim-1"],
        &[],
    )?;

    let total = WARMUP_TURNS + turns;
    let mut deltas = Vec::with_capacity(total * WORDS.len());
    let mut done = 0;
    while done < total {
        let session = serve.create_session()?;
        let mut socket = serve.socket(&session)?;
        for _ in 0..SESSION_TURNS.min(total - done) {
            done += 1;
            turn(&mut socket, done, &mut deltas).with_context(|| {
                format!("turn {done} (formwork's log: {})", display(&serve.log))
            })?;
        }
        let _ = socket.close(None);
    }
    drop(serve);
    drop(provider);
    spans(
        &file("provider.jsonl"),
        &file("plugin.jsonl"),
        &deltas,
        turns,
    )
}

/// One turn: the message, then the socket's events until `turn_ended`; each `message_delta`'s text and when it
/// arrived go to `deltas`.
fn turn(socket: &mut Socket, number: usize, deltas: &mut Vec<(u64, String)>) -> Result<()> {
    let message = json!({"type": "send_message", "text": format!("turn {number}: stamp it")});
    socket
        .send(Message::text(message.to_string()))
        .context("sending the message")?;
    let mut seen = Vec::new();
    loop {
        let message = socket.read().context("reading the socket")?;
        let at = now_ns();
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(text.as_str())
            .with_context(|| format!("parsing {}", text.as_str()))?;
        match event.get("type").and_then(Value::as_str) {
            Some("message_delta") => {
                let delta = event.get("delta").and_then(Value::as_str).unwrap_or("");
                deltas.push((at, delta.to_owned()));
            }
            Some("turn_ended") => {
                if event.get("reason").and_then(Value::as_str) != Some("completed") {
                    bail!("the turn did not complete: {event}; its events: {seen:?}");
                }
                return Ok(());
            }
            _ => {}
        }
        seen.push(event);
    }
}

/// The spans of the measured turns, from the provider's log, the plugin's and the deltas received.
fn spans(
    provider_log: &Path,
    plugin_log: &Path,
    received: &[(u64, String)],
    turns: usize,
) -> Result<Spans> {
    let answers = answers(&read_lines(provider_log)?)?;
    let calls = read_lines(plugin_log)?;
    let total = WARMUP_TURNS + turns;
    if answers.len() != 2 * total || calls.len() != total || received.len() != WORDS.len() * total {
        bail!(
            "expected {total} turns: the provider answered {} requests (two a turn), the plugin got {} calls, \
             the socket {} deltas ({} a turn)",
            answers.len(),
            calls.len(),
            received.len(),
            WORDS.len()
        );
    }
    let mut spans = Spans {
        provider: Vec::new(),
        to_call: Vec::new(),
        to_request: Vec::new(),
        to_socket: Vec::new(),
        negative: 0,
    };
    for index in WARMUP_TURNS..total {
        let (call, text) = (&answers[2 * index], &answers[2 * index + 1]);
        let plugin = &calls[index];
        if !call.deltas.is_empty() || text.deltas.len() != WORDS.len() {
            bail!(
                "turn {}: the provider's answers are not a call then the text",
                index + 1
            );
        }
        let (called, returned) = (field(plugin, "received_ns")?, field(plugin, "returned_ns")?);
        spans
            .provider
            .push(span(call.received, call.last_byte, &mut spans.negative));
        spans
            .to_call
            .push(span(call.last_event, called, &mut spans.negative));
        spans
            .to_request
            .push(span(returned, text.received, &mut spans.negative));
        let arrived = &received[index * WORDS.len()..(index + 1) * WORDS.len()];
        for ((written, word), (at, delta)) in text.deltas.iter().zip(arrived) {
            if word != delta {
                bail!(
                    "turn {}: the provider wrote {word:?}, the socket got {delta:?}",
                    index + 1
                );
            }
            spans
                .to_socket
                .push(span(*written, *at, &mut spans.negative));
        }
    }
    Ok(spans)
}

/// `to - from`; 0, counted in `negative`, when `to` is earlier.
fn span(from: u64, to: u64, negative: &mut usize) -> u64 {
    to.checked_sub(from).unwrap_or_else(|| {
        *negative += 1;
        0
    })
}

/// One answer of the provider: when its request line was read, its deltas (written when, what), its last event
/// and its last byte.
#[derive(Default)]
struct Answer {
    received: u64,
    deltas: Vec<(u64, String)>,
    last_event: u64,
    last_byte: u64,
}

/// The provider's answers in the order of their requests (which the host sends one at a time). Its threads log
/// when they get Python's lock, one connection's answer after the next one's request at times: each entry names
/// its request.
fn answers(entries: &[Value]) -> Result<Vec<Answer>> {
    let mut answers: Vec<Answer> = Vec::new();
    for entry in entries {
        let number = usize::try_from(field(entry, "request")?)?;
        if number == 0 {
            bail!("the provider numbered a request 0: {entry}");
        }
        if answers.len() < number {
            answers.resize_with(number, Answer::default);
        }
        let answer = &mut answers[number - 1];
        if entry.get("body").is_some() {
            answer.received = field(entry, "received_ns")?;
        } else if entry.get("answered").is_some() {
            answer.last_event = field(entry, "last_event_ns")?;
            answer.last_byte = field(entry, "last_byte_ns")?;
        } else {
            let text = entry.get("text").and_then(Value::as_str).unwrap_or("");
            answer
                .deltas
                .push((field(entry, "delta_ns")?, text.to_owned()));
        }
    }
    for (number, answer) in answers.iter().enumerate() {
        if answer.received == 0
            || answer.last_event < answer.received
            || answer.last_byte < answer.last_event
            || answer.deltas.iter().any(|(at, _)| *at > answer.last_event)
        {
            bail!(
                "the provider's log of request {} is incomplete or out of order",
                number + 1
            );
        }
    }
    Ok(answers)
}

fn field(entry: &Value, name: &str) -> Result<u64> {
    entry
        .get(name)
        .and_then(Value::as_u64)
        .with_context(|| format!("no `{name}` in {entry}"))
}

fn read_lines(path: &Path) -> Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .map(|line| serde_json::from_str(line).with_context(|| format!("parsing {line}")))
        .collect()
}

/// The simulated provider; it exits when its stdin, held here, closes.
struct Provider {
    child: Child,
    stdin: Option<ChildStdin>,
    url: String,
}

impl Provider {
    fn start(program: &Path, script: &Path, log: &Path) -> Result<Provider> {
        let mut child = Command::new("python3")
            .arg(program)
            .arg(script)
            .arg(log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting python3 {}", program.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut provider = Provider {
            child,
            stdin,
            url: String::new(),
        };
        if let Some(stdout) = stdout {
            BufReader::new(stdout)
                .read_line(&mut provider.url)
                .context("reading the provider's URL")?;
        }
        provider.url = provider.url.trim().to_owned();
        if !provider.url.starts_with("http://") {
            bail!("the provider printed no URL: {:?}", provider.url);
        }
        Ok(provider)
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::answers;
    use serde_json::json;

    #[test]
    fn the_providers_entries_pair_by_request_number_in_any_order() -> anyhow::Result<()> {
        // Request 1's end logged after request 2 arrived, as the provider's threads may.
        let entries = [
            json!({"request": 1, "path": "/v1/responses", "body": {}, "received_ns": 100}),
            json!({"request": 1, "delta_ns": 120, "text": "alpha "}),
            json!({"request": 2, "path": "/v1/responses", "body": {}, "received_ns": 300}),
            json!({"request": 1, "answered": "/v1/responses", "last_event_ns": 150, "last_byte_ns": 160}),
            json!({"request": 2, "delta_ns": 320, "text": "beta"}),
            json!({"request": 2, "answered": "/v1/responses", "last_event_ns": 350, "last_byte_ns": 351}),
        ];
        let answers = answers(&entries)?;
        let read: Vec<_> = answers
            .iter()
            .map(|answer| {
                (
                    answer.received,
                    answer.deltas.clone(),
                    answer.last_event,
                    answer.last_byte,
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (100, vec![(120, "alpha ".to_owned())], 150, 160),
                (300, vec![(320, "beta".to_owned())], 350, 351),
            ]
        );

        let unanswered = &entries[..5];
        let error = answers_error(unanswered);
        assert_eq!(
            error,
            "the provider's log of request 2 is incomplete or out of order"
        );
        Ok(())
    }

    fn answers_error(entries: &[serde_json::Value]) -> String {
        answers(entries)
            .err()
            .map(|err| err.to_string())
            .unwrap_or_default()
    }
}
