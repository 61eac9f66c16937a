//! OAuth around remote (Streamable HTTP) servers from a terminal (docs/cli.md, "Remote servers: headers
//! and sign-in"): `formwork logout NAME` forgets the tokens kept for the server's name and configured URL,
//! and `env_http_headers` puts a variable's value on the wire. Every run points the D-Bus session bus
//! nowhere, so no keyring is usable and `auto` keeps tokens in the data directory's file.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use common::{Output, TIMEOUT, run};
use serde_json::{Value, json};

/// A temporary directory with a `--config` file and a data directory.
struct World {
    _dir: tempfile::TempDir,
    config: PathBuf,
    data: PathBuf,
}

impl World {
    fn new(config: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let path = root.join("formwork.toml");
        std::fs::write(&path, config).unwrap();
        let data = root.join("data");
        World {
            _dir: dir,
            config: path,
            data,
        }
    }

    fn credentials(&self) -> PathBuf {
        self.data.join("mcp-credentials.json")
    }

    /// `formwork ARGS --config <file>`, with `FORMWORK_DATA_DIR` set and no session bus.
    fn formwork(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
        cmd.args(args)
            .arg("--config")
            .arg(&self.config)
            .env("FORMWORK_DATA_DIR", &self.data)
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                "unix:path=/nonexistent/formwork-test-bus",
            );
        run(&mut cmd, None, TIMEOUT)
    }

    /// Writes the credentials file as formwork would: one entry per `(name, url)`.
    fn seed(&self, entries: &[(&str, &str)]) {
        let mut file = serde_json::Map::new();
        for (name, url) in entries {
            file.insert(format!("{name} {url}"), entry(name, url));
        }
        std::fs::create_dir_all(&self.data).unwrap();
        std::fs::write(
            self.credentials(),
            serde_json::to_string_pretty(&file).unwrap(),
        )
        .unwrap();
    }

    fn kept(&self) -> Vec<String> {
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(self.credentials()).unwrap()).unwrap();
        file.as_object().unwrap().keys().cloned().collect()
    }
}

fn entry(name: &str, url: &str) -> Value {
    json!({
        "server_name": name,
        "url": url,
        "issuer": "https://auth.example.com",
        "token_endpoint": "https://auth.example.com/token",
        "client_id": "formwork",
        "client_secret": null,
        "access_token": "access-t0ken",
        "refresh_token": "refresh-t0ken",
        "expires_at": 1_790_000_000,
        "scopes": [],
        "resource": null
    })
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

const CONFIG: &str = r#"
[mcp_servers.docs]
url = "https://docs.example.com/mcp"

[mcp_servers.wiki]
url = "https://wiki.example.com/mcp"

[mcp_servers.local]
command = "true"
"#;

#[test]
fn logout_forgets_the_tokens_of_the_configured_url_and_nothing_else() {
    let world = World::new(CONFIG);
    world.seed(&[
        ("docs", "https://docs.example.com/old"),
        ("docs", "https://docs.example.com/mcp"),
        ("wiki", "https://wiki.example.com/mcp"),
    ]);
    let file = world.credentials();
    let logout = world.formwork(&["logout", "docs"]);
    logout.assert_code(0);
    assert_eq!(
        logout.stderr,
        format!(
            "formwork: Signed out of docs (tokens removed from file {})\n",
            file.display()
        ),
        "{logout}"
    );
    assert_eq!(
        logout.json(),
        json!({
            "server": "docs",
            "url": "https://docs.example.com/mcp",
            "removed": true,
            "store": format!("file {}", file.display()),
        })
    );
    assert_eq!(
        world.kept(),
        [
            "docs https://docs.example.com/old",
            "wiki https://wiki.example.com/mcp"
        ]
    );
    assert_eq!(mode(&file), 0o600);
    let mut names: Vec<String> = std::fs::read_dir(&world.data)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["mcp-credentials.json", "mcp-credentials.json.lock"],
        "no temporary file is left"
    );

    let again = world.formwork(&["logout", "docs"]);
    again.assert_code(0);
    assert_eq!(
        again.stderr, "formwork: docs had no stored sign-in\n",
        "{again}"
    );
    assert_eq!(again.json()["removed"], false, "{again}");
}

