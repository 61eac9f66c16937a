//! `cargo xtask fuzz --time SECONDS [--runs N] [--cmin] [TARGET...]`: the cargo-fuzz targets, one after the other.
//!
//! Each target runs for SECONDS (or until N executions, whichever comes first; `--runs` alone sets no time limit) on
//! its saved corpus (committed, `corpus/<target>` in its fuzz workspace), its seeds and its dictionary. New inputs go
//! to a working corpus under `target/fuzz/corpus/<target>`, kept between runs, so the saved one only changes with
//! `--cmin`: the working entries are then folded into it and the whole is minimized with `cargo fuzz cmin` (to the
//! fewest inputs that reach every edge reached). Crashes
//! land where cargo-fuzz puts them, `artifacts/<target>/` in the fuzz workspace.
//!
//! The build is release with debug assertions (so overflow panics), without AddressSanitizer: the crates forbid
//! unsafe code, and the sanitizer would halve the executions. It needs nightly flags and runs on the stable
//! toolchain with `RUSTC_BOOTSTRAP=1`. cargo-fuzz is installed on first use under `target/tools/`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, run_command, target_dir};

/// The cargo-fuzz release the commands below are written against.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// A cargo-fuzz target: its name, the fuzz workspace that holds it and its dictionary there.
pub struct Target {
    pub name: &'static str,
    pub dir: &'static str,
    dict: &'static str,
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "parse_map_answer",
        dir: "crates/forms/fuzz",
        dict: "dict.txt",
    },
    Target {
        name: "parse_frame",
        dir: "crates/host/fuzz",
        dict: "dict.txt",
    },
];

/// What libFuzzer reported at the end of one run.
#[derive(Debug, Default, PartialEq)]
struct Outcome {
    runs: Option<u64>,
    seconds: Option<u64>,
    exec_per_sec: Option<u64>,
    new_units: Option<u64>,
    /// The input libFuzzer saved when the target crashed (or timed out, or ran out of memory).
    artifact: Option<String>,
    /// libFuzzer reported a crash, a timeout or a leak.
    crashed: bool,
    /// cargo fuzz failed without libFuzzer reporting a crash (a build error, say): its exit status.
    failed: Option<String>,
}

impl Outcome {
    /// Reads one line of libFuzzer's output.
    fn read(&mut self, line: &str) {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("Done ") {
            // `Done 123 runs in 60 second(s)`
            let mut words = rest.split_whitespace();
            if let (Some(runs), Some("runs"), Some("in"), Some(seconds)) =
                (words.next(), words.next(), words.next(), words.next())
            {
                self.runs = runs.parse().ok().or(self.runs);
                self.seconds = seconds.parse().ok().or(self.seconds);
            }
        } else if let Some((key, value)) =
            line.strip_prefix("stat::").and_then(|s| s.split_once(':'))
        {
            let value = value.trim().parse().ok();
            match key {
                "number_of_executed_units" => self.runs = value.or(self.runs),
                "average_exec_per_sec" => self.exec_per_sec = value,
                "new_units_added" => self.new_units = value,
                _ => {}
            }
        } else if let Some(path) = line
            .split_once("Test unit written to ")
            .map(|(_, path)| path)
        {
            self.artifact = Some(path.trim().to_owned());
            self.crashed = true;
        } else if line.contains("ERROR: libFuzzer:") || line.contains("ERROR: AddressSanitizer") {
            self.crashed = true;
        }
    }

    fn ok(&self) -> bool {
        !self.crashed && self.failed.is_none()
    }

