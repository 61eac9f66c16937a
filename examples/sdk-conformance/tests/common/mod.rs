//! What the tests of `sdk-conformance` share: the server process, the test peers' node, bounded
//! waits, and a bare HTTP POST.
#![allow(dead_code)] // each test binary uses its own subset

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The server under test, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// Starts `sdk-conformance --port 0` and reads the port it chose from its first line.
    pub fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sdk-conformance"))
            .args(["--port", "0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start sdk-conformance");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the server's first line");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok());
        let Some(port) = port else {
            let _ = child.kill();
            panic!("sdk-conformance did not say where it listens: {line:?}");
        };
        Self { child, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response, its body read until the server closed the connection.
pub struct Response {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(found, _)| found == name)
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.0 POST of `body` to `/mcp` with `headers` (`Host` among them): the server closes the
/// connection after the response, so the body needs no de-chunking.
pub fn post(port: u16, headers: &[(&str, &str)], body: &str) -> Response {
    let mut request = String::from("POST /mcp HTTP/1.0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    ));
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    // SSE keep-alive comments would reset a read timeout, so the whole response has a deadline.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut raw = Vec::new();
    let mut chunk = [0; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no complete response in 30 s: {:?}",
            String::from_utf8_lossy(&raw)
        );
        stream.set_read_timeout(Some(left)).expect("read timeout");
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => raw.extend_from_slice(&chunk[..read]),
            Err(err)
                if err.kind() == std::io::ErrorKind::WouldBlock
                    || err.kind() == std::io::ErrorKind::TimedOut => {}
            Err(err) => panic!("reading the response: {err}"),
        }
    }
    let raw = String::from_utf8(raw).expect("a UTF-8 response");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status_line:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Waits for `child`, killing it and failing the test after `timeout`.
pub fn wait_bounded(mut child: Child, timeout: Duration) -> ExitStatus {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the suite") {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the conformance suite did not finish in {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Like `wait_bounded`, collecting stdout and stderr (both piped).
pub fn wait_bounded_output(mut child: Child, timeout: Duration) -> (ExitStatus, String, String) {
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = wait_bounded(child, timeout);
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    (status, stdout, stderr)
}

/// `$FORMWORK_PEERS/npm`: the npm test peers and, beside their `node_modules`, the fixture scripts.
pub fn npm_peers_dir() -> PathBuf {
    formwork_testkit::peers_dir().join("npm")
}

/// Node 22 and the suite, from the `node` and conformance npm packages of the test peers.
pub fn node_bin_dir() -> PathBuf {
    let dir = npm_peers_dir().join("node_modules/.bin");
    assert!(
        dir.join("conformance").is_file(),
        "{} has no conformance suite: run `cargo xtask peers`",
        dir.display()
    );
    dir
}

/// `PATH` with node 22 first: the suite crashes on older node.
pub fn path_with_node() -> OsString {
    let mut path = OsString::from(node_bin_dir());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}
