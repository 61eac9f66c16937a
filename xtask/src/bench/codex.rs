//! The Codex part of `cargo xtask bench`: the executor's own part of a form round under the Codex runtime, and the
//! whole round beside the same form through formwork's own loop.
//!
//! One plugin, `tests/peers/bench_plugin.mjs` (the TS SDK server every part shares), asks its form again and again
//! from one tool call and times each round trip itself: from handing `elicitation/create` to its transport to
//! parsing the result. The call runs from the palette of `formwork serve` (a `call_tool` on the session's socket,
//! as the page sends it), and a WebSocket client here answers each card the moment it arrives, with the form's
//! defaults:
//! - `--runtime codex`: real Codex (`codex app-server`, the pinned 0.171.0) is the plugin's MCP client; its
//!   `mcpServer/elicitation/request` becomes the card, the answer its response;
//! - formwork's own loop: formwork itself is the plugin's client.
//!
//! The plugin's round trips are the whole round on each runtime. The executor's own part is timed on one clock
//! (CLOCK_REALTIME: formwork's `formwork::wire` trace timestamps and this client's): Codex's request read by
//! formwork → its `form_requested` at the client, and the client's `answer_form` sent → formwork writing the
//! response to Codex. Target: their sum's median under 1 ms; a miss is reported, not failed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tungstenite::Message;

use super::workbench::{Serve, Socket, now_ns};
use super::{INSTRUMENT_FLAGS, PLUGIN, load_average, micros, percentile, print_load, ratio};
use crate::target_dir;

/// The executor's part's median must stay under this.
const TARGET_NS: u64 = 1_000_000;
/// Forms before the measured ones, in the same call.
const WARMUP: usize = 50;
/// What the client answers every card with: the form's defaults (`tests/peers/bench_form.json`).
const ANSWER: &str = r#"{"strategy": "safe", "dry_run": true, "retries": 3, "target": "staging"}"#;

/// How the Codex part runs.
pub struct Options {
    /// Measured forms per runtime; 0 skips the part.
    pub forms: usize,
}

/// What one runtime's run measured.
struct Run {
    /// The plugin's round trips, in ns.
    rounds: Vec<u64>,
    /// Per form: when the client got its card and when it sent the answer.
    client: Vec<(u64, u64)>,
    /// formwork's log.
    log: PathBuf,
}

pub fn run(root: &Path, formwork: &Path, node: &Path, options: &Options) -> Result<()> {
    let codex = target_dir(root).join(
        "peers/npm/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    if !codex.is_file() {
        bail!(
            "Codex is not installed at {}: run `cargo xtask peers`",
            codex.display()
        );
    }
    let load_before = load_average();
    eprintln!(
        "xtask: codex part: {} forms (+{WARMUP} warm-up) per runtime",
        options.forms
    );
    let under_codex = one_runtime(root, formwork, node, Some(&codex), options.forms)?;
    let own_loop = one_runtime(root, formwork, node, None, options.forms)?;
    let load = [load_before, load_average()];

    let (mut to_card, mut to_response) = executor_spans(&under_codex)?;
    let mut executor: Vec<u64> = to_card
        .iter()
        .zip(&to_response)
        .map(|(a, b)| a + b)
        .collect();
    let mut codex_rounds = under_codex.rounds.clone();
    let mut own_rounds = own_loop.rounds.clone();

    println!();
    println!(
        "form rounds from the palette of formwork serve, answered at once by a socket client: {} forms (+{WARMUP} \
         warm-up) per runtime; the plugin (TS SDK, bench_plugin.mjs) times each round trip",
        options.forms
    );
    print_load(&load);
    println!();
    println!(
        "{:<58} {:>7} {:>10} {:>10}",
        "span", "samples", "median", "p99"
    );
    let own = stats(&mut own_rounds);
    let rows: [(&str, &mut Vec<u64>); 5] = [
        (
            "executor: codex's request read -> form_requested at the client",
            &mut to_card,
        ),
        (
            "executor: answer_form sent -> response written to codex",
            &mut to_response,
        ),
        ("executor: both, per form", &mut executor),
        (
            "whole round at the plugin, codex runtime",
            &mut codex_rounds,
        ),
        (
            "whole round at the plugin, formwork's own loop",
            &mut own_rounds,
        ),
    ];
    let mut executor_median = 0;
    for (what, samples) in rows {
        let (median, p99) = stats(samples);
        if what == "executor: both, per form" {
            executor_median = median;
        }
        println!(
            "{what:<58} {:>7} {:>10} {:>10}",
            samples.len(),
            micros(median),
            micros(p99)
        );
    }
    let codex = stats(&mut codex_rounds);
    println!();
    println!(
        "whole round, codex runtime / formwork's own loop: median {:.2}x, p99 {:.2}x (Codex's own part: its MCP \
         client and app-server between the plugin and formwork)",
        ratio(codex.0, own.0),
        ratio(codex.1, own.1)
    );
    println!(
        "formwork's logs (trace of formwork::wire, whose writes count in the executor's spans): {}, {}",
        under_codex.log.display(),
        own_loop.log.display()
    );
    let verdict = if executor_median < TARGET_NS {
        "PASS"
    } else {
        "MISS"
    };
    println!();
    println!(
        "executor's part of a form round, median {:>10}  target < {}  {verdict}",
        micros(executor_median),
        micros(TARGET_NS)
    );
    Ok(())
}