#[test]
fn logout_uses_the_data_dir_it_is_given_and_the_store_the_config_names() {
    let world = World::new(&format!("mcp_oauth_credentials_store = \"file\"\n{CONFIG}"));
    let elsewhere = World::new("");
    elsewhere.seed(&[("wiki", "https://wiki.example.com/mcp")]);
    let logout = world.formwork(&[
        "logout",
        "wiki",
        "--data-dir",
        elsewhere.data.to_str().unwrap(),
    ]);
    logout.assert_code(0);
    assert_eq!(
        logout.stderr,
        format!(
            "formwork: Signed out of wiki (tokens removed from file {})\n",
            elsewhere.credentials().display()
        ),
        "{logout}"
    );
    assert_eq!(elsewhere.kept(), Vec::<String>::new());
    assert!(
        !world.data.exists(),
        "the default data directory was not touched"
    );
}

#[test]
fn logout_refuses_what_it_cannot_sign_out_of() {
    let world = World::new(CONFIG);
    let unknown = world.formwork(&["logout", "nope"]);
    unknown.assert_code(2);
    assert_eq!(
        unknown.stderr,
        format!(
            "formwork: no server `nope` in {} (add [mcp_servers.nope])\n",
            world.config.display()
        ),
        "{unknown}"
    );
    assert_eq!(unknown.stdout, "");
    let stdio = world.formwork(&["logout", "local"]);
    stdio.assert_code(2);
    assert_eq!(
        stdio.stderr,
        "formwork: server `local` is not a Streamable HTTP server (`url`): only those sign in\n",
        "{stdio}"
    );
    let demo = world.formwork(&["logout", "demo"]);
    demo.assert_code(2);
    demo.assert_stderr_mentions("server `demo` is not a Streamable HTTP server");
    assert!(!world.data.exists(), "nothing was written");
}

#[test]
fn logout_with_the_keyring_named_and_none_usable_is_an_error() {
    let world = World::new(&format!(
        "mcp_oauth_credentials_store = \"keyring\"\n{CONFIG}"
    ));
    world.seed(&[("docs", "https://docs.example.com/mcp")]);
    let logout = world.formwork(&["logout", "docs"]);
    logout.assert_code(2);
    assert!(
        logout
            .stderr
            .starts_with("formwork: server `docs`: cannot open the keyring: "),
        "{logout}"
    );
    assert_eq!(logout.stdout, "");
    assert_eq!(
        world.kept(),
        ["docs https://docs.example.com/mcp"],
        "the file is not the keyring"
    );
}

/// `env_http_headers` puts the variable's value on the request; the server here answers every
/// request with 404, so the command fails after the first.
#[test]
fn env_http_headers_ride_the_request() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let world = World::new(&format!(
        "[mcp_servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\nhttp_headers = {{ X-Team = \"forms\" }}\nenv_http_headers = {{ X-Tenant = \"FORMWORK_TEST_TENANT\" }}\n"
    ));
    // The heads of every request, each answered 404; the thread outlives the test's runs.
    let heads: Arc<Mutex<Vec<Vec<String>>>> = Arc::default();
    let seen = Arc::clone(&heads);
    std::thread::spawn(move || {
        for socket in listener.incoming() {
            let socket = socket.unwrap();
            let mut reader = BufReader::new(socket.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end().to_owned();
                if line.is_empty() {
                    break;
                }
                head.push(line);
            }
            (&socket)
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                )
                .unwrap();
            seen.lock().unwrap().push(head);
        }
    });
    // The POSTs of one run (a run may also probe the server afterwards).
    let posts = || -> Vec<Vec<String>> {
        std::mem::take(&mut *heads.lock().unwrap())
            .into_iter()
            .filter(|head| head[0] == "POST /mcp HTTP/1.1")
            .collect()
    };
    let tools = |tenant: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
        cmd.args(["tools", "--server", "remote", "--config"])
            .arg(&world.config);
        match tenant {
            Some(tenant) => cmd.env("FORMWORK_TEST_TENANT", tenant),
            None => cmd.env_remove("FORMWORK_TEST_TENANT"),
        };
        run(&mut cmd, None, TIMEOUT)
    };

    tools(Some("tenant-42")).assert_code(2);
    let set = posts();
    assert!(!set.is_empty());
    for head in &set {
        assert!(head.contains(&"X-Team: forms".to_owned()), "{head:?}");
        assert!(head.contains(&"X-Tenant: tenant-42".to_owned()), "{head:?}");
    }

    // Unset, the header is left out (as in Codex), and the request goes without it.
    let unset = tools(None);
    unset.assert_code(2);
    let without = posts();
    assert!(!without.is_empty());
    for head in &without {
        assert!(head.contains(&"X-Team: forms".to_owned()), "{head:?}");
        assert!(
            !head
                .iter()
                .any(|line| line.to_ascii_lowercase().starts_with("x-tenant")),
            "{head:?}"
        );
    }
    assert!(
        unset
            .stderr
            .contains("the variable is not set; the header is left out"),
        "{unset}"
    );

    // `login`'s first request, which looks for the server's challenge, carries them too: a
    // gateway that needs them would otherwise answer that request differently.
    let mut login = Command::new(env!("CARGO_BIN_EXE_formwork"));
    login
        .args(["login", "remote", "--config"])
        .arg(&world.config)
        .env("FORMWORK_TEST_TENANT", "tenant-7")
        .env("FORMWORK_DATA_DIR", &world.data);
    run(&mut login, None, TIMEOUT).assert_code(2);
    let probes = posts();
    assert!(!probes.is_empty());
    for head in &probes {
        assert!(head.contains(&"X-Team: forms".to_owned()), "{head:?}");
        assert!(head.contains(&"X-Tenant: tenant-7".to_owned()), "{head:?}");
    }
}

