//! Driving `formwork serve` from the bench: start it on a config, open a session, read its socket as the page does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

/// The longest a session's socket may stay quiet before a part gives up.
pub(super) const QUIET_TIMEOUT: Duration = Duration::from_secs(10);

/// A session's socket, as the page has it.
pub(super) type Socket = WebSocket<TcpStream>;

/// Nanoseconds since the epoch, CLOCK_REALTIME as the Python peers and formwork's log read it.
pub(super) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        })
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// `formwork serve` on `DIR/formwork.toml` and `DIR/data`, its stderr in `DIR/serve.log`; stopped (SIGTERM)
/// when dropped.
pub(super) struct Serve {
    child: Child,
    port: u16,
    token: String,
    /// Its stderr.
    pub(super) log: PathBuf,
}

impl Serve {
    /// With `args` besides, and `env` on top of the bench's environment.
    pub(super) fn start(
        formwork: &Path,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Serve> {
        let log = dir.join("serve.log");
        let stderr = std::fs::File::create(&log)?;
        let mut child = Command::new(formwork)
            .args(["serve", "--port", "0", "--data-dir"])
            .arg(dir.join("data"))
            .arg("--config")
            .arg(dir.join("formwork.toml"))
            .args(args)
            .envs(env.iter().copied())
            // No user config, and the provider is on this machine: never through a proxy.
            .env("XDG_CONFIG_HOME", dir.join("no-user-config"))
            .env("HOME", dir.join("no-user-config"))
            .env("no_proxy", "*")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", formwork.display()))?;
        let stdout = child.stdout.take();
        let mut serve = Serve {
            child,
            port: 0,
            token: String::new(),
            log,
        };
        let mut line = String::new();
        if let Some(stdout) = stdout {
            let mut reader = BufReader::new(stdout);
            reader
                .read_line(&mut line)
                .context("reading formwork serve's URL")?;
            // Drained, so that it never blocks on a full pipe.
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        }
        let url = line
            .trim()
            .strip_prefix("formwork serve: http://127.0.0.1:");
        let Some((port, token)) = url.and_then(|rest| rest.split_once("/#token=")) else {
            bail!(
                "formwork serve printed no URL ({line:?}); its log: {}",
                display(&serve.log)
            );
        };
        serve.port = port
            .parse()
            .with_context(|| format!("the port in {line:?}"))?;
        serve.token = token.to_owned();
        Ok(serve)
    }

    /// `POST /api/sessions`: the new session's id.
    pub(super) fn create_session(&self) -> Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        write!(
            stream,
            "POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
             Content-Length: 0\r\nConnection: close\r\n\r\n",
            self.port, self.token
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body)
            .unwrap_or("");
        let created: Value = serde_json::from_str(body)
            .with_context(|| format!("POST /api/sessions answered {response:?}"))?;
        created
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("POST /api/sessions answered {response:?}"))
    }

    /// The session's socket, once its snapshot is through.
    pub(super) fn socket(&self, session: &str) -> Result<Socket> {
        let stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(QUIET_TIMEOUT))?;
        let port = self.port;
        let mut request =
            format!("ws://127.0.0.1:{port}/api/sessions/{session}/socket").into_client_request()?;
        let headers = request.headers_mut();
        headers.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {}", self.token))?,
        );
        headers.insert(
            "origin",
            HeaderValue::from_str(&format!("http://127.0.0.1:{port}"))?,
        );
        headers.insert(
            "sec-websocket-protocol",
            HeaderValue::from_static("formwork"),
        );
        let (mut socket, _) = tungstenite::client(request, stream)
            .map_err(|err| anyhow!("opening the session's socket: {err}"))?;
        loop {
            if let Message::Text(text) = socket.read()?
                && text.as_str().contains(r#""type":"snapshot_done""#)
            {
                return Ok(socket);
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..500 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