fn stats(samples: &mut [u64]) -> (u64, u64) {
    samples.sort_unstable();
    (percentile(samples, 0.5), percentile(samples, 0.99))
}

/// One runtime's run in a fresh directory: `formwork serve` (with `codex`, the Codex runtime), a session, the
/// palette call and its forms.
fn one_runtime(
    root: &Path,
    formwork: &Path,
    node: &Path,
    codex: Option<&Path>,
    forms: usize,
) -> Result<Run> {
    let name = if codex.is_some() { "codex" } else { "formwork" };
    let dir = target_dir(root).join("bench-codex").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("data"))
        .with_context(|| format!("creating {}", dir.display()))?;
    let plugin = target_dir(root).join("peers/npm").join(PLUGIN);
    let args: Vec<String> = INSTRUMENT_FLAGS
        .iter()
        .map(|flag| (*flag).to_owned())
        .chain([plugin.display().to_string()])
        .collect();
    let mut config = format!(
        "[mcp_servers.bench]\ncommand = {:?}\nargs = {}\ndefault_tools_approval_mode = \"approve\"\n\n\
         [mcp_servers.demo]\nenabled = false\n",
        node.display().to_string(),
        serde_json::to_string(&args)?,
    );
    if let Some(codex) = codex {
        // A model on a closed port: the palette's calls ask no model, and nothing leaves the machine.
        config = format!(
            "runtime = \"codex\"\nmodel_provider = \"none\"\nmodel = \"none\"\n\n\
             [model_providers.none]\nname = \"none\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\n\
             [codex]\ncommand = {:?}\nhome = {:?}\n\n{config}",
            codex.display().to_string(),
            dir.join("codex-home").display().to_string(),
        );
    }
    std::fs::write(dir.join("formwork.toml"), config)?;
    let serve = Serve::start(
        formwork,
        &dir,
        &[],
        &[("FORMWORK_LOG", "warn,formwork::wire=trace")],
    )?;
    let session = serve.create_session()?;
    let mut socket = serve.socket(&session)?;
    let call = json!({"type": "call_tool", "server": "bench", "tool": "bench",
                      "arguments": {"n": forms, "warmup": WARMUP}});
    socket
        .send(Message::text(call.to_string()))
        .context("sending call_tool")?;
    let (client, result) = answer_every_card(&mut socket)
        .with_context(|| format!("the bench call (formwork's log: {})", serve.log.display()))?;
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let measured: Value = serde_json::from_str(text).with_context(|| {
        format!(
            "the plugin's result {result} (formwork's log: {})",
            serve.log.display()
        )
    })?;
    let rounds: Vec<u64> = measured["ns"]
        .as_array()
        .context("the plugin's result has no `ns`")?
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let _ = socket.close(None);
    let log = serve.log.clone();
    drop(serve);
    Ok(Run {
        rounds,
        client: client[WARMUP.min(client.len())..].to_vec(),
        log,
    })
}

