//! Signing in to a real OAuth-protected server from the terminal: the official TS SDK's example
//! server (`simpleStreamableHttp.js --oauth`, @modelcontextprotocol/sdk 1.32.2) with its demo
//! authorization server on a port of its own. `formwork login` opens the authorization page in
//! headless Chromium (Debian's, through `$BROWSER`), which follows the server's redirect to
//! formwork's one-shot listener; the tokens go to the file store, and later calls use them.
//! The D-Bus session bus points nowhere, so `auto` keeps tokens in the data directory's file.

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use common::{OAuthExample, Output, TIMEOUT, run};
use serde_json::Value;

const CHROMIUM: &str = "/usr/bin/chromium";

struct World {
    _dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    profile: PathBuf,
}

impl World {
    fn new(url: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let config = root.join("formwork.toml");
        std::fs::write(&config, format!("[mcp_servers.demo]\nurl = \"{url}\"\n")).unwrap();
        World {
            config,
            data: root.join("data"),
            profile: root.join("chromium"),
            _dir: dir,
        }
    }

    fn formwork(&self, args: &[&str]) -> Output {
        let browser = format!(
            "{CHROMIUM} --headless --no-sandbox --disable-gpu --disable-background-networking \
             --no-first-run --disable-component-update --disable-sync --user-data-dir={} --dump-dom %s",
            self.profile.display()
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
        cmd.args(args)
            .arg("--config")
            .arg(&self.config)
            .env("FORMWORK_DATA_DIR", &self.data)
            .env("BROWSER", browser)
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent/formwork-test-bus",
            );
        common::without_user_config(&mut cmd);
        run(&mut cmd, None, TIMEOUT)
    }

    fn greet(&self) -> Output {
        self.formwork(&[
            "call",
            "--server",
            "demo",
            "greet",
            "--args",
            r#"{"name":"Ada"}"#,
        ])
    }
}

#[test]
fn login_then_calls_use_the_stored_token_until_logout() {
    assert!(
        std::path::Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: `cargo xtask test` installs Debian's chromium package when run as root"
    );
    let server = OAuthExample::start();
    let world = World::new(&server.url);

    // Before sign-in the call fails at once, saying what to do.
    let before = world.greet();
    before.assert_code(2);
    before.assert_stderr_mentions("demo needs you to sign in: run `formwork login demo`");

    let login = world.formwork(&["login", "demo"]);
    login.assert_code(0);
    let credentials = world.data.join("mcp-credentials.json");
    login.assert_stderr_mentions(&format!(
        "Signed in to demo (tokens kept in file {})",
        credentials.display()
    ));
    assert_eq!(login.json()["server"], Value::from("demo"), "{login}");
    let mode = std::fs::metadata(&credentials)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // The token never shows in what formwork prints.
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    let entry = stored.as_object().unwrap().values().next().unwrap();
    let token = entry["access_token"].as_str().unwrap();
    assert!(!token.is_empty());
    assert!(!format!("{}{}", login.stdout, login.stderr).contains(token));
    assert_eq!(entry["resource"], Value::from(server.url.as_str()));

    let after = world.greet();
    after.assert_code(0);
    assert_eq!(
        after.json(),
        serde_json::json!({"content": [{"type": "text", "text": "Hello, Ada!"}]}),
        "{after}"
    );
    assert!(!format!("{}{}", after.stdout, after.stderr).contains(token));

    let logout = world.formwork(&["logout", "demo"]);
    logout.assert_code(0);
    let again = world.greet();
    again.assert_code(2);
    again.assert_stderr_mentions("demo needs you to sign in: run `formwork login demo`");
}

#[test]
fn the_doctor_lists_the_sign_in_steps_of_a_server_not_signed_in_to() {
    let server = OAuthExample::start();
    let world = World::new(&server.url);
    let doctor = world.formwork(&["doctor", "--server", "demo"]);
    doctor.assert_code(2);
    let report = doctor.json();
    let connection = &report["connection"];
    assert_eq!(connection["connected"], Value::from(false));
    let error = connection["error"].as_str().unwrap();
    assert!(
        error.contains("demo needs you to sign in: run `formwork login demo`"),
        "{error}"
    );
    let origin = server.url.trim_end_matches("/mcp");
    let steps: Vec<(String, String, String)> = connection["sign_in"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| {
            (
                step["step"].as_str().unwrap().to_owned(),
                step["url"].as_str().unwrap().to_owned(),
                step["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // The resource metadata the 401 names, then its authorization server's, then the sign-in
    // that needs a person.
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(
        steps[0],
        (
            "protected resource metadata".to_owned(),
            format!("{origin}/.well-known/oauth-protected-resource/mcp"),
            "found".to_owned()
        )
    );
    assert_eq!(steps[1].0, "authorization server metadata");
    assert!(
        steps[1]
            .1
            .ends_with("/.well-known/oauth-authorization-server"),
        "{steps:?}"
    );
    assert_eq!(steps[1].2, "found");
    assert_eq!(steps[2].0, "sign-in");
    assert_eq!(
        steps[2].2,
        "demo needs you to sign in: run `formwork login demo`"
    );
    doctor.assert_stderr_mentions("formwork: doctor: the sign-in's steps, in order:");
}

#[test]
fn a_401_outside_sign_in_says_what_to_do() {
    let server = OAuthExample::start();
    let world = World::new(&server.url);
    // An ad-hoc URL is no configured server: nothing to sign in with, and the error says how.
    let adhoc = world.formwork(&["tools", "--url", &server.url]);
    adhoc.assert_code(2);
    adhoc.assert_stderr_mentions(
        "(it asks for a sign-in, which formwork does for a configured server: add it as [mcp_servers.NAME] and run `formwork login NAME`)",
    );
}

#[test]
fn login_to_a_server_that_asks_for_no_sign_in_says_so() {
    let everything = common::EverythingHttp::start();
    let world = World::new(&format!("http://127.0.0.1:{}/mcp", everything.port));
    let login = world.formwork(&["login", "demo"]);
    login.assert_code(2);
    login.assert_stderr_mentions(
        "signing in to demo failed: it answered `initialize` without asking for a sign-in, and publishes no protected resource metadata: there is nothing to sign in to",
    );
    assert!(!world.data.join("mcp-credentials.json").exists());
}
