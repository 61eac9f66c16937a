//! Signing in to a real OAuth-protected server from the terminal: the official TS SDK's example
//! server (`simpleStreamableHttp.js --oauth`, @modelcontextprotocol/sdk 1.32.2) with its demo
//! authorization server on a port of its own. `formwork login` opens the authorization page in
//! headless Chromium (Debian's, through `$BROWSER`), which follows the server's redirect to
//! formwork's one-shot listener; the tokens go to the file store, and later calls use them.
//! The D-Bus session bus points nowhere, so `auto` keeps tokens in the data directory's file;
//! the keyring test gives formwork a session bus of its own with GNOME Keyring's Secret Service
//! (Debian's `dbus-daemon` and `gnome-keyring`, which `cargo xtask test` installs).

#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use common::{Output, TIMEOUT, run};
use formwork_testkit::OAuthExample;
use serde_json::Value;

const CHROMIUM: &str = "/usr/bin/chromium";

struct World {
    _dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
    profile: PathBuf,
    /// The session bus formwork is given: by default none that exists.
    bus: String,
}

impl World {
    fn new(url: &str) -> World {
        World::with_config(&format!("[mcp_servers.demo]\nurl = \"{url}\"\n"))
    }

    /// A world whose server `demo` at `url` keeps its tokens in `store`.
    fn with_store(url: &str, store: &str) -> World {
        World::with_config(&format!(
            "mcp_oauth_credentials_store = \"{store}\"\n[mcp_servers.demo]\nurl = \"{url}\"\n"
        ))
    }

    /// This world with `keyring`'s session bus.
    fn on_bus(mut self, keyring: &PrivateKeyring) -> World {
        self.bus = keyring.address.clone();
        self
    }

    fn with_config(text: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let config = root.join("formwork.toml");
        std::fs::write(&config, text).unwrap();
        World {
            config,
            data: root.join("data"),
            profile: root.join("chromium"),
            bus: "unix:path=/nonexistent/formwork-test-bus".to_owned(),
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
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus);
        common::without_user_config(&mut cmd);
        run(&mut cmd, None, TIMEOUT)
    }

