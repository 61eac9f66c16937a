//! A throwaway PostgreSQL cluster for the tests of one test binary, and a fresh database per test.
//!
//! The cluster lives under `target/pg-clusters/<pid>` (or the temporary directory, when the `postgres` user cannot
//! reach `target/`), listens on 127.0.0.1 at a free port (its socket in its own directory), trusts local connections,
//! and stops when the test process ends: a static is never dropped, so a small
//! watchdog shell waits for the process to go, then stops the cluster and removes its directory. `initdb` and
//! `postgres` refuse to run as root, so as root (as CI is) the cluster runs as the `postgres` user Debian's package
//! creates. Missing binaries fail the test with what to run: `cargo xtask peers` installs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// The running cluster of this test process.
#[derive(Debug)]
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    databases: AtomicU32,
}

static CLUSTER: OnceLock<Cluster> = OnceLock::new();

impl Cluster {
    /// The cluster of this test process, started on first use.
    pub fn shared() -> &'static Cluster {
        CLUSTER.get_or_init(Cluster::start)
    }

    /// Creates an empty database and returns its URL, `postgres://postgres@127.0.0.1:PORT/t_N`.
    pub fn new_database(&self) -> String {
        let name = format!("t_{}", self.databases.fetch_add(1, Ordering::Relaxed));
        let port = self.port.to_string();
        let created = Command::new(self.bin.join("createdb"))
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "postgres", &name])
            .output()
            .expect("running createdb");
        assert!(
            created.status.success(),
            "createdb {name}: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        self.url(&name)
    }

    /// The URL of database `name` as user `postgres`.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// The port the cluster listens on at 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs `sql` in database `name` with `psql`, failing the test on an error; returns what it printed (unaligned,
    /// tuples only).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                name,
            ])
            .args(["-v", "ON_ERROR_STOP=1", "-A", "-t", "-c", sql])
            .output()
            .expect("running psql");
        assert!(
            output.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Creates the role `user` with `password`, which must give it over TCP (the other roles stay trusted).
    pub fn require_password(&self, user: &str, password: &str) {
        self.psql(
            "postgres",
            &format!("CREATE ROLE {user} LOGIN SUPERUSER PASSWORD '{password}'"),
        );
        let hba = self.dir.join("data/pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).expect("reading pg_hba.conf");
        // The first matching line wins, so the rule goes first.
        let rules = format!("host all {user} 127.0.0.1/32 scram-sha-256\n{rules}");
        std::fs::write(&hba, rules).expect("writing pg_hba.conf");
        self.psql("postgres", "SELECT pg_reload_conf()");
        // The postmaster rereads the rules a moment after the signal: wait until a password is asked for.
        let port = self.port.to_string();
        for _ in 0..100 {
            let without = Command::new(self.bin.join("psql"))
                .args([
                    "-w",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &port,
                    "-U",
                    user,
                    "-d",
                    "postgres",
                    "-c",
                    "SELECT 1",
                ])
                .env_remove("PGPASSWORD")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("running psql");
            if !without.success() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the cluster still lets {user} in without a password");
    }

    fn start() -> Cluster {
        let bin = postgres_bin().unwrap_or_else(|| {
            panic!(
                "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): `cargo xtask peers` installs \
                 Debian's postgresql package, or run `apt-get install -y postgresql`"
            )
        });
        let root = is_root();
        let dir = cluster_dir(root);
        let data = dir.join("data");
        let stop = format!(
            "{} -D {} -m immediate stop",
            bin.join("pg_ctl").display(),
            data.display()
        );
        let stop = if root {
            format!("su postgres -s /bin/sh -c \"{stop}\"")
        } else {
            stop
        };
        let watchdog = format!(
            "while kill -0 {} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {}",
            std::process::id(),
            dir.display()
        );
        // Started first, so that whatever happens next the cluster goes with this process. Started in the
        // background of a shell that returns at once, in a process group of its own, so it outlives
        // this process and no signal meant for the tests' groups reaches it.
        run(
            std::os::unix::process::CommandExt::process_group(
                Command::new("sh")
                    .args(["-c", &format!("({watchdog}) </dev/null >/dev/null 2>&1 &")]),
                0,
            ),
            "starting the cluster's watchdog",
        );
        let port = crate::free_port();
        let initdb = format!(
            "{} -D {} -A trust -U postgres --no-sync",
            bin.join("initdb").display(),
            data.display()
        );
        run(&mut as_cluster_user(root, &initdb, &dir), "initdb");
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            data.display()
        );
        let start = format!(
            "{} -D {} -l {} -o '{options}' -w start",
            bin.join("pg_ctl").display(),
            data.display(),
            dir.join("log").display()
        );
        run(&mut as_cluster_user(root, &start, &dir), "pg_ctl start");
        Cluster {
            bin,
            dir,
            port,
            databases: AtomicU32::new(0),
        }
    }
}

/// The newest installed PostgreSQL's binaries, `/usr/lib/postgresql/<version>/bin`, if one has `initdb`.
pub fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// `target/pg-clusters/<pid>`, fresh; or, when we are root and the `postgres` user cannot write there (a checkout
/// under a private home), the same under the system's temporary directory.
fn cluster_dir(root: bool) -> PathBuf {
    let pid = std::process::id().to_string();
    let candidates = [
        crate::repo_root().join("target/pg-clusters").join(&pid),
        std::env::temp_dir().join("formwork-pg-clusters").join(&pid),
    ];
    for dir in candidates {
        // A cluster of an earlier process with this pid is long gone; start afresh.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).expect("creating the cluster's directory");
        if !root {
            return dir;
        }
        run(
            Command::new("chown").args(["-R", "postgres:"]).arg(&dir),
            "chown",
        );
        let check = format!("test -w {}", dir.join("data").display());
        if as_cluster_user(true, &check, Path::new("/"))
            .status()
            .is_ok_and(|status| status.success())
        {
            return dir;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    panic!("the postgres user can write neither under target/ nor under the temporary directory");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// `command` (a shell line) as the user that owns the cluster: `postgres` when we are root, else ourselves.
fn as_cluster_user(root: bool, command: &str, dir: &Path) -> Command {
    let mut shell = if root {
        let mut su = Command::new("su");
        su.args(["postgres", "-s", "/bin/sh", "-c", command]);
        su
    } else {
        let mut sh = Command::new("sh");
        sh.args(["-c", command]);
        sh
    };
    shell.current_dir(dir);
    shell
}

fn run(command: &mut Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("running {what}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