/// `config check` shows the OAuth keys by name: variables and files, never what they hold.
#[test]
fn config_check_shows_the_oauth_keys_by_name() {
    let world = World::new(
        r#"mcp_oauth_credentials_store = "file"
mcp_oauth_callback_port = 8765

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
env_http_headers = { X-Tenant = "DOCS_TENANT" }
scopes = ["docs:read"]
oauth_resource = "https://docs.example.com/"
oauth = { client_id = "formwork", client_secret_env_var = "DOCS_SECRET", grant = "client_credentials" }

[mcp_servers.wiki]
url = "https://wiki.example.com/mcp"

[mcp_servers.tracker]
url = "https://tracker.example.com/mcp"
oauth = { grant = "cross_app_access", client_id = "formwork", idp_token_endpoint = "https://idp.example.com/token", idp_client_id = "formwork-idp", idp_client_secret_env_var = "IDP_SECRET", id_token_env_var = "ID_TOKEN" }
"#,
    );
    let check = world.formwork(&["config", "check"]);
    check.assert_code(0);
    let report = check.json();
    assert_eq!(report["mcp_oauth_credentials_store"], "file", "{check}");
    assert_eq!(report["mcp_oauth_callback_port"], 8765, "{check}");
    let docs = &report["mcp_servers"]["docs"];
    assert_eq!(
        docs["env_http_headers"],
        json!({ "X-Tenant": "DOCS_TENANT" })
    );
    assert_eq!(docs["scopes"], json!(["docs:read"]));
    assert_eq!(docs["oauth_resource"], "https://docs.example.com/");
    assert_eq!(
        docs["oauth"],
        json!({
            "grant": "client_credentials",
            "client_id": "formwork",
            "client_secret_env_var": "DOCS_SECRET"
        })
    );
    assert_eq!(
        report["mcp_servers"]["tracker"]["oauth"],
        json!({
            "grant": "cross_app_access",
            "client_id": "formwork",
            "idp_token_endpoint": "https://idp.example.com/token",
            "idp_client_id": "formwork-idp",
            "idp_client_secret_env_var": "IDP_SECRET",
            "id_token_env_var": "ID_TOKEN"
        })
    );
    let wiki = report["mcp_servers"]["wiki"].as_object().unwrap();
    for key in ["env_http_headers", "scopes", "oauth_resource", "oauth"] {
        assert!(
            !wiki.contains_key(key),
            "{key} shown though not set: {check}"
        );
    }
    let defaults = World::new("").formwork(&["config", "check"]);
    assert_eq!(defaults.json()["mcp_oauth_credentials_store"], "auto");
    assert_eq!(defaults.json()["mcp_oauth_callback_port"], Value::Null);
}
