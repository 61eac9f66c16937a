//! The stdio transport: a plugin spawned as a child process, one JSON-RPC message per line.
//!
//! Lines are read by the connection's own task (see [`Frames`]), and a message is written to the
//! child's stdin by whoever sends it, as soon as the pipe takes it: an answer leaves without a
//! hop through another task. What the pipe does not take at once waits, in order, for the
//! writer task.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::Notify;

use super::lines::{LineSplitter, Split};
use super::{Frame, Frames, MAX_FRAME_BYTES, MAX_QUEUED_BYTES, Outgoing, QueueFull, Transport};
use crate::HostError;

/// How long a plugin gets to exit after its stdin is closed before it is terminated.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How much of the child's stdout is read at a time.
const READ_BUFFER: usize = 8 * 1024;

/// What a child's environment is made of.
pub(crate) enum ChildEnv {
    /// These variables and nothing else (a plugin's).
    Only(Vec<(String, OsString)>),
    /// formwork's own but for the workbench's access token (a runtime formwork runs for the
    /// person, such as Codex, which reads its model provider's key there; the commands its model
    /// runs must not reach the workbench).
    Inherit,
}

/// The variable holding the workbench's access token when the person chose one (`formwork
/// serve`); no child process of formwork's sees it.
pub const ACCESS_TOKEN_ENV: &str = "FORMWORK_TOKEN";