    fn summary(&self, name: &str, corpus_files: usize) -> String {
        let known = |value: Option<u64>| value.map_or_else(|| "?".to_owned(), |v| v.to_string());
        let verdict = match (&self.artifact, self.crashed, &self.failed) {
            (Some(artifact), _, _) => format!("CRASH, input saved to {artifact}"),
            (None, true, _) => "CRASH".to_owned(),
            (None, false, Some(status)) => format!("FAILED ({status})"),
            (None, false, None) => "no crash".to_owned(),
        };
        format!(
            "{name}: {} runs in {} s ({} exec/s), {} new inputs, working corpus {corpus_files} files: {verdict}",
            known(self.runs),
            known(self.seconds),
            known(self.exec_per_sec),
            known(self.new_units),
        )
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut seconds = None;
    let mut runs = None;
    let mut cmin = false;
    let mut chosen = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--time" => {
                let value = args.next().context("--time needs a number of seconds")?;
                let value: u64 = value
                    .parse()
                    .with_context(|| format!("--time {value}: not a number of seconds"))?;
                if value == 0 {
                    bail!("--time must be at least 1 second");
                }
                seconds = Some(value);
            }
            "--runs" => {
                let value = args.next().context("--runs needs a number of executions")?;
                let value: u64 = value
                    .parse()
                    .with_context(|| format!("--runs {value}: not a number of executions"))?;
                if value == 0 {
                    bail!("--runs must be at least 1");
                }
                runs = Some(value);
            }
            "--cmin" => cmin = true,
            name => match TARGETS.iter().find(|target| target.name == name) {
                Some(target) => chosen.push(target),
                None => bail!(
                    "unknown fuzz target `{name}` (known: {})",
                    TARGETS
                        .iter()
                        .map(|t| t.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        }
    }
    if seconds.is_none() && runs.is_none() {
        bail!("missing --time SECONDS (or --runs N)");
    }
    let limits = Limits { seconds, runs };
    if chosen.is_empty() {
        chosen = TARGETS.iter().collect();
    }

    let tools = install_cargo_fuzz(root)?;
    let work = target_dir(root).join("fuzz");
    let mut summaries = Vec::new();
    let mut failed = Vec::new();
    for target in chosen {
        let (outcome, corpus_files) = fuzz(root, &tools, &work, target, &limits)?;
        if !outcome.ok() {
            failed.push(target.name);
        }
        summaries.push(outcome.summary(target.name, corpus_files));
        if outcome.ok() && cmin {
            let (files, bytes) = minimize(root, &tools, &work, target)?;
            summaries.push(format!(
                "{}: saved corpus minimized to {files} files, {bytes} bytes",
                target.name
            ));
        }
    }
    eprintln!("xtask: fuzzing summary");
    for summary in &summaries {
        eprintln!("  {summary}");
    }
    if !failed.is_empty() {
        bail!("failed: {}", failed.join(", "));
    }
    Ok(())
}

/// Installs the pinned cargo-fuzz under `target/tools` unless it is there; returns that `bin` directory.
fn install_cargo_fuzz(root: &Path) -> Result<PathBuf> {
    let prefix = target_dir(root).join("tools");
    let bin = prefix.join("bin");
    let installed = Command::new(bin.join("cargo-fuzz"))
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(CARGO_FUZZ_VERSION));
    if !installed {
        run_command(
            cargo()
                .args(["install", "--locked", "cargo-fuzz", "--version"])
                .arg(CARGO_FUZZ_VERSION)
                .arg("--root")
                .arg(&prefix),
        )?;
    }
    Ok(bin)
}

/// `cargo fuzz` with our cargo-fuzz first on `PATH`, in the target's fuzz workspace, on stable.
fn cargo_fuzz(root: &Path, tools: &Path, target: &Target) -> Command {
    let mut path = std::ffi::OsString::from(tools);
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let mut cmd = cargo();
    cmd.arg("fuzz")
        .current_dir(root.join(target.dir))
        .env("PATH", path)
        .env("RUSTC_BOOTSTRAP", "1");
    cmd
}

/// How `cargo fuzz run` and `cargo fuzz cmin` build a target (see the module doc).
const BUILD_FLAGS: &[&str] = &["--release", "--debug-assertions", "--sanitizer", "none"];

/// Builds shared by both fuzz workspaces (and kept apart from the ordinary ones: the flags differ).
fn build_dir(work: &Path) -> PathBuf {
    work.join("build")
}

/// When a run stops: after so many seconds, so many executions, or the first of both.
struct Limits {
    seconds: Option<u64>,
    runs: Option<u64>,
}

fn fuzz(
    root: &Path,
    tools: &Path,
    work: &Path,
    target: &Target,
    limits: &Limits,
) -> Result<(Outcome, usize)> {
    let dir = root.join(target.dir);
    let corpus = work.join("corpus").join(target.name);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let mut cmd = cargo_fuzz(root, tools, target);
    cmd.arg("run")
        .args(BUILD_FLAGS)
        .arg("--target-dir")
        .arg(build_dir(work))
        .arg(target.name)
        .arg(&corpus);
    // The saved corpus and the seeds are read, never written: libFuzzer adds to the first directory only.
    for input in [dir.join("corpus").join(target.name), dir.join("seeds")] {
        if input.is_dir() {
            cmd.arg(input);
        }
    }
    cmd.arg("--")
        .arg(format!("-dict={}", dir.join(target.dict).display()))
        // A single input that takes this long is a hang worth reporting.
        .arg("-timeout=20")
        .arg("-print_final_stats=1")
        .stderr(Stdio::piped());
    if let Some(seconds) = limits.seconds {
        cmd.arg(format!("-max_total_time={seconds}"));
    }
    if let Some(runs) = limits.runs {
        cmd.arg(format!("-runs={runs}"));
    }
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let mut child = cmd
        .spawn()
        .with_context(|| format!("could not start {shown}"))?;
    let mut outcome = Outcome::default();
    if let Some(stderr) = child.stderr.take() {
        // Read to the end whatever it holds (a panic message may quote the input), so the child never blocks.
        for line in BufReader::new(stderr).split(b'\n') {
            let line = line.context("reading the fuzzer's output")?;
            let line = String::from_utf8_lossy(&line);
            eprintln!("{line}");
            outcome.read(&line);
        }
    }
    let status = child
        .wait()
        .with_context(|| format!("waiting for {shown}"))?;
    if !status.success() {
        outcome.failed = Some(status.to_string());
    }
    let corpus_files = std::fs::read_dir(&corpus)
        .map(|entries| entries.count())
        .unwrap_or(0);
    Ok((outcome, corpus_files))
}

