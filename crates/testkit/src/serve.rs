//! One launcher of `formwork serve` for every test that runs the workbench as a process.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use crate::{TIMEOUT, kill_group, without_user_config};

/// A running `formwork serve` in its own process group (its plugins in it too), with no user config unless the
/// command names one. Its stderr is collected while it runs; its whole group is killed when dropped.
pub struct Serve {
    child: Child,
    /// The first line it printed on stdout (`formwork serve: <URL>` when it started).
    pub first_line: String,
    stderr: Arc<Mutex<String>>,
    stderr_closed: mpsc::Receiver<()>,
}

impl Serve {
    /// Runs `command` (the `formwork` binary with `serve` and its flags) and waits for its URL; fails the test,
    /// showing its stderr, when it prints none.
    pub fn start(command: &mut Command) -> Serve {
        let serve = Serve::spawn(command);
        if serve.url().is_none() {
            let first = serve.first_line.clone();
            let stderr = serve.stop();
            panic!("formwork serve printed no URL (first line {first:?}); stderr:\n{stderr}");
        }
        serve
    }

    /// Runs `command` and waits (bounded by [`TIMEOUT`]) for its first line on stdout, whatever it is.
    pub fn spawn(command: &mut Command) -> Serve {
        let mut child = without_user_config(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("starting formwork serve");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (closed, stderr_closed) = mpsc::channel();
        let mut pipe = child.stderr.take().expect("its stderr");
        let collected = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(read) = pipe.read(&mut chunk) {
                if read == 0 {
                    break;
                }
                collected
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
            let _ = closed.send(());
        });
        let stdout = child.stdout.take().expect("its stdout");
        let (line_sender, line) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let _ = line_sender.send(first);
            // Drained, so the server never blocks on a full pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let first_line = line.recv_timeout(TIMEOUT).unwrap_or_default();
        Serve {
            child,
            first_line,
            stderr,
            stderr_closed,
        }
    }

    /// Its workbench URL, `http://127.0.0.1:PORT/#token=TOKEN`, from its first line.
    pub fn url(&self) -> Option<&str> {
        self.first_line.trim().strip_prefix("formwork serve: ")
    }

    /// The port of its workbench.
    pub fn port(&self) -> u16 {
        self.address()
            .0
            .parse()
            .unwrap_or_else(|_| panic!("no port in {:?}", self.first_line))
    }

    /// The token of its workbench.
    pub fn token(&self) -> &str {
        self.address().1
    }

    fn address(&self) -> (&str, &str) {
        self.url()
            .and_then(|url| url.strip_prefix("http://127.0.0.1:"))
            .and_then(|rest| rest.split_once("/#token="))
            .unwrap_or_else(|| panic!("no workbench URL in {:?}", self.first_line))
    }

    /// The server's process id, also its process group's.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL to the server alone (its plugins live on until they notice).
    pub fn kill(&mut self) {
        self.child.kill().expect("killing formwork serve");
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Waits (bounded by [`TIMEOUT`]) for the server to end, e.g. after a kill; its exit status.
    pub fn wait_dead(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for formwork serve") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "formwork serve did not end; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGTERM, as Ctrl-C would; returns its whole stderr.
    pub fn stop(self) -> String {
        self.stop_with_status().1
    }

    /// [`Serve::stop`], with its exit status: what it left of its group is killed after [`TIMEOUT`] (a plugin it
    /// did not stop; usually nothing is).
    pub fn stop_with_status(mut self) -> (ExitStatus, String) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for formwork serve") {
                break status;
            }
            if Instant::now() >= deadline {
                kill_group(self.child.id());
                break self.child.wait().expect("waiting for formwork serve");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        kill_group(self.child.id());
        let _ = self.stderr_closed.recv_timeout(Duration::from_secs(5));
        (status, self.stderr())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}