/// Spawns `command` with `sh -c` in its own process group and connects to its stdio.
pub(crate) fn spawn(
    command: &str,
    env: ChildEnv,
    inherit_stderr: bool,
) -> Result<Transport, HostError> {
    let mut child = Command::new("sh");
    match env {
        ChildEnv::Only(variables) => child.env_clear().envs(variables),
        ChildEnv::Inherit => child.env_remove(ACCESS_TOKEN_ENV),
    };
    let mut child = child
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if inherit_stderr {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| HostError::Spawn {
            command: command.to_owned(),
            reason: err.to_string(),
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(HostError::Spawn {
            command: command.to_owned(),
            reason: "the child's stdio pipes are missing".to_owned(),
        });
    };
    let stdin = stdin
        .into_owned_fd()
        .and_then(pipe::Sender::from_owned_fd)
        .map_err(|err| HostError::Spawn {
            command: command.to_owned(),
            reason: format!("the child's stdin cannot be used: {err}"),
        })?;
    let pipe = Arc::new(Pipe {
        stdin,
        queue: Mutex::new(Queue::default()),
        wake: Notify::new(),
    });

    let pid = child.id();
    let writer = tokio::spawn({
        let pipe = Arc::clone(&pipe);
        async move {
            write_waiting(&pipe).await;
            // Closes stdin, unless the connection still holds it after a failed write (then
            // nobody reads it anyway).
            drop(pipe);
            shut_down(child, pid).await;
        }
    });

    Ok(Transport {
        outgoing: Outgoing::Pipe(Writer(pipe)),
        incoming: frames(stdout),
        tasks: vec![writer],
    })
}

/// The connection's end of the child's stdin. Dropping it closes stdin once everything sent
/// before has been written.
pub(crate) struct Writer(Arc<Pipe>);

struct Pipe {
    stdin: pipe::Sender,
    queue: Mutex<Queue>,
    /// Wakes the writer task: bytes are waiting, or the `Writer` is gone.
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    /// Bytes the pipe has not taken yet, in order; the first may be partly written.
    waiting: VecDeque<Vec<u8>>,
    /// How many bytes `waiting` holds, at most [`MAX_QUEUED_BYTES`].
    waiting_bytes: usize,
    /// The `Writer` is gone: write what waits, then close.
    closed: bool,
    /// A write failed (the child stopped reading): nothing more is written.
    failed: bool,
}

/// What [`Pipe::write_waiting`] got done.
enum Progress {
    /// Nothing waits.
    Idle,
    /// The pipe is full.
    Blocked,
    /// No more writing: the `Writer` is gone and nothing waits, or a write failed.
    Done,
}

impl Writer {
    /// Writes `message` and a newline, or as much as the pipe takes, at once when nothing waits
    /// before it; the rest waits for the writer task. `QueueFull` when the rest would make more
    /// than [`MAX_QUEUED_BYTES`] wait: then nothing more is written, and the child is ended.
    pub(crate) fn send(&self, message: String) -> Result<(), QueueFull> {
        super::trace_out(&message);
        let mut bytes = message.into_bytes();
        bytes.push(b'\n');
        let Ok(mut queue) = self.0.queue.lock() else {
            return Ok(());
        };
        if queue.failed {
            return Ok(());
        }
        if queue.waiting.is_empty() {
            match self.0.stdin.try_write(&bytes) {
                Ok(written) if written == bytes.len() => return Ok(()),
                Ok(written) if written > 0 => {
                    bytes.drain(..written);
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                Ok(_) | Err(_) => {
                    queue.failed = true;
                    self.0.wake.notify_one();
                    return Ok(());
                }
            }
        }
        if queue.waiting_bytes + bytes.len() > MAX_QUEUED_BYTES {
            queue.failed = true;
            queue.waiting.clear();
            queue.waiting_bytes = 0;
            self.0.wake.notify_one();
            return Err(QueueFull);
        }
        queue.waiting_bytes += bytes.len();
        queue.waiting.push_back(bytes);
        self.0.wake.notify_one();
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Ok(mut queue) = self.0.queue.lock() {
            queue.closed = true;
        }
        self.0.wake.notify_one();
    }
}

impl Pipe {
    /// Writes what waits, in order, as far as the pipe takes it.
    fn write_waiting(&self) -> Progress {
        let Ok(mut queue) = self.queue.lock() else {
            return Progress::Done;
        };
        while !queue.failed
            && let Some(front) = queue.waiting.front_mut()
        {
            match self.stdin.try_write(front) {
                Ok(written) if written == front.len() => {
                    queue.waiting.pop_front();
                    queue.waiting_bytes -= written;
                }
                Ok(written) if written > 0 => {
                    front.drain(..written);
                    queue.waiting_bytes -= written;
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => return Progress::Blocked,
                Ok(_) | Err(_) => queue.failed = true,
            }
        }
        if queue.failed || queue.closed {
            Progress::Done
        } else {
            Progress::Idle
        }
    }
}

/// The writer task: writes what the pipe did not take at once, until the `Writer` is gone and
/// nothing waits, or a write fails.
async fn write_waiting(pipe: &Pipe) {
    loop {
        match pipe.write_waiting() {
            Progress::Idle => pipe.wake.notified().await,
            Progress::Blocked => {
                if pipe.stdin.writable().await.is_err() {
                    return;
                }
            }
            Progress::Done => return,
        }
    }
}

/// The child's stdout as frames, one per line, then `Closed` when it ends or fails. A line over
/// [`MAX_FRAME_BYTES`] is skipped (`Oversized`) and reading goes on.
fn frames(stdout: ChildStdout) -> Frames {
    let reader = BufReader::with_capacity(READ_BUFFER, stdout);
    let state = Some((reader, LineSplitter::new(MAX_FRAME_BYTES)));
    Box::pin(futures::stream::unfold(state, |state| async move {
        let (mut reader, mut splitter) = state?;
        let closed = loop {
            let split = match reader.fill_buf().await {
                Ok([]) => match splitter.finish() {
                    Some(split) => split,
                    None => break "it closed its stdout".to_owned(),
                },
                Ok(chunk) => {
                    let (used, split) = splitter.feed(chunk);
                    reader.consume(used);
                    match split {
                        Some(split) => split,
                        None => continue,
                    }
                }
                Err(err) => break format!("reading its stdout failed: {err}"),
            };
            match split {
                Split::Line(line) if line.iter().all(u8::is_ascii_whitespace) => {}
                Split::Line(line) => {
                    // Not UTF-8 is not JSON either; the replacement characters make that plain.
                    let line = String::from_utf8(line)
                        .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned());
                    super::trace_in(&line);
                    return Some((Frame::Message(line, None), Some((reader, splitter))));
                }
                Split::Oversized => {
                    return Some((Frame::Oversized, Some((reader, splitter))));
                }
            }
        };
        Some((Frame::Closed(closed), None))
    }))
}

/// Ends the child: stdin is already closed; give it a moment, then terminate its process group.
async fn shut_down(mut child: Child, pid: Option<u32>) {
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
        return;
    }
    if let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) {
        let group = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGTERM);
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return;
        }
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.kill().await;
}