/// Folds the working corpus into the saved one, then minimizes the saved one in place: every edge the
/// fuzzer reached stays reached, by as few inputs as libFuzzer finds.
/// Returns the saved corpus's size then: files and bytes.
fn minimize(root: &Path, tools: &Path, work: &Path, target: &Target) -> Result<(usize, u64)> {
    let saved = root.join(target.dir).join("corpus").join(target.name);
    let corpus = work.join("corpus").join(target.name);
    std::fs::create_dir_all(&saved).with_context(|| format!("creating {}", saved.display()))?;
    for entry in
        std::fs::read_dir(&corpus).with_context(|| format!("reading {}", corpus.display()))?
    {
        let entry = entry?;
        // Entries are named by their content's hash, so a name already saved is the same input.
        std::fs::copy(entry.path(), saved.join(entry.file_name()))
            .with_context(|| format!("copying {}", entry.path().display()))?;
    }
    let mut cmd = cargo_fuzz(root, tools, target);
    run_command(
        cmd.arg("cmin")
            .args(BUILD_FLAGS)
            .arg("--target-dir")
            .arg(build_dir(work))
            .arg(target.name)
            .arg(&saved)
            // The smallest set of inputs (greedy set cover) that reaches every edge, however often:
            // a few hundred files where the plain merge keeps thousands.
            .args(["--", "-set_cover_merge=1", "-use_counters=0"]),
    )?;
    let mut files = 0;
    let mut bytes = 0;
    for entry in
        std::fs::read_dir(&saved).with_context(|| format!("reading {}", saved.display()))?
    {
        files += 1;
        bytes += entry?.metadata()?.len();
    }
    Ok((files, bytes))
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    fn read(lines: &str) -> Outcome {
        let mut outcome = Outcome::default();
        lines.lines().for_each(|line| outcome.read(line));
        outcome
    }

    #[test]
    fn reads_the_final_figures_of_a_clean_run() {
        let outcome = read(
            "#1048576\tpulse  cov: 2113 ft: 9012 corp: 431/21Kb exec/s: 34952 rss: 512Mb\n\
             Done 2097152 runs in 61 second(s)\n\
             stat::number_of_executed_units: 2097153\n\
             stat::average_exec_per_sec:     34379\n\
             stat::new_units_added:          12\n\
             stat::slowest_unit_time_sec:    0\n\
             stat::peak_rss_mb:              517\n",
        );
        assert_eq!(
            outcome,
            Outcome {
                runs: Some(2_097_153),
                seconds: Some(61),
                exec_per_sec: Some(34_379),
                new_units: Some(12),
                artifact: None,
                crashed: false,
                failed: None,
            }
        );
        assert_eq!(
            outcome.summary("parse_frame", 440),
            "parse_frame: 2097153 runs in 61 s (34379 exec/s), 12 new inputs, working corpus 440 files: no crash"
        );
    }

    #[test]
    fn a_crash_names_the_saved_input() {
        let outcome = read(
            "thread '<unnamed>' panicked at src/fuzzing.rs:10:5:\n\
             ==4242== ERROR: libFuzzer: deadly signal\n\
             artifact_prefix='/w/crates/host/fuzz/artifacts/parse_frame/'; Test unit written to /w/crates/host/fuzz/artifacts/parse_frame/crash-da39a3ee\n\
             stat::number_of_executed_units: 777\n\
             stat::average_exec_per_sec:     0\n",
        );
        assert!(outcome.crashed);
        assert!(!outcome.ok());
        assert_eq!(outcome.runs, Some(777));
        assert_eq!(
            outcome.summary("parse_frame", 3),
            "parse_frame: 777 runs in ? s (0 exec/s), ? new inputs, working corpus 3 files: \
             CRASH, input saved to /w/crates/host/fuzz/artifacts/parse_frame/crash-da39a3ee"
        );
    }

    #[test]
    fn a_failure_that_is_no_crash_says_so() {
        let mut outcome = read("error: could not compile `formwork-host`\n");
        assert!(outcome.ok());
        outcome.failed = Some("exit status: 101".to_owned());
        assert!(!outcome.ok());
        assert_eq!(
            outcome.summary("parse_frame", 0),
            "parse_frame: ? runs in ? s (? exec/s), ? new inputs, working corpus 0 files: FAILED (exit status: 101)"
        );
    }
}
