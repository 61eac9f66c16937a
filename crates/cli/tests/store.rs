//! `--store` and `[store] url` at the binary: `formwork serve` keeping its sessions in a PostgreSQL
//! database of this test binary's throwaway cluster, the flag winning over the config, and a bad
//! or unreachable store refused with a message that shows no password.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::formwork;
use formwork_testkit::Serve;
use formwork_testkit::postgres::Cluster;

/// Starts `formwork serve` with `args`, waits until it says where sessions are kept and `stored`
/// (a condition on the store) holds, stops it and returns its stderr. The wait matters: a
/// SIGTERM that comes before serve has set up its signal handling ends it at once.
fn serve_once(data: &Path, args: &[&str], stored: impl Fn() -> bool) -> String {
    let serve = Serve::start(
        Command::new(env!("CARGO_BIN_EXE_formwork"))
            .args(["serve", "--port", "0", "--data-dir"])
            .arg(data)
            .args(args),
    );
    let deadline = Instant::now() + formwork_testkit::TIMEOUT;
    while !(serve.stderr().contains("press Ctrl-C to stop") && stored()) {
        assert!(Instant::now() < deadline, "{}", serve.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The handler is set up just after that line.
    std::thread::sleep(Duration::from_millis(200));
    serve.stop()
}

fn sessions_in(cluster: &Cluster, url: &str) -> String {
    cluster.psql(
        url.rsplit('/').next().unwrap(),
        "SELECT count(*) FROM sessions",
    )
}

#[test]
fn serve_keeps_its_sessions_where_the_flag_or_else_the_config_says() {
    let cluster = Cluster::shared();
    let (by_config, by_flag) = (cluster.new_database(), cluster.new_database());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("formwork.toml");
    std::fs::write(&config, format!("[store]\nurl = \"{by_config}\"\n")).unwrap();
    let config = config.to_str().unwrap();

    let one_session = |url: &str| sessions_in(cluster, url) == "1\n";
    let stderr = serve_once(&data, &["--config", config], || one_session(&by_config));
    assert!(
        stderr.contains(&format!("sessions are kept in {by_config};")),
        "{stderr}"
    );
    // The first session serve opens is in the database, and no SQLite file was made.
    assert_eq!(sessions_in(cluster, &by_config), "1\n");
    assert!(!data.join("formwork.db").exists());

    let stderr = serve_once(&data, &["--config", config, "--store", &by_flag], || {
        one_session(&by_flag)
    });
    assert!(
        stderr.contains(&format!("sessions are kept in {by_flag};")),
        "{stderr}"
    );
    assert_eq!(sessions_in(cluster, &by_flag), "1\n");
    // The config's database was left alone, and is found again with its session.
    assert_eq!(sessions_in(cluster, &by_config), "1\n");
    serve_once(&data, &["--config", config], || true);
    assert_eq!(sessions_in(cluster, &by_config), "1\n");

    // A path picks SQLite again.
    let file = dir.path().join("elsewhere.db");
    let stderr = serve_once(&data, &["--store", file.to_str().unwrap()], || {
        file.exists()
    });
    assert!(
        stderr.contains(&format!("sessions are kept in {};", file.display())),
        "{stderr}"
    );
    assert!(file.exists());
}

#[test]
fn a_bad_or_unreachable_store_is_refused_without_showing_the_password() {
    let output = formwork(
        &["serve", "--store", "mysql://ada:s3cret@db/formwork"],
        None,
    );
    let stderr = &output.stderr;
    assert_eq!(output.code, 2, "{stderr}");
    assert!(
        stderr.contains(r#"the store URL scheme "mysql" is not supported"#),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");

    // Nothing listens on this port.
    let port = formwork_testkit::free_port();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://ada:s3cret@127.0.0.1:{port}/formwork");
    let data = dir.path().to_str().unwrap();
    let output = formwork(&["serve", "--data-dir", data, "--store", &url], None);
    let stderr = &output.stderr;
    assert_eq!(output.code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "formwork: cannot connect to the formwork database postgres://ada@127.0.0.1:{port}/formwork: "
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// `demo --store` (and so `call --server NAME --store`): the call runs in a session kept in the
/// store, with its round, form and ending, and prints what a call without a store prints.
#[test]
fn a_call_with_a_store_is_kept_as_a_session_with_its_forms() {
    let cluster = Cluster::shared();
    let url = cluster.new_database();
    let name = url.rsplit('/').next().unwrap();
    let data = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        common::run(
            Command::new(env!("CARGO_BIN_EXE_formwork"))
                .args(args)
                .env("FORMWORK_DATA_DIR", data.path()),
            None,
            common::TIMEOUT,
        )
    };
    let kept = run(&["demo", "--accept-defaults", "--store", &url]);
    kept.assert_code(0);
    let plain = run(&["demo", "--accept-defaults"]);
    plain.assert_code(0);
    assert_eq!(kept.stdout, plain.stdout);
    assert!(
        kept.stdout.contains("Deployed web to staging"),
        "{}",
        kept.stdout
    );

    let query = |sql: &str| cluster.psql(name, sql);
    assert_eq!(
        query("SELECT server || '.' || tool || ':' || status FROM invocations"),
        "demo.deploy:completed\n"
    );
    assert_eq!(
        query("SELECT plugin || ':' || status FROM forms"),
        "demo:accepted\n"
    );
    assert_eq!(
        query("SELECT string_agg(kind, ',' ORDER BY seq) FROM transcript"),
        "invocation,invocation_round,form,form_end,invocation_end\n"
    );

    let output = run(&["call", "--plugin", "true", "tool", "--store", &url]);
    output.assert_code(2);
    output.assert_stderr_mentions(
        "--store keeps a call as a session, which needs a configured server: use --server NAME",
    );
}
