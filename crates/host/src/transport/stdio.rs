//! The stdio transport: a plugin spawned as a child process, one JSON-RPC message per line.

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::{Frame, MAX_FRAME_BYTES, Transport};
use crate::HostError;

/// How long a plugin gets to exit after its stdin is closed before it is terminated.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Spawns `command` with `sh -c` in its own process group and connects to its stdio.
pub(crate) fn spawn(command: &str, inherit_stderr: bool) -> Result<Transport, HostError> {
    let mut child = Command::new("sh")
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
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(HostError::Spawn {
            command: command.to_owned(),
            reason: "the child's stdio pipes are missing".to_owned(),
        });
    };

    let (incoming_tx, incoming) = mpsc::unbounded_channel();
    let (outgoing, mut outgoing_rx) = mpsc::unbounded_channel::<String>();

    let reader = tokio::spawn(async move {
        let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_FRAME_BYTES));
        let reason = loop {
            match lines.next().await {
                Some(Ok(line)) if line.trim().is_empty() => {}
                Some(Ok(line)) => {
                    if incoming_tx.send(Frame::Message(line)).is_err() {
                        return;
                    }
                }
                Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                    // The codec discards the rest of the line and goes on with the next one.
                    let _ = incoming_tx.send(Frame::Oversized);
                }
                Some(Err(LinesCodecError::Io(err))) => {
                    break format!("reading its stdout failed: {err}");
                }
                None => break "it closed its stdout".to_owned(),
            }
        };
        let _ = incoming_tx.send(Frame::Closed(reason));
    });

    let pid = child.id();
    let writer = tokio::spawn(async move {
        while let Some(mut message) = outgoing_rx.recv().await {
            message.push('\n');
            if stdin.write_all(message.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                break;
            }
        }
        drop(stdin);
        shut_down(child, pid).await;
    });

    Ok(Transport {
        outgoing,
        incoming,
        tasks: vec![reader, writer],
    })
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
