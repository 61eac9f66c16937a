//! What formwork's tests share, a dev-dependency only: where the test peers are (`cargo xtask peers` installs them
//! under `$FORMWORK_PEERS`), free ports, process groups, one launcher of `formwork serve`, the TS SDK's OAuth example
//! the simulated model provider (tests/peers/sim_provider.py) and a throwaway PostgreSQL cluster (`postgres`).
//!
//! It depends on no formwork crate, so every crate's tests may use it (`cargo xtask`'s dependency-direction check
//! keeps it so).

mod oauth;
pub mod postgres;
mod serve;
mod sim;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub use oauth::OAuthExample;
pub use serve::Serve;
pub use sim::SimProvider;

/// Long enough for a cold node or Python start on a busy 2-core machine; short enough to fail a hang quickly.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The directory `cargo xtask peers` installed the peers into: `$FORMWORK_PEERS`.
pub fn peers_dir() -> PathBuf {
    let Some(dir) = std::env::var_os("FORMWORK_PEERS") else {
        panic!("FORMWORK_PEERS is not set: run `cargo xtask test` to install the test peers");
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.join("npm/node_modules").is_dir() && dir.join("venv").is_dir(),
        "{} holds no peers: run `cargo xtask test` to install the test peers",
        dir.display()
    );
    dir
}

/// Node 22 from the `node` npm package of the peers, and the peers' other npm binaries.
pub fn node_bin_dir() -> PathBuf {
    peers_dir().join("npm/node_modules/.bin")
}

/// The peers' node 22.
pub fn node() -> PathBuf {
    node_bin_dir().join("node")
}

/// The root of the formwork checkout.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A local port that was free a moment ago, for a peer that must be told its port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|socket| socket.local_addr())
        .expect("a free port")
        .port()
}

/// Ends every process of a group this test started, quietly when it is already gone.
pub fn kill_group(group: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{group}")])
        .stderr(Stdio::null())
        .status();
}

/// The home and config directory every `formwork` run gets unless its test names its own: a path that does not
/// exist, so no user config applies (the person's own `~/.config/formwork/formwork.toml` never leaks into a test).
pub const NO_HOME: &str = "/nonexistent/formwork-test-home";

/// Points `HOME` and `XDG_CONFIG_HOME` at [`NO_HOME`], each unless the command already sets it.
pub fn without_user_config(command: &mut Command) -> &mut Command {
    for var in ["HOME", "XDG_CONFIG_HOME"] {
        if !command.get_envs().any(|(name, _)| name == var) {
            command.env(var, NO_HOME);
        }
    }
    command
}

/// Waits until something listens on `host:port`, failing the test after 30 s; `what` names it then.
pub fn wait_listening(what: &str, host: &str, port: u16) {
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect((host, port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
