//! The HTTP part of `cargo xtask bench`: the elicitation round trip of the round-trip part over Streamable HTTP,
//! plain and TLS, through formwork and through the official TS SDK client's `StreamableHTTPClientTransport`.
//!
//! Two instruments serve the same `bench` tool and time each elicitation themselves, each client alike:
//! `bench_plugin.mjs` with `--http` or `--https` (the TS SDK's `StreamableHTTPServerTransport` on node's `http`
//! or `https` server), and the same tool on the Rust SDK (`load-bench --serve-bench-plugin`, rmcp's
//! `StreamableHttpService` on axum, rustls for TLS). For TLS this part makes a CA and a certificate for
//! `localhost` signed by it, with the `openssl` command, in `target/bench-tls/`: formwork trusts the CA through
//! `SSL_CERT_FILE`, node through `NODE_EXTRA_CA_CERTS`. Each instrument and transport has one plugin process for
//! the whole part, as an HTTP server runs (an MCP session per client), warmed up by each client before the
//! rounds; the ten contenders (two clients on two transports and the floor on plain HTTP, through two
//! instruments) then take turns over the rounds, a fresh client process per run.
//!
//! Targets, per instrument and transport: formwork's median at most half the TS SDK client's, formwork's p99 at
//! most twice its own median. The floor ([`super::floor::call_bench_http`]) shows the tail that the machine and
//! the instrument leave to any client, the least one included.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{
    Pinning, Setup, TARGET_P99_OVER_MEDIAN, TARGET_VS_TS_SDK, build_load_bench, call_tool_result,
    durations, load_average, print_load, print_table, print_targets, ratio, take_turns,
};
use crate::target_dir;

/// How the HTTP part runs.
pub struct Options {
    /// Rounds (a fresh client process per contender each); 0 skips the part.
    pub rounds: usize,
    /// Measured elicitations per run, after `warmup` unmeasured ones.
    pub per_round: usize,
    pub warmup: usize,
}

/// The plugin that serves the `bench` tool and times its round trips.
#[derive(Clone, Copy, PartialEq)]
enum Instrument {
    /// `bench_plugin.mjs` on the TS SDK, node's `http`/`https` server.
    TypeScript,
    /// The same tool on the Rust SDK: `load-bench --serve-bench-plugin`.
    Rust,
}

impl Instrument {
    fn name(self) -> &'static str {
        match self {
            Instrument::TypeScript => "TS SDK plugin",
            Instrument::Rust => "Rust SDK plugin",
        }
    }

    /// Round trips each client makes through the plugin before the rounds, unmeasured. V8 is still compiling
    /// node's HTTP server after the few hundred round trips that settle the stdio instrument: its round trips
    /// kept getting faster, by up to half, over the first few thousand. The Rust plugin has nothing to compile;
    /// its MCP sessions and buffers settle within the client's own warm-up.
    fn warmup(self) -> usize {
        match self {
            Instrument::TypeScript => 3000,
            Instrument::Rust => 300,
        }
    }
}

/// The contenders in turn order: per instrument, each transport's clients, formwork first; the floor speaks plain
/// HTTP only.
const CONTENDERS: [(Instrument, Client, Scheme); 10] = {
    use {Client::*, Instrument::*, Scheme::*};
    [
        (TypeScript, Formwork, Http),
        (TypeScript, TsSdk, Http),
        (TypeScript, Floor, Http),
        (TypeScript, Formwork, Https),
        (TypeScript, TsSdk, Https),
        (Rust, Formwork, Http),
        (Rust, TsSdk, Http),
        (Rust, Floor, Http),
        (Rust, Formwork, Https),
        (Rust, TsSdk, Https),
    ]
};

#[derive(Clone, Copy, PartialEq)]
enum Client {
    Formwork,
    TsSdk,
    /// [`super::floor::call_bench_http`]: the least a client can do per round trip.
    Floor,
}