    /// [`World::greet`], which must succeed with the tool's answer.
    fn greeted(&self) -> Output {
        let after = self.greet();
        after.assert_code(0);
        assert_eq!(
            after.json(),
            serde_json::json!({"content": [{"type": "text", "text": "Hello, Ada!"}]}),
            "{after}"
        );
        after
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
    // `formwork login` takes a configured name: a server given by its URL alone is named first.
    let unnamed = &server.url;
    let by_url = World::with_config("").formwork(&["doctor", "--url", unnamed]);
    by_url.assert_code(2);
    let error = by_url.json()["connection"]["error"].clone();
    assert_eq!(
        error,
        Value::from(format!(
            "initialize failed: {unnamed} needs you to sign in, which formwork does for a configured \
             server: add it as [mcp_servers.NAME] and run `formwork login NAME` (code -32603)"
        )),
        "{by_url}"
    );

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

    let after = world.greeted();
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

/// A D-Bus session bus of its own with GNOME Keyring's Secret Service on it, its login keyring
/// unlocked, all under a temporary home; stopped when dropped.
struct PrivateKeyring {
    _home: tempfile::TempDir,
    bus: std::process::Child,
    keyring: std::process::Child,
    address: String,
}

impl PrivateKeyring {
    fn start() -> PrivateKeyring {
        use std::io::{BufRead, Write};
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        for program in ["/usr/bin/dbus-daemon", "/usr/bin/gnome-keyring-daemon"] {
            assert!(
                std::path::Path::new(program).is_file(),
                "{program} is missing: `cargo xtask test` installs Debian's dbus-daemon and gnome-keyring when run as root"
            );
        }
        let home = tempfile::tempdir().unwrap();
        let runtime = home.path().join("run");
        std::fs::create_dir(&runtime).unwrap();
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut bus = Command::new("/usr/bin/dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut address = String::new();
        std::io::BufReader::new(bus.stdout.take().unwrap())
            .read_line(&mut address)
            .unwrap();
        let address = address.trim().to_owned();
        assert!(address.starts_with("unix:"), "{address:?}");
        let mut keyring = Command::new("/usr/bin/gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &address)
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // The login keyring's password, on stdin; closing it tells the daemon that is all.
        let mut stdin = keyring.stdin.take().unwrap();
        stdin.write_all(b"formwork-test").unwrap();
        drop(stdin);
        let started = std::time::Instant::now();
        while !Self::serves_secrets(&address) {
            assert!(
                started.elapsed() < TIMEOUT,
                "gnome-keyring-daemon did not take the Secret Service name"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        PrivateKeyring {
            _home: home,
            bus,
            keyring,
            address,
        }
    }

    /// Locks the login keyring, as a session does when it locks the screen. No prompter is
    /// on this bus, so nothing can unlock it again: the daemon answers reads, and refuses
    /// writes.
    fn lock(&self) {
        let out = Command::new("dbus-send")
            .args([
                &format!("--bus={}", self.address),
                "--print-reply",
                "--dest=org.freedesktop.secrets",
                "/org/freedesktop/secrets",
                "org.freedesktop.Secret.Service.Lock",
                "array:objpath:/org/freedesktop/secrets/collection/login",
            ])
            .output()
            .unwrap();
        let reply = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && reply.contains("/org/freedesktop/secrets/collection/login"),
            "locking the login keyring: {reply} {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Whether `org.freedesktop.secrets` has an owner on the bus at `address`.
    fn serves_secrets(address: &str) -> bool {
        Command::new("dbus-send")
            .args([
                &format!("--bus={address}"),
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets",
            ])
            .output()
            .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("boolean true"))
    }
}

impl Drop for PrivateKeyring {
    fn drop(&mut self) {
        for child in [&mut self.keyring, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn login_with_the_keyring_store_keeps_the_tokens_in_the_keyring_only() {
    let server = OAuthExample::start();
    let keyring = PrivateKeyring::start();
    let world = World::with_store(&server.url, "keyring").on_bus(&keyring);

    let login = world.formwork(&["login", "demo"]);
    login.assert_code(0);
    login.assert_stderr_mentions("Signed in to demo (tokens kept in keyring)");
    assert_eq!(login.json()["store"], Value::from("keyring"), "{login}");
    assert!(
        !world.data.join("mcp-credentials.json").exists(),
        "no file beside the keyring"
    );

    world.greeted();

    let logout = world.formwork(&["logout", "demo"]);
    logout.assert_code(0);
    let again = world.greet();
    again.assert_code(2);
    again.assert_stderr_mentions("demo needs you to sign in: run `formwork login demo`");
    assert!(!world.data.join("mcp-credentials.json").exists());
}

/// With the keyring named and none answering, the sign-in in the browser works but its tokens
/// cannot be kept: `login` fails and says so, rather than a success the next run does not see.
#[test]
fn login_whose_tokens_cannot_be_kept_fails_and_says_why() {
    let server = OAuthExample::start();
    let world = World::with_store(&server.url, "keyring");
    let login = world.formwork(&["login", "demo"]);
    login.assert_code(2);
    login.assert_stderr_mentions(
        "signing in to demo failed: the tokens could not be kept in the keyring: cannot open the keyring: ",
    );
    assert!(!login.stderr.contains("Signed in"), "{login}");
    assert!(!world.data.join("mcp-credentials.json").exists());
}

/// `auto` with a keyring answering still finds a sign-in that was kept in the file (by an
/// earlier run without a keyring, or one whose write the keyring refused), and `logout`
/// forgets it there.
#[test]
fn auto_with_a_keyring_finds_and_forgets_a_sign_in_kept_in_the_file() {
    let server = OAuthExample::start();
    let keyring = PrivateKeyring::start();
    let world = World::with_store(&server.url, "file").on_bus(&keyring);
    world.formwork(&["login", "demo"]).assert_code(0);
    let credentials = world.data.join("mcp-credentials.json");
    assert!(credentials.exists());

    std::fs::write(
        &world.config,
        format!("[mcp_servers.demo]\nurl = \"{}\"\n", server.url),
    )
    .unwrap();
    world.greeted();
    world.formwork(&["logout", "demo"]).assert_code(0);
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    assert_eq!(
        kept,
        serde_json::json!({}),
        "the file still holds the sign-in"
    );
    let again = world.greet();
    again.assert_code(2);
    again.assert_stderr_mentions("demo needs you to sign in: run `formwork login demo`");
}

/// `auto` with a keyring that answers but refuses the write (its collection is locked and
/// nothing can unlock it): the sign-in is kept in the file, `login` says so rather than
/// naming the keyring, later calls find it there, and `logout` says where it was.
#[test]
fn auto_keeps_a_sign_in_the_locked_keyring_refuses_in_the_file() {
    let server = OAuthExample::start();
    let keyring = PrivateKeyring::start();
    keyring.lock();
    let world = World::new(&server.url).on_bus(&keyring);
    let credentials = world.data.join("mcp-credentials.json");
    let in_file = format!("file {}", credentials.display());

    let login = world.formwork(&["login", "demo"]);
    login.assert_code(0);
    login.assert_stderr_mentions(&format!("Signed in to demo (tokens kept in {in_file})"));
    assert_eq!(
        login.json()["store"],
        Value::from(in_file.as_str()),
        "{login}"
    );
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    assert_eq!(
        kept.as_object().unwrap().keys().collect::<Vec<_>>(),
        [&format!("demo {}", server.url)],
        "{kept}"
    );

    world.greeted();

    let logout = world.formwork(&["logout", "demo"]);
    logout.assert_code(0);
    logout.assert_stderr_mentions(&format!(
        "Signed out of demo (tokens removed from {in_file})"
    ));
    assert_eq!(
        logout.json(),
        serde_json::json!({"server": "demo", "url": server.url, "removed": true, "store": in_file}),
        "{logout}"
    );
    let again = world.greet();
    again.assert_code(2);
    again.assert_stderr_mentions("demo needs you to sign in: run `formwork login demo`");
}