/// Answers each card as it arrives; gives when each came and was answered, and the call's result.
fn answer_every_card(socket: &mut Socket) -> Result<(Vec<(u64, u64)>, Value)> {
    let answer: Value = serde_json::from_str(ANSWER)?;
    let mut times = Vec::new();
    loop {
        let message = socket.read().context("reading the socket")?;
        let at = now_ns();
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(text.as_str())?;
        let form = match event["type"].as_str() {
            Some("form_requested") if event["waiting"] == false => event["form_id"].as_str(),
            Some("form_shown") => event["form_id"].as_str(),
            Some("tool_call_finished") => {
                if let Some(error) = event.get("error") {
                    bail!("the call failed: {error}");
                }
                return Ok((times, event["result"].clone()));
            }
            _ => None,
        };
        let Some(form) = form else {
            continue;
        };
        let command = json!({"type": "answer_form", "form_id": form,
                             "answer": {"action": "accept", "content": answer}});
        let sent = now_ns();
        socket
            .send(Message::text(command.to_string()))
            .context("answering")?;
        times.push((at, sent));
    }
}

/// The executor's two spans per measured form, from formwork's wire trace and the client's times.
fn executor_spans(run: &Run) -> Result<(Vec<u64>, Vec<u64>)> {
    let log = std::fs::read_to_string(&run.log)
        .with_context(|| format!("reading {}", run.log.display()))?;
    let mut requests = Vec::new();
    let mut responses = Vec::new();
    for line in log.lines().filter(|line| line.contains("formwork::wire")) {
        let Some(at) = line.split_whitespace().next().and_then(timestamp_ns) else {
            continue;
        };
        if line.contains("direction=\"in\"")
            && line.contains(r#""method":"mcpServer/elicitation/request""#)
        {
            requests.push(at);
        } else if line.contains("direction=\"out\"")
            && line.contains(r#""result":{"action":"accept""#)
        {
            responses.push(at);
        }
    }
    let skip = |times: Vec<u64>| times[WARMUP.min(times.len())..].to_vec();
    let (requests, responses) = (skip(requests), skip(responses));
    if requests.len() != run.client.len() || responses.len() != run.client.len() {
        bail!(
            "formwork's trace has {} requests and {} responses for {} forms ({})",
            requests.len(),
            responses.len(),
            run.client.len(),
            run.log.display()
        );
    }
    let span = |from: u64, to: u64| to.saturating_sub(from);
    let to_card = run
        .client
        .iter()
        .zip(&requests)
        .map(|((card, _), read)| span(*read, *card))
        .collect();
    let to_response = run
        .client
        .iter()
        .zip(&responses)
        .map(|((_, sent), written)| span(*sent, *written))
        .collect();
    Ok((to_card, to_response))
}

/// `2026-12-05T21:21:27.469652Z` (tracing's UTC timestamp) in ns since the epoch.
fn timestamp_ns(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.split('-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut clock = clock.split(':').map(str::parse::<u64>);
    let (hour, minute, second) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let digits = fraction.len().min(9);
    let nanos: u64 =
        fraction.get(..digits)?.parse::<u64>().ok()? * 10_u64.pow(9 - u32::try_from(digits).ok()?);
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = u64::try_from(era * 146_097 + day_of_era - 719_468).ok()?;
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000_000 + second * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod tests {
    use super::timestamp_ns;

    #[test]
    fn tracing_timestamps_read_as_nanoseconds_since_the_epoch() {
        assert_eq!(timestamp_ns("1970-01-01T00:00:00.000001Z"), Some(1_000));
        assert_eq!(
            timestamp_ns("2026-12-05T21:21:27.469652Z"),
            Some(1_796_505_687_469_652_000)
        );
        assert_eq!(
            timestamp_ns("2024-02-29T00:00:00Z"),
            Some(1_709_164_800_000_000_000)
        );
        assert_eq!(timestamp_ns("not a time"), None);
    }
}