#[derive(Clone, Copy, PartialEq)]
enum Scheme {
    Http,
    Https,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

fn label((instrument, client, scheme): (Instrument, Client, Scheme)) -> String {
    let client = match client {
        Client::Formwork => "formwork",
        Client::TsSdk => "TS SDK client",
        Client::Floor => "floor",
    };
    let plugin = match instrument {
        Instrument::TypeScript => "TS",
        Instrument::Rust => "Rust",
    };
    format!("{client} {}, {plugin} plugin", scheme.name())
}

pub fn run(root: &Path, setup: &Setup, options: &Options) -> Result<()> {
    let tls = Tls::make(&target_dir(root).join("bench-tls"))?;
    let load_bench = build_load_bench(root, "the Rust instrument of the HTTP part")?;
    let load_before = load_average();
    let pinned = Pinning::start(setup);
    let mut plugins = Vec::new();
    for instrument in [Instrument::TypeScript, Instrument::Rust] {
        for scheme in [Scheme::Http, Scheme::Https] {
            plugins.push(Plugin::serve(setup, &load_bench, instrument, scheme, &tls)?);
        }
    }
    let url = |instrument: Instrument, scheme: Scheme| {
        plugins
            .iter()
            .find(|plugin| plugin.instrument == instrument && plugin.scheme == scheme)
            .map(|plugin| plugin.url.as_str())
            .unwrap_or_default()
    };
    for contender @ (instrument, client, scheme) in CONTENDERS {
        let warmup = instrument.warmup();
        eprintln!(
            "xtask: warming up the {} over {}: {warmup} round trips through {}",
            instrument.name(),
            scheme.name(),
            label(contender)
        );
        let warm_up = serde_json::json!({ "n": 1, "warmup": warmup });
        call(setup, client, url(instrument, scheme), &tls, &warm_up)?;
    }
    let tool_args = serde_json::json!({ "n": options.per_round, "warmup": options.warmup });
    let labels = CONTENDERS.map(label);
    let labels = labels.each_ref().map(String::as_str);
    let summaries = take_turns(options.rounds, options.per_round, &labels, |idx| {
        let (instrument, client, scheme) = CONTENDERS[idx];
        call(setup, client, url(instrument, scheme), &tls, &tool_args)
    })?;
    drop(plugins);
    drop(pinned);
    let load = [load_before, load_average()];

    println!();
    println!(
        "elicitation round trip over Streamable HTTP, timed in the plugin: {} rounds x {} (+{} warm-up) per \
         client, transport and plugin (each plugin warmed up first by each client), contenders alternated",
        options.rounds, options.per_round, options.warmup
    );
    print_load(&load);
    print_table(&labels, &summaries.iter().collect::<Vec<_>>());
    println!();
    let summary = |instrument: Instrument, client: Client, scheme: Scheme| {
        CONTENDERS
            .iter()
            .position(|contender| *contender == (instrument, client, scheme))
            .and_then(|idx| summaries.get(idx))
    };
    let mut targets = Vec::new();
    let mut floors = Vec::new();
    for instrument in [Instrument::TypeScript, Instrument::Rust] {
        for scheme in [Scheme::Http, Scheme::Https] {
            let (Some(formwork), Some(ts_sdk)) = (
                summary(instrument, Client::Formwork, scheme),
                summary(instrument, Client::TsSdk, scheme),
            ) else {
                continue;
            };
            let name = format!("{}, {}", scheme.name(), instrument.name());
            targets.extend([
                (
                    format!("{name}: formwork median / TS SDK median"),
                    ratio(formwork.median, ts_sdk.median),
                    TARGET_VS_TS_SDK,
                ),
                (
                    format!("{name}: formwork p99 / formwork median"),
                    ratio(formwork.p99, formwork.median),
                    TARGET_P99_OVER_MEDIAN,
                ),
            ]);
            if let Some(floor) = summary(instrument, Client::Floor, scheme) {
                floors.push(format!(
                    "{name}: the floor's p99/median is {:.2}x; formwork's median is {:.2}x the floor's, its p99 {:.2}x",
                    ratio(floor.p99, floor.median),
                    ratio(formwork.median, floor.median),
                    ratio(formwork.p99, floor.p99)
                ));
            }
        }
    }
    print_targets(&targets);
    println!();
    for line in &floors {
        println!("{line}");
    }
    println!();
    println!(
        "The plugin is the instrument: its pauses (and the machine's) land on every client alike, so each\n\
         client's p99/median carries them too. The TS SDK plugin runs on node, whose JIT compiler and garbage\n\
         collector pause it; the Rust SDK plugin has neither, so its rows show the clients' own tails."
    );
    Ok(())
}

/// One bench call of `client` to the plugin at `url`: its samples.
fn call(
    setup: &Setup,
    client: Client,
    url: &str,
    tls: &Tls,
    tool_args: &Value,
) -> Result<Vec<u64>> {
    let mut cmd = match client {
        // In this process, which is on the clients' core.
        Client::Floor => return durations(&super::floor::call_bench_http(url, tool_args)?),
        Client::Formwork => {
            let mut cmd = Command::new(&setup.formwork);
            cmd.args(["call", "--url", url, "bench", "--args"])
                .arg(tool_args.to_string())
                .arg("--accept-defaults")
                .env("SSL_CERT_FILE", &tls.ca)
                // The plugin is on this machine: never through a proxy the environment names (node's fetch
                // reads none).
                .env("no_proxy", "*");
            cmd
        }
        Client::TsSdk => {
            let mut cmd = Command::new(&setup.node);
            cmd.arg(&setup.ts_client)
                .arg(tool_args.to_string())
                .args(["--url", url])
                .env("NODE_EXTRA_CA_CERTS", &tls.ca)
                .current_dir(&setup.npm_dir);
            cmd
        }
    };
    durations(&call_tool_result(&mut cmd)?)
}

/// The bench's CA and the certificate for `localhost` it signed, as PEM files.
struct Tls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Tls {
    /// A new CA and `localhost` certificate in `dir`, valid for a day, made with `openssl`.
    fn make(dir: &Path) -> Result<Tls> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let file = |name: &str| dir.join(name);
        let tls = Tls {
            ca: file("ca.pem"),
            cert: file("localhost.pem"),
            key: file("localhost.key"),
        };
        let (config, ca_key, request) =
            (file("openssl.cnf"), file("ca.key"), file("localhost.csr"));
        // A config of its own, so that no system default adds extensions. The leaf is for serving only: webpki
        // refuses a CA's certificate as a server's.
        std::fs::write(
            &config,
            "[req]\n\
             distinguished_name = subject\n\
             prompt = no\n\
             [subject]\n\
             CN = formwork bench CA\n\
             [ca]\n\
             basicConstraints = critical, CA:TRUE\n\
             keyUsage = critical, keyCertSign, cRLSign\n\
             subjectKeyIdentifier = hash\n\
             [leaf]\n\
             basicConstraints = critical, CA:FALSE\n\
             keyUsage = critical, digitalSignature\n\
             extendedKeyUsage = serverAuth\n\
             subjectAltName = DNS:localhost, IP:127.0.0.1\n\
             subjectKeyIdentifier = hash\n\
             authorityKeyIdentifier = keyid\n",
        )
        .with_context(|| format!("writing {}", config.display()))?;
        let p256 = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let openssl = |first: &str| {
            let mut cmd = Command::new("openssl");
            cmd.args([first, "-config"]).arg(&config);
            cmd
        };
        quietly(
            openssl("req")
                .args(["-x509", "-extensions", "ca", "-days", "1", "-sha256"])
                .args(p256)
                .arg("-keyout")
                .arg(&ca_key)
                .arg("-out")
                .arg(&tls.ca),
        )
        .context("making the bench's CA with openssl")?;
        quietly(
            openssl("req")
                .args(["-new", "-subj", "/CN=localhost"])
                .args(p256)
                .arg("-keyout")
                .arg(&tls.key)
                .arg("-out")
                .arg(&request),
        )
        .context("making a key for localhost with openssl")?;
        quietly(
            Command::new("openssl")
                .args(["x509", "-req", "-days", "1", "-sha256", "-set_serial", "2"])
                .args(["-extensions", "leaf", "-extfile"])
                .arg(&config)
                .arg("-in")
                .arg(&request)
                .arg("-CA")
                .arg(&tls.ca)
                .arg("-CAkey")
                .arg(&ca_key)
                .arg("-out")
                .arg(&tls.cert),
        )
        .context("signing the certificate for localhost with openssl")?;
        Ok(tls)
    }
}

