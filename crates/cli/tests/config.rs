//! The layered config from a terminal (docs/cli.md, "The config and its policy"): a project's `formwork.toml` found
//! from the working directory applies only once `formwork trust` recorded its directory in the user config; until
//! then it is not read, and one line on stderr says so. Writing commands edit the user config or the `--config`
//! file, never the project's. Each run gets its own user config directory through `XDG_CONFIG_HOME`.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Output, TIMEOUT, run};
use formwork_testkit::Serve;
use serde_json::{Value, json};

/// A temporary directory holding a user config directory (`xdg/`), a home (`home/`) and a cloned "project" whose
/// `formwork.toml` names a server that, when started, creates the file `ran`.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    xdg: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let project = root.join("proj");
        std::fs::create_dir_all(project.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        let world = World {
            _dir: dir,
            xdg: root.join("xdg"),
            root,
            project,
        };
        std::fs::write(
            world.project_file(),
            format!(
                "[mcp_servers.evil]\ncommand = \"sh\"\nargs = [\"-c\", \"touch {}\"]\n",
                world.marker().display()
            ),
        )
        .unwrap();
        world
    }

    fn user(&self) -> PathBuf {
        self.xdg.join("formwork/formwork.toml")
    }

    fn project_file(&self) -> PathBuf {
        self.project.join("formwork.toml")
    }

    /// Created by the project's server, if it is ever started.
    fn marker(&self) -> PathBuf {
        self.root.join("ran")
    }

    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_formwork"));
        cmd.args(args)
            .current_dir(cwd)
            .env("XDG_CONFIG_HOME", &self.xdg)
            .env("HOME", self.root.join("home"));
        cmd
    }

    fn formwork(&self, cwd: &Path, args: &[&str]) -> Output {
        run(&mut self.command(cwd, args), None, TIMEOUT)
    }

    fn notice(&self) -> String {
        let project = self.project.display();
        format!(
            "formwork: skipped {project}/formwork.toml (project {project} is not trusted); run `formwork trust {project}` to use it\n"
        )
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn server_names(report: &Value) -> Vec<String> {
    report["mcp_servers"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn an_untrusted_project_is_not_read_until_formwork_trust_records_it() {
    let world = World::new();
    let sub = world.project.join("sub");
    let project = world.project.display().to_string();

    let check = world.formwork(&sub, &["config", "check"]);
    check.assert_code(0);
    assert_eq!(check.stderr, world.notice(), "{check}");
    let report = check.json();
    assert_eq!(
        report["sources"],
        json!([
            {"layer": "user", "file": world.user().display().to_string(), "applied": false,
             "reason": "the user config; there is no such file, so nothing of it applies"},
            {"layer": "project", "file": world.project_file().display().to_string(), "applied": false,
             "reason": format!("not read: project {project} is not trusted; run `formwork trust {project}` to use it")}
        ]),
        "{check}"
    );
    assert_eq!(report["config"], Value::Null);
    assert_eq!(server_names(&report), ["demo"]);

    let tools = world.formwork(&world.project, &["tools", "--server", "evil"]);
    tools.assert_code(2);
    assert_eq!(
        tools.stderr,
        format!(
            "{}formwork: no server `evil` in the built-in default config (no formwork.toml) (add [mcp_servers.evil])\n",
            world.notice()
        ),
        "{tools}"
    );
    assert!(!world.marker().exists(), "the project's server was started");

    let trust = world.formwork(&sub, &["trust"]);
    trust.assert_code(0);
    assert_eq!(
        trust.json(),
        json!({"config": world.user().display().to_string(), "project": project,
               "trust_level": "trusted", "written": true})
    );
    assert_eq!(
        trust.stderr,
        format!(
            "formwork: trusted project {project}: its formwork.toml applies on top of {}\n",
            world.user().display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(world.user()).unwrap(),
        format!("[projects.\"{project}\"]\ntrust_level = \"trusted\"\n")
    );
    assert_eq!(mode(&world.user()), 0o600);
    assert_eq!(mode(&world.xdg.join("formwork")), 0o700);

    let check = world.formwork(&sub, &["config", "check"]);
    check.assert_code(0);
    assert_eq!(check.stderr, "", "{check}");
    let report = check.json();
    assert_eq!(report["sources"][1]["applied"], true, "{check}");
    assert_eq!(report["config"], world.project_file().display().to_string());
    assert_eq!(server_names(&report), ["evil", "demo"]);

    // Trusted, the project's server is started (it is no MCP server, so the command fails).
    world
        .formwork(&world.project, &["tools", "--server", "evil"])
        .assert_code(2);
    assert!(
        world.marker().exists(),
        "the trusted project's server did not start"
    );

    let again = world.formwork(&world.project, &["trust", "."]);
    again.assert_code(0);
    assert_eq!(again.json()["written"], false);
    world
        .formwork(&world.project, &["trust", "/nonexistent/formwork-project"])
        .assert_code(2)
        .assert_stderr_mentions("cannot trust /nonexistent/formwork-project");
}

/// `formwork trust --revoke` takes a project back out of the user config, keeping the rest of the file; a project
/// that is not trusted is reported as such, with exit 0 and the file left alone.
#[test]
fn formwork_trust_revoke_removes_the_project_from_the_trusted_ones() {
    let world = World::new();
    let sub = world.project.join("sub");
    let project = world.project.display().to_string();
    let user = world.user().display().to_string();
    let kept = "# mine\nmodel = \"o3\"\n";
    std::fs::create_dir_all(world.xdg.join("formwork")).unwrap();
    std::fs::write(world.user(), kept).unwrap();
    world.formwork(&sub, &["trust"]).assert_code(0);
    assert_eq!(
        world.formwork(&sub, &["config", "check"]).json()["sources"][1]["applied"],
        true
    );

    // From a directory inside the project, as `trust` finds it.
    let revoke = world.formwork(&sub, &["trust", "--revoke"]);
    revoke.assert_code(0);
    assert_eq!(
        revoke.json(),
        json!({"config": user, "project": project, "trust_level": null, "written": true})
    );
    assert_eq!(
        revoke.stderr,
        format!(
            "formwork: revoked trust in project {project}: its formwork.toml no longer applies (removed from {user})\n"
        )
    );
    assert_eq!(std::fs::read_to_string(world.user()).unwrap(), kept);
    let check = world.formwork(&sub, &["config", "check"]);
    assert_eq!(check.stderr, world.notice(), "{check}");
    assert_eq!(check.json()["sources"][1]["applied"], false);

    let again = world.formwork(&world.root, &["trust", "--revoke", &project]);
    again.assert_code(0);
    assert_eq!(
        again.json(),
        json!({"config": user, "project": project, "trust_level": null, "written": false})
    );
    assert_eq!(
        again.stderr,
        format!("formwork: project {project} is not trusted in {user}; nothing to revoke\n")
    );
    assert_eq!(std::fs::read_to_string(world.user()).unwrap(), kept);

    // A project marked untrusted stays marked.
    let marked = format!("{kept}\n[projects.\"{project}\"]\ntrust_level = \"untrusted\"\n");
    std::fs::write(world.user(), &marked).unwrap();
    let untrusted = world.formwork(&world.project, &["trust", "--revoke"]);
    untrusted.assert_code(0);
    assert_eq!(
        untrusted.json(),
        json!({"config": user, "project": project, "trust_level": "untrusted", "written": false})
    );
    assert_eq!(
        untrusted.stderr,
        format!(
            "formwork: project {project} is not trusted (it is marked untrusted in {user}); nothing to revoke\n"
        )
    );
    assert_eq!(std::fs::read_to_string(world.user()).unwrap(), marked);

    // The entry of a project directory that is gone can be removed too.
    let gone = world.root.join("gone").display().to_string();
    std::fs::write(
        world.user(),
        format!("{kept}\n[projects.\"{gone}\"]\ntrust_level = \"trusted\"\n"),
    )
    .unwrap();
    let revoke_gone = world.formwork(&world.root, &["trust", "--revoke", "gone"]);
    revoke_gone.assert_code(0);
    assert_eq!(
        revoke_gone.json(),
        json!({"config": user, "project": gone, "trust_level": null, "written": true})
    );
    assert_eq!(std::fs::read_to_string(world.user()).unwrap(), kept);
}

/// Revoking with no user config file says there was nothing to revoke, and creates no file.
#[test]
fn formwork_trust_revoke_without_a_user_config_file_creates_none() {
    let world = World::new();
    let project = world.project.display().to_string();
    let revoke = world.formwork(&world.project, &["trust", "--revoke"]);
    revoke.assert_code(0);
    assert_eq!(
        revoke.json(),
        json!({"config": world.user().display().to_string(), "project": project,
               "trust_level": null, "written": false})
    );
    assert!(!world.xdg.exists(), "a user config directory was created");
}

/// Where no user config can be found (a relative HOME and no XDG_CONFIG_HOME), no trust can be recorded: nothing
/// suggests `formwork trust`, and the messages say why the project's file is not read.
#[test]
fn without_a_user_config_nothing_suggests_formwork_trust() {
    let world = World::new();
    let project = world.project.display().to_string();
    let no_user_config = |args: &[&str]| {
        let mut cmd = world.command(&world.project, args);
        cmd.env_remove("XDG_CONFIG_HOME").env("HOME", "relative");
        run(&mut cmd, None, TIMEOUT)
    };

    let check = no_user_config(&["config", "check"]);
    check.assert_code(0);
    assert_eq!(
        check.stderr,
        format!(
            "formwork: skipped {project}/formwork.toml (project {project} is not trusted; trust cannot be recorded: \
             there is no user config, as neither XDG_CONFIG_HOME nor HOME names a directory)\n"
        )
    );
    assert_eq!(
        check.json()["sources"],
        json!([{"layer": "project", "file": world.project_file().display().to_string(), "applied": false,
                "reason": format!("not read: project {project} is not trusted; trust cannot be recorded: there is no \
                                   user config, as neither XDG_CONFIG_HOME nor HOME names a directory")}])
    );
    assert!(!check.stdout.contains("formwork trust"), "{check}");

    for (args, action) in [
        (&["trust"][..], "trust"),
        (&["trust", "--revoke"][..], "revoke trust in"),
    ] {
        let trust = no_user_config(args);
        trust.assert_code(2);
        assert_eq!(
            trust.stderr,
            format!(
                "formwork: cannot {action} {project}: trust is recorded in the user config, and there is none \
                 (neither XDG_CONFIG_HOME nor HOME names a directory)\n"
            )
        );
        assert_eq!(trust.stdout, "");
    }
    assert!(!world.marker().exists(), "the project's server was started");
}

/// `formwork serve` in a cloned repository: the palette lists only the built-in server, and the project's server is
/// never started.
#[test]
fn serve_in_an_untrusted_project_starts_none_of_its_servers() {
    let world = World::new();
    let data = world.root.join("data");
    let mut cmd = world.command(
        &world.project,
        &["serve", "--port", "0", "--data-dir", data.to_str().unwrap()],
    );
    let serve = Serve::spawn(&mut cmd);
    let first = &serve.first_line;
    let Some(url) = first.trim().strip_prefix("formwork serve: http://") else {
        panic!("no URL: {first:?}");
    };
    let (address, token) = url.split_once("/#token=").unwrap();

    let response = get(address, "/api/tools", token);
    let stderr = serve.stop();

    let body = response.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    let catalogue: Value = serde_json::from_str(body)
        .unwrap_or_else(|err| panic!("{err}: {response}\nstderr: {stderr}"));
    let names: Vec<&str> = catalogue["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|server| server["name"].as_str())
        .collect();
    assert_eq!(names, ["demo"], "{response}");
    assert!(!world.marker().exists(), "the project's server was started");
    assert!(
        stderr.starts_with(&world.notice()),
        "the notice is not the first line: {stderr}"
    );
    assert_eq!(stderr.matches("skipped").count(), 1, "{stderr}");
}

#[test]
fn writes_go_to_the_user_config_or_the_named_file_never_the_project_file() {
    let world = World::new();
    std::fs::create_dir_all(world.user().parent().unwrap()).unwrap();
    std::fs::write(
        world.user(),
        format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            world.project.display()
        ),
    )
    .unwrap();
    let project_text = std::fs::read_to_string(world.project_file()).unwrap();
    let json = world.root.join("mcp.json");
    std::fs::write(
        &json,
        r#"{"servers": {"remote": {"url": "https://x.example.com/mcp", "headers": {"Authorization": "Bearer secret"}}}}"#,
    )
    .unwrap();

    let import = world.formwork(
        &world.project,
        &["config", "import", json.to_str().unwrap()],
    );
    import.assert_code(0);
    assert_eq!(import.json()["config"], world.user().display().to_string());
    let sync = world.formwork(&world.project, &["config", "sync"]);
    sync.assert_code(0);
    assert_eq!(sync.json()["config"], world.user().display().to_string());
    let user_text = std::fs::read_to_string(world.user()).unwrap();
    assert!(user_text.contains("[mcp_servers.remote]"), "{user_text}");
    assert!(user_text.contains("[mcp_servers.demo]"), "{user_text}");
    assert_eq!(
        std::fs::read_to_string(world.project_file()).unwrap(),
        project_text
    );

    // A file formwork creates may hold the imported secrets: it is the owner's alone.
    let named = world.root.join("named/formwork.toml");
    let import = world.formwork(
        &world.project,
        &[
            "config",
            "import",
            json.to_str().unwrap(),
            "--config",
            named.to_str().unwrap(),
        ],
    );
    import.assert_code(0);
    assert_eq!(import.json()["config"], named.display().to_string());
    assert_eq!(mode(&named), 0o600);
    assert_eq!(std::fs::read_to_string(world.user()).unwrap(), user_text);
}

#[test]
fn the_user_config_is_found_through_xdg_config_home_else_home() {
    let world = World::new();
    let file = |output: &Output| output.json()["sources"][0]["file"].clone();
    let absolute = world.formwork(&world.root, &["config", "check"]);
    assert_eq!(file(&absolute), world.user().display().to_string());
    // A relative XDG_CONFIG_HOME is not used, as the XDG spec says.
    let mut cmd = world.command(&world.root, &["config", "check"]);
    cmd.env("XDG_CONFIG_HOME", "relative");
    let relative = run(&mut cmd, None, TIMEOUT);
    assert_eq!(
        file(&relative),
        world
            .root
            .join("home/.config/formwork/formwork.toml")
            .display()
            .to_string()
    );
}

#[test]
fn a_timeout_out_of_range_is_an_error_naming_the_key_not_a_panic() {
    let world = World::new();
    let config = world.root.join("bad.toml");
    std::fs::write(
        &config,
        "[mcp_servers.x]\ncommand = \"x\"\nstartup_timeout_sec = 1e20\n",
    )
    .unwrap();
    let expected = format!(
        "{}:3:1: mcp_servers.x.startup_timeout_sec: expected a positive number of seconds, at most 86400 (one day)",
        config.display()
    );
    let check = world.formwork(
        &world.root,
        &["config", "check", "--config", config.to_str().unwrap()],
    );
    check.assert_code(1);
    assert_eq!(
        check.json()["error"]["key"],
        "mcp_servers.x.startup_timeout_sec"
    );
    let serve = world.formwork(
        &world.root,
        &["serve", "--port", "0", "--config", config.to_str().unwrap()],
    );
    serve.assert_code(2);
    assert_eq!(serve.stderr, format!("formwork: {expected}\n"), "{serve}");
}

/// `config check` reports the model `serve` would talk to: its provider's settings (header names, not their
/// values) and whether the API key's variable is set, never the key.
#[test]
fn config_check_reports_the_model_and_whether_its_key_is_set() {
    let world = World::new();
    let check = |config: &str, key: Option<&str>| {
        let file = world.root.join("model.toml");
        std::fs::write(&file, config).unwrap();
        let mut cmd = world.command(
            &world.root,
            &[
                "config",
                "check",
                "--json",
                "--config",
                file.to_str().unwrap(),
            ],
        );
        cmd.env_remove("OPENAI_API_KEY")
            .env_remove("LAB_KEY")
            .env_remove("CODEX_OSS_BASE_URL")
            .env_remove("CODEX_OSS_PORT");
        if let Some(key) = key {
            cmd.env("OPENAI_API_KEY", key).env("LAB_KEY", key);
        }
        run(&mut cmd, None, TIMEOUT)
    };
    let none = check("", None);
    none.assert_code(0);
    assert_eq!(none.json()["model"], Value::Null, "{none}");

    let openai = |api_key_set: bool| {
        json!({
            "provider_id": "openai",
            "provider": {"name": "OpenAI", "base_url": "https://api.openai.com/v1", "wire_api": "responses",
                         "env_key": "OPENAI_API_KEY", "http_headers": [], "env_http_headers": {},
                         "query_params": [], "request_max_retries": 4, "stream_max_retries": 5,
                         "stream_idle_timeout_ms": 300000},
            "model": "gpt-5",
            "tool_output_max_bytes": 10000,
            "api_key_set": api_key_set,
        })
    };
    let unset = check("model = \"gpt-5\"\n", None);
    unset.assert_code(0);
    assert_eq!(unset.json()["model"], openai(false), "{unset}");
    let set = check("model_provider = \"openai\"\n", Some("sk-never-printed"));
    set.assert_code(0);
    assert_eq!(set.json()["model"], openai(true), "{set}");
    assert!(!set.stdout.contains("sk-never-printed"), "{set}");

    let lab = check(
        r#"model = "qwen3"
model_provider = "lab"
tool_output_token_limit = 1000
[model_providers.lab]
name = "Lab"
base_url = "http://127.0.0.1:8080/v1"
env_key = "LAB_KEY"
wire_api = "chat"
http_headers = { "X-Api-Key" = "header-secret" }
env_http_headers = { "X-Tenant" = "TENANT_VAR" }
query_params = { "sig" = "query-secret" }
stream_idle_timeout_ms = 5000
"#,
        Some("sk-lab"),
    );
    lab.assert_code(0);
    assert_eq!(
        lab.json()["model"],
        json!({
            "provider_id": "lab",
            "provider": {"name": "Lab", "base_url": "http://127.0.0.1:8080/v1", "wire_api": "chat",
                         "env_key": "LAB_KEY", "http_headers": ["X-Api-Key"],
                         "env_http_headers": {"X-Tenant": "TENANT_VAR"}, "query_params": ["sig"],
                         "request_max_retries": 4, "stream_max_retries": 5, "stream_idle_timeout_ms": 5000},
            "model": "qwen3",
            "tool_output_max_bytes": 4000,
            "api_key_set": true,
        }),
        "{lab}"
    );
    assert!(
        !lab.stdout.contains("secret") && !lab.stdout.contains("sk-lab"),
        "{lab}"
    );

    let unknown = check("model_provider = \"olama\"\n", None);
    unknown.assert_code(1);
    let message =
        "unknown model provider `olama` (from model_provider); the known ones are openai, oss";
    assert_eq!(
        unknown.json(),
        json!({"error": {"message": message}}),
        "{unknown}"
    );
    assert_eq!(
        unknown.stderr,
        format!("formwork: {message}\n"),
        "{unknown}"
    );
}

/// `serve --help` names the model flags, says that the scripted model puts the real one aside, and
/// offers Codex as the runtime.
#[test]
fn serve_help_lists_the_model_flags() {
    let world = World::new();
    let help = world.formwork(&world.root, &["serve", "--help"]);
    help.assert_code(0);
    let flags: Vec<&str> = help
        .stdout
        .lines()
        .filter(|line| line.contains("model"))
        .collect();
    assert_eq!(
        flags,
        [
            "      --model-provider <ID>    The model provider: `openai`, `oss` or the ID of a [model_providers.ID] table (overrides `model_provider`)",
            "      --model <NAME>           The model's name as its provider knows it (overrides `model`)",
            "      --scripted-model <FILE>  A scripted model for demos and tests: a JSON list of {\"match\", \"reply\", \"call\"} rules that answer messages. With it no real model is used, whatever --model, --model-provider or the config say",
            "      --runtime <RUNTIME>      What answers messages: `formwork` (its own model loop) or `codex` (`codex app-server` runs the conversation; formwork shows its forms). Overrides `runtime` in the config",
        ],
        "{help}"
    );
}

/// `serve` names the model it talks to on stderr before its URL; with `--scripted-model` it chooses none, so a
/// provider it would not know is no error; an unknown provider without it is.
#[test]
fn serve_names_its_model_and_the_scripted_model_puts_it_aside() {
    let world = World::new();
    let data = world.root.join("data");
    let data = data.to_str().unwrap();
    let stderr = serve_until_url(&world, &["--data-dir", data, "--model", "gpt-5.1"]);
    assert!(
        stderr.starts_with("formwork: the model is gpt-5.1 via OpenAI\n"),
        "{stderr}"
    );

    let script = world.root.join("script.json");
    std::fs::write(&script, r#"[{"match": "hi", "reply": "Hello."}]"#).unwrap();
    let script = script.to_str().unwrap();
    let stderr = serve_until_url(
        &world,
        &[
            "--data-dir",
            data,
            "--scripted-model",
            script,
            "--model-provider",
            "nowhere",
        ],
    );
    assert!(!stderr.contains("the model is"), "{stderr}");

    let unknown = world.formwork(
        &world.root,
        &["serve", "--data-dir", data, "--model-provider", "nowhere"],
    );
    unknown.assert_code(2);
    assert_eq!(
        unknown.stderr,
        "formwork: unknown model provider `nowhere` (from --model-provider); the known ones are openai, oss\n",
        "{unknown}"
    );
}

/// Starts `formwork serve` with `args` in `world.root`, waits for its URL, stops it and returns its stderr.
fn serve_until_url(world: &World, args: &[&str]) -> String {
    let mut all = vec!["serve", "--port", "0"];
    all.extend_from_slice(args);
    let serve = Serve::spawn(
        world
            .command(&world.root, &all)
            .env_remove("OPENAI_API_KEY"),
    );
    let first = serve.first_line.clone();
    let stderr = serve.stop();
    assert!(
        first.starts_with("formwork serve: http://127.0.0.1:"),
        "no URL: {first:?}\nstderr: {stderr}"
    );
    stderr
}

#[test]
fn serve_takes_its_access_token_from_formwork_token() {
    let world = World::new();
    let data = world.root.join("data");
    let token = "replica-token_0123456789.abcdefghijklmnopqrstuvwxyz~";
    let mut cmd = world.command(
        &world.root,
        &["serve", "--port", "0", "--data-dir", data.to_str().unwrap()],
    );
    let serve = Serve::start(cmd.env("FORMWORK_TOKEN", token));
    let url = serve.url().unwrap().to_owned();
    let address = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
        .map(|(address, _)| address.to_owned())
        .unwrap();
    let status = |bearer: &str| {
        let response = get(&address, "/api/info", bearer);
        response.lines().next().unwrap_or_default().to_owned()
    };
    let chosen = status(token);
    let other = status(&"f".repeat(64));
    let stderr = serve.stop();

    assert!(url.ends_with(&format!("/#token={token}")), "{url}");
    assert_eq!(chosen, "HTTP/1.1 200 OK", "{stderr}");
    assert_eq!(other, "HTTP/1.1 401 Unauthorized", "{stderr}");
    assert!(!stderr.contains(token), "the token was logged: {stderr}");
}

#[test]
fn serve_refuses_a_formwork_token_the_page_cannot_carry() {
    let world = World::new();
    let data = world.root.join("data");
    for bad in [
        "short-but-secret",
        "a token with spaces in it, long enough to count",
    ] {
        let output = run(
            world
                .command(
                    &world.root,
                    &["serve", "--port", "0", "--data-dir", data.to_str().unwrap()],
                )
                .env("FORMWORK_TOKEN", bad),
            None,
            TIMEOUT,
        );
        assert_eq!(output.code, 2, "{bad}: {}", output.stderr);
        assert_eq!(output.stdout, "", "{bad}: nothing served");
        let length = bad.chars().count();
        assert_eq!(
            output.stderr.trim_end(),
            format!(
                "formwork: FORMWORK_TOKEN must be 32 to 128 letters, digits, `-`, `.`, `_` or `~` (it has {length} characters)"
            ),
            "{bad}"
        );
        assert!(
            !data.exists(),
            "{bad}: nothing was created before the refusal"
        );
    }
}

/// One `GET path` with a bearer token on a connection of its own: the whole response.
fn get(address: &str, path: &str, bearer: &str) -> String {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {bearer}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}
