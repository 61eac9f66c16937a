//! `--store` and `[store] url` at the binary: `formwork serve` keeping its sessions in a PostgreSQL
//! database of this test binary's throwaway cluster, the flag winning over the config, and a bad
//! or unreachable store refused with a message that shows no password.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::formwork;
use formwork_testkit::Serve;
use formwork_testkit::postgres::Cluster;

/// Starts `formwork serve` with `args`, stops it (which stores what it holds) and returns its
/// stderr.
fn serve_once(data: &Path, args: &[&str]) -> String {
    let serve = Serve::start(
        Command::new(env!("CARGO_BIN_EXE_formwork"))
            .args(["serve", "--port", "0", "--data-dir"])
            .arg(data)
            .args(args),
    );
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

    let stderr = serve_once(&data, &["--config", config]);
    assert!(
        stderr.contains(&format!("sessions are kept in {by_config};")),
        "{stderr}"
    );
    // The first session serve opens is in the database, and no SQLite file was made.
    assert_eq!(sessions_in(cluster, &by_config), "1\n");
    assert!(!data.join("formwork.db").exists());

    let stderr = serve_once(&data, &["--config", config, "--store", &by_flag]);
    assert!(
        stderr.contains(&format!("sessions are kept in {by_flag};")),
        "{stderr}"
    );
    assert_eq!(sessions_in(cluster, &by_flag), "1\n");
    // The config's database was left alone, and is found again with its session.
    assert_eq!(sessions_in(cluster, &by_config), "1\n");
    serve_once(&data, &["--config", config]);
    assert_eq!(sessions_in(cluster, &by_config), "1\n");

    // A path picks SQLite again.
    let file = dir.path().join("elsewhere.db");
    let stderr = serve_once(&data, &["--store", file.to_str().unwrap()]);
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