/// Runs `cmd` to completion, its output shown only when it fails.
fn quietly(cmd: &mut Command) -> Result<()> {
    let output = cmd.output().with_context(|| {
        format!("could not start {cmd:?} (the HTTP part needs `openssl`; --http-rounds 0 skips it)")
    })?;
    if !output.status.success() {
        bail!(
            "{cmd:?} failed ({})\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// One instrument's process serving the `bench` tool over HTTP; killed when dropped.
struct Plugin {
    child: Child,
    instrument: Instrument,
    scheme: Scheme,
    url: String,
}

impl Plugin {
    fn serve(
        setup: &Setup,
        load_bench: &Path,
        instrument: Instrument,
        scheme: Scheme,
        tls: &Tls,
    ) -> Result<Plugin> {
        let mut cmd = match instrument {
            Instrument::TypeScript => {
                let (program, args) = setup
                    .plugin_command
                    .split_first()
                    .context("no plugin command")?;
                let mut cmd = Command::new(program);
                cmd.args(args);
                match scheme {
                    Scheme::Http => cmd.args(["--http", "0"]),
                    Scheme::Https => cmd.args(["--https", "0"]),
                };
                cmd
            }
            Instrument::Rust => {
                // On the instrument's core, as the node plugin's command puts it.
                let mut cmd = match &setup.cpus {
                    Some(cpus) => {
                        let mut cmd = Command::new(&cpus.taskset);
                        cmd.arg("-c").arg(cpus.plugin.to_string()).arg(load_bench);
                        cmd
                    }
                    None => Command::new(load_bench),
                };
                cmd.arg("--serve-bench-plugin");
                cmd
            }
        };
        if scheme == Scheme::Https {
            cmd.arg("--cert").arg(&tls.cert).arg("--key").arg(&tls.key);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("spawning {cmd:?}"))?;
        let stdout = child.stdout.take();
        // From here on, dropping it ends the process.
        let mut plugin = Plugin {
            child,
            instrument,
            scheme,
            url: String::new(),
        };
        let mut line = String::new();
        if let Some(stdout) = stdout {
            BufReader::new(stdout)
                .read_line(&mut line)
                .context("reading the plugin's stdout")?;
        }
        let Some(port) = line.trim().strip_prefix("listening ") else {
            bail!("the plugin did not say where it listens: {line:?}");
        };
        // The certificate is for the name `localhost`; plain HTTP goes to the address.
        let host = match scheme {
            Scheme::Http => "127.0.0.1",
            Scheme::Https => "localhost",
        };
        plugin.url = format!("{}://{host}:{port}/mcp", scheme.name());
        Ok(plugin)
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
