//! `formwork.toml` at its boundary: text in, the loaded `Config` or the exact error text out;
//! and the file edits (`sync`, `import`, Always allow) as fixture files in, fixture files out.
//! The effective-policy report of a loaded config is the CLI's (`crates/cli/src/policy_report.rs`).
//!
//! Expected files live in `tests/fixtures/config/`. After an intended change of output, run
//! with `FORMWORK_BLESS=1` to rewrite them, then review the diff.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use formwork_host::config::{
    self, ApprovalMode, ApprovalPolicy, Config, ConfigError, ConfigLocations, Features,
    GranularApproval, Layer, RememberOutcome, SourceStatus, SyncAction, Transport,
};
use formwork_host::policy::{self, ModeSource};
use serde_json::{Value, json};

/// Loads `input` as if it were `formwork.toml`.
fn load(input: &str) -> Config {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => config,
        Err(err) => panic!("input:\n{input}\ndoes not load: {err}"),
    }
}

/// Loads `input` as if it were `formwork.toml` and compares the error's full text.
fn check_error(input: &str, expected: &str) {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => {
            panic!("input:\n{input}\nloads, expected the error {expected:?}: {config:#?}")
        }
        Err(err) => assert_eq!(err.to_string(), expected, "input:\n{input}"),
    }
}

/// A stdio transport without `env` or `cwd`.
fn stdio(command: &str, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|arg| (*arg).to_owned()).collect(),
        env: Default::default(),
        env_vars: Vec::new(),
        cwd: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Good files

#[test]
fn empty_file_is_the_embedded_default() {
    let config = load("");
    assert_eq!(config.approval_policy, ApprovalPolicy::OnRequest);
    assert!(!config.elicitations_auto_deny);
    assert!(!config.features.tool_call_mcp_elicitation);
    assert!(config.ignored_keys.is_empty());
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["demo"]);
    let demo = config.server("demo").expect("the built-in server");
    assert!(demo.enabled && demo.builtin);
    assert_eq!(
        demo.transport,
        Transport::Builtin {
            args: vec!["demo-plugin".to_owned()]
        }
    );
    assert_eq!(demo.default_tools_approval_mode, None);
    assert_eq!(
        policy::approval_mode(&config, "demo", "any"),
        (ApprovalMode::Approve, ModeSource::BuiltinDefault)
    );
    let from_empty = Config::from_toml("", None).expect("empty file loads");
    assert_eq!(from_empty, Config::embedded());
}

#[test]
fn wework_recommended_shape() {
    let config = load(
        r#"
approval_policy = { granular = { sandbox_approval = false, rules = false, skill_approval = false, request_permissions = false, mcp_elicitations = true } }

[mcp_servers.example_plugin]
command = "python3"
args = ["plugin.py"]
default_tools_approval_mode = "approve"

[features]
tool_call_mcp_elicitation = false
"#,
    );
    assert_eq!(
        config.approval_policy,
        ApprovalPolicy::Granular(GranularApproval {
            sandbox_approval: false,
            rules: false,
            skill_approval: false,
            request_permissions: false,
            mcp_elicitations: true,
        })
    );
    assert!(!config.features.tool_call_mcp_elicitation);
    let server = config.server("example_plugin").expect("configured");
    assert!(!server.builtin);
    assert_eq!(server.transport, stdio("python3", &["plugin.py"]));
    assert_eq!(
        server.default_tools_approval_mode,
        Some(ApprovalMode::Approve)
    );
}

#[test]
fn granular_as_a_table_with_codex_defaults() {
    // skill_approval and request_permissions may be left out, as in Codex.
    let config = load(
        "[approval_policy.granular]\nsandbox_approval = true\nrules = true\nmcp_elicitations = false\n",
    );
    assert_eq!(
        config.approval_policy,
        ApprovalPolicy::Granular(GranularApproval {
            sandbox_approval: true,
            rules: true,
            skill_approval: false,
            request_permissions: false,
            mcp_elicitations: false,
        })
    );
}

#[test]
fn other_policies_and_auto_deny() {
    let never = load("approval_policy = \"never\"\n");
    assert_eq!(never.approval_policy, ApprovalPolicy::Never);
    assert!(!never.elicitations_auto_deny);
    let untrusted = load("approval_policy = \"untrusted\"\nelicitations_auto_deny = true\n");
    assert_eq!(untrusted.approval_policy, ApprovalPolicy::Untrusted);
    assert!(untrusted.elicitations_auto_deny);
}

#[test]
fn servers_tools_and_secrets() {
    let config = load(
        r#"
[features]
tool_call_mcp_elicitation = true

[mcp_servers.shop]
command = "node"
args = ["shop.js"]
env = { SHOP_TOKEN = "secret" }
env_vars = ["SHOP_REGION", "_PROXY_2"]
cwd = "/srv/shop"
enabled_tools = ["refund", "browse"]
disabled_tools = ["browse"]
tool_timeout_sec = 30

[mcp_servers.shop.tools.refund]
approval_mode = "prompt"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
http_headers = { X-Api-Key = "secret" }
bearer_token_env_var = "DOCS_TOKEN"
default_tools_approval_mode = "writes"
enabled = false
"#,
    );
    assert!(config.features.tool_call_mcp_elicitation);
    let shop = config.server("shop").expect("shop");
    assert_eq!(
        shop.transport,
        Transport::Stdio {
            command: "node".to_owned(),
            args: vec!["shop.js".to_owned()],
            env: [("SHOP_TOKEN".to_owned(), "secret".to_owned())].into(),
            env_vars: vec!["SHOP_REGION".to_owned(), "_PROXY_2".to_owned()],
            cwd: Some(PathBuf::from("/srv/shop")),
        }
    );
    assert!(shop.enabled && !shop.builtin);
    assert_eq!(shop.default_tools_approval_mode, None);
    assert_eq!(
        shop.tool_approval_mode("refund"),
        Some(ApprovalMode::Prompt)
    );
    assert_eq!(
        shop.enabled_tools.as_deref(),
        Some(["refund".to_owned(), "browse".to_owned()].as_slice())
    );
    assert_eq!(shop.disabled_tools, ["browse"]);
    assert_eq!(shop.tool_timeout, Some(Duration::from_secs(30)));
    let docs = config.server("docs").expect("docs");
    assert_eq!(
        docs.transport,
        Transport::StreamableHttp {
            url: "https://docs.example.com/mcp".to_owned(),
            http_headers: [("X-Api-Key".to_owned(), "secret".to_owned())].into(),
            env_http_headers: Default::default(),
            bearer_token_env_var: Some("DOCS_TOKEN".to_owned()),
            scopes: Vec::new(),
            oauth_resource: None,
            oauth: Default::default(),
            share_session: false,
        }
    );
    assert!(!docs.enabled);
    assert_eq!(docs.default_tools_approval_mode, Some(ApprovalMode::Writes));
    assert!(config.server("demo").expect("demo").builtin);

    let config = Config::from_toml(
        "[mcp_servers.s]\ncommand = \"x\"\nenabled_tools = [\"a\", \"b\"]\ndisabled_tools = [\"b\"]\n",
        None,
    )
    .expect("loads");
    let server = config.server("s").expect("configured");
    assert!(server.exposes_tool("a"));
    assert!(!server.exposes_tool("b"));
    assert!(!server.exposes_tool("c"));
}

#[test]
fn servers_keep_file_order_and_builtins_come_last() {
    let config = Config::from_toml(
        "[mcp_servers.zeta]\ncommand = \"z\"\n[mcp_servers.alpha]\nurl = \"https://a.example.com\"\n",
        None,
    )
    .expect("loads");
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["zeta", "alpha", "demo"]);
}

/// `runtime` and `[codex]`: which runtime answers messages, and how formwork runs Codex; a
/// relative `home` is the file's directory's.
#[test]
fn the_runtime_and_how_codex_runs() {
    let config = load("");
    assert_eq!(config.runtime, config::Runtime::Formwork);
    assert_eq!(config.codex, config::CodexConfig::default());
    let config = load(
        "runtime = \"codex\"\n[codex]\ncommand = \"/opt/codex/bin/codex\"\nhome = \"state/codex\"\n",
    );
    assert_eq!(config.runtime, config::Runtime::Codex);
    assert_eq!(
        config.codex.command.as_deref(),
        Some("/opt/codex/bin/codex")
    );
    // Relative to the directory of `formwork.toml` (here the current one, named as "").
    assert_eq!(config.codex.home, Some(PathBuf::from("state/codex")));
    let nested = Config::from_toml(
        "[codex]\nhome = \"codex-home\"\n",
        Some(Path::new("/etc/formwork/formwork.toml")),
    )
    .expect("loads");
    assert_eq!(
        nested.codex.home,
        Some(PathBuf::from("/etc/formwork/codex-home"))
    );
    check_error(
        "runtime = \"claude\"\n",
        "formwork.toml:1:11: runtime: unknown variant `claude`, expected `formwork` or `codex`",
    );
    check_error(
        "[codex]\nbinary = \"codex\"\n",
        "formwork.toml:2:1: codex.binary: unknown field `binary`, expected `command` or `home`",
    );
    check_error(
        "[codex]\ncommand = \"\"\n",
        "formwork.toml:2:1: codex.command: the command is empty",
    );
}

#[test]
fn codex_keys_formwork_does_not_use_are_accepted_and_listed() {
    let config = load(
        r#"
model_reasoning_effort = "high"
sandbox_mode = "workspace-write"
[profiles.fast]
model = "o4-mini"
[features]
web_search_request = true
unified_exec = { enabled = true }
[mcp_servers.s]
command = "x"
startup_timeout_ms = 5000
required = true
"#,
    );
    assert_eq!(
        config.ignored_keys,
        [
            "model_reasoning_effort",
            "sandbox_mode",
            "profiles",
            "features.web_search_request",
            "features.unified_exec",
            "mcp_servers.s.startup_timeout_ms",
            "mcp_servers.s.required"
        ]
    );
}

#[test]
fn builtin_server_keeps_an_explicit_mode_and_may_name_no_command() {
    let config = load("[mcp_servers.demo]\ndefault_tools_approval_mode = \"prompt\"\n");
    let demo = config.server("demo").expect("demo");
    assert!(demo.builtin);
    assert_eq!(
        demo.transport,
        Transport::Builtin {
            args: vec!["demo-plugin".to_owned()]
        }
    );
    assert_eq!(demo.default_tools_approval_mode, Some(ApprovalMode::Prompt));
    // Written out in full by `config sync`, it is still the managed built-in server.
    let config =
        load("[mcp_servers.demo]\ncommand = \"/usr/bin/formwork\"\nargs = [\"demo-plugin\"]\n");
    let demo = config.server("demo").expect("demo");
    assert!(demo.builtin);
    assert_eq!(demo.transport, stdio("/usr/bin/formwork", &["demo-plugin"]));
    assert_eq!(
        policy::approval_mode(&config, "demo", "any"),
        (ApprovalMode::Approve, ModeSource::BuiltinDefault)
    );
}

// ---------------------------------------------------------------------------------------------
// Bad files: the error names file, line, column and key

#[test]
fn bad_approval_mode() {
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\ndefault_tools_approval_mode = \"ask\"\n",
        r#"formwork.toml:3:31: mcp_servers.x.default_tools_approval_mode: unknown approval mode "ask", expected one of "auto", "prompt", "writes", "approve""#,
    );
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\n\n[mcp_servers.x.tools.deploy]\napproval_mode = 3\n",
        r#"formwork.toml:5:17: mcp_servers.x.tools.deploy.approval_mode: invalid type: integer `3`, expected one of "auto", "prompt", "writes", "approve""#,
    );
}

#[test]
fn unknown_keys_in_server_and_tool_tables() {
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\ndefault_tool_approval_mode = \"prompt\"\n",
        "formwork.toml:3:1: mcp_servers.x.default_tool_approval_mode: unknown field `default_tool_approval_mode`, expected one of `command`, `args`, `env`, `cwd`, `url`, `http_headers`, `env_http_headers`, `bearer_token_env_var`, `scopes`, `oauth_resource`, `oauth`, `share_session`, `enabled`, `enabled_tools`, `disabled_tools`, `startup_timeout_sec`, `tool_timeout_sec`, `default_tools_approval_mode`, `protocol_version`, `tools`, `env_vars`, `startup_timeout_ms`, `required`, `supports_parallel_tool_calls`",
    );
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\ntools.deploy.mode = \"prompt\"\n",
        "formwork.toml:3:14: mcp_servers.x.tools.deploy.mode: unknown field `mode`, expected `approval_mode`",
    );
    // A Codex key formwork would have to act on but does not implement is not ignored.
    check_error(
        "[mcp_servers.x]\nurl = \"https://x.example.com\"\noauth_callback_url = \"http://127.0.0.1:1/cb\"\n",
        "formwork.toml:3:1: mcp_servers.x.oauth_callback_url: unknown field `oauth_callback_url`, expected one of `command`, `args`, `env`, `cwd`, `url`, `http_headers`, `env_http_headers`, `bearer_token_env_var`, `scopes`, `oauth_resource`, `oauth`, `share_session`, `enabled`, `enabled_tools`, `disabled_tools`, `startup_timeout_sec`, `tool_timeout_sec`, `default_tools_approval_mode`, `protocol_version`, `tools`, `env_vars`, `startup_timeout_ms`, `required`, `supports_parallel_tool_calls`",
    );
}

#[test]
fn unknown_top_level_key() {
    check_error(
        "# typo below\naproval_policy = \"never\"\n",
        "formwork.toml:2:1: aproval_policy: unknown key; formwork reads approval_policy, codex, elicitations_auto_deny, features, forms, mcp_oauth_callback_port, mcp_oauth_credentials_store, mcp_servers, model, model_provider, model_providers, projects, runtime, tool_output_token_limit, and accepts Codex's other settings (sandbox_mode, profiles, ...) without using them",
    );
}

#[test]
fn bad_approval_policies() {
    check_error(
        "approval_policy = \"sometimes\"\n",
        r#"formwork.toml:1:19: approval_policy: unknown approval policy "sometimes", expected "untrusted", "on-request", "never" or { granular = { ... } }"#,
    );
    check_error(
        "approval_policy = { granular = { sandbox_approval = false, rules = false } }\n",
        "formwork.toml:1:32: approval_policy.granular: missing field `mcp_elicitations`",
    );
    check_error(
        "[approval_policy.granular]\nsandbox_approval = false\nrules = false\nmcp_elicitations = true\nmcp_elicitation = true\n",
        "formwork.toml:5:1: approval_policy.granular.mcp_elicitation: unknown field `mcp_elicitation`, expected one of `sandbox_approval`, `rules`, `skill_approval`, `request_permissions`, `mcp_elicitations`",
    );
    check_error(
        "[approval_policy.granular]\nsandbox_approval = false\nrules = false\nmcp_elicitations = \"yes\"\n",
        r#"formwork.toml:4:20: approval_policy.granular.mcp_elicitations: invalid type: string "yes", expected a boolean"#,
    );
    check_error(
        "approval_policy = { sometimes = {} }\n",
        "formwork.toml:1:19: approval_policy: unknown approval policy table `sometimes`, expected `granular`",
    );
}

#[test]
fn bad_flags_and_features() {
    check_error(
        "elicitations_auto_deny = \"yes\"\n",
        r#"formwork.toml:1:26: elicitations_auto_deny: invalid type: string "yes", expected a boolean"#,
    );
    check_error(
        "[features]\ntool_call_mcp_elicitation = \"yes\"\n",
        "formwork.toml:2:1: features.tool_call_mcp_elicitation: expected true or false, found string",
    );
    check_error(
        "[features]\nopenai_elicitation = 1\n",
        "formwork.toml:2:1: features.openai_elicitation: expected true or false, found integer",
    );
}

#[test]
fn openai_elicitation_is_off_unless_set() {
    assert!(!load("").features.openai_elicitation);
    let config = load("[features]\nopenai_elicitation = true\n");
    assert_eq!(
        config.features,
        Features {
            tool_call_mcp_elicitation: false,
            openai_elicitation: true,
        }
    );
    assert!(config.ignored_keys.is_empty());
}

#[test]
fn bad_transports() {
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\nurl = \"https://x.example.com\"\n",
        "formwork.toml:3:1: mcp_servers.x.url: a server has either `command` (stdio) or `url` (Streamable HTTP), not both",
    );
    check_error(
        "[mcp_servers.x]\ndefault_tools_approval_mode = \"approve\"\n",
        "formwork.toml:1:14: mcp_servers.x: a server needs `command` (stdio) or `url` (Streamable HTTP)",
    );
    check_error(
        "[mcp_servers.x]\nurl = \"https://x.example.com\"\nargs = [\"a\"]\n",
        "formwork.toml:3:1: mcp_servers.x.args: only a `command` (stdio) server takes this key",
    );
    check_error(
        "[mcp_servers.x]\nurl = \"https://x.example.com\"\nhttp_headers = { authorization = \"Basic a\" }\nbearer_token_env_var = \"T\"\n",
        "formwork.toml:4:1: mcp_servers.x.bearer_token_env_var: `http_headers` already has an Authorization header; keep one of the two",
    );
    check_error(
        "[mcp_servers.x]\nurl = \"https://x.example.com\"\nenv_vars = [\"A\"]\n",
        "formwork.toml:3:1: mcp_servers.x.env_vars: only a `command` (stdio) server takes this key",
    );
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\nenv_vars = [\"A\", \"B=1\"]\n",
        "formwork.toml:3:1: mcp_servers.x.env_vars: `B=1` is not a variable name (letters, digits and '_', not starting with a digit)",
    );
    check_error(
        "[mcp_servers.x]\ncommand = \"a\"\nshare_session = true\n",
        "formwork.toml:3:1: mcp_servers.x.share_session: only a `url` (Streamable HTTP) server takes this key",
    );
    check_error(
        "[mcp_servers.x]\nurl = \"ftp://x.example.com\"\n",
        "formwork.toml:2:1: mcp_servers.x.url: expected an http:// or https:// URL",
    );
    check_error(
        "[mcp_servers.\"my server\"]\ncommand = \"a\"\n",
        r#"formwork.toml:1:14: mcp_servers."my server": a server name may only use letters, digits, '_' and '-'"#,
    );
    check_error(
        "[mcp_servers.demo]\nargs = [\"x\"]\n",
        "formwork.toml:2:1: mcp_servers.demo.args: a built-in server without `command` takes no launch keys; run `formwork config sync` to write them out in full",
    );
}

#[test]
fn toml_syntax_errors() {
    check_error(
        "approval_policy = \"never\"\n[mcp_servers.x\ncommand = \"a\"\n",
        "formwork.toml:2:15: unclosed table, expected `]`",
    );
    check_error(
        "elicitations_auto_deny = true\nelicitations_auto_deny = false\n",
        "formwork.toml:2:1: duplicate key",
    );
}

#[test]
fn errors_without_a_file_and_unreadable_files() {
    let err = Config::from_toml("x = 1\n", None).expect_err("unknown key");
    assert!(
        err.to_string()
            .starts_with("<formwork.toml>:1:1: x: unknown key"),
        "{err}"
    );
    let invalid = err.as_invalid().expect("an invalid file");
    assert_eq!((invalid.line, invalid.column), (Some(1), Some(1)));
    assert_eq!(invalid.key, "x");

    let missing = Path::new("/nonexistent/formwork.toml");
    let err = Config::load(missing).expect_err("missing file");
    assert!(matches!(err, ConfigError::Read { .. }));
    assert!(
        err.to_string()
            .starts_with("/nonexistent/formwork.toml: cannot read:"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// Edits: sync, import, Always allow

const EXE: &str = "/opt/formwork/bin/formwork";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

/// Compares `actual` with the expected fixture file, or rewrites it under `FORMWORK_BLESS`.
fn assert_fixture(name: &str, actual: &str) {
    let path = fixture(name);
    if std::env::var_os("FORMWORK_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write fixture");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("read fixture");
    assert_eq!(actual, expected, "{} differs", path.display());
}

/// A scratch copy of a fixture (or no file, for `None`).
fn scratch(dir: &tempfile::TempDir, from: Option<&str>) -> PathBuf {
    let path = dir.path().join("formwork.toml");
    if let Some(from) = from {
        std::fs::copy(fixture(from), &path).expect("copy fixture");
    }
    path
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

#[test]
fn sync_keeps_explicit_prompt_and_everything_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, Some("commented.toml"));
    let report = config::sync(&path, Path::new(EXE)).expect("sync");
    assert!(report.written);
    assert_eq!(report.servers.len(), 1);
    let demo = &report.servers[0];
    assert_eq!(demo.action, SyncAction::Refreshed);
    assert_eq!(
        demo.default_tools_approval_mode,
        config::ApprovalMode::Prompt
    );
    assert!(demo.kept_explicit_mode);
    let synced = read(&path);
    assert_fixture("commented.synced.toml", &synced);

    // Only the demo table changed: every other line is byte-for-byte the original.
    let original = read(&fixture("commented.toml"));
    let added: Vec<&str> = synced
        .lines()
        .filter(|line| !original.lines().any(|old| old == *line))
        .collect();
    assert_eq!(
        added,
        [
            "command = \"/opt/formwork/bin/formwork\"",
            "args = [\"demo-plugin\"]"
        ]
    );

    // A second sync changes nothing and does not write.
    let again = config::sync(&path, Path::new(EXE)).expect("sync again");
    assert!(!again.written);
    assert_eq!(again.servers[0].action, SyncAction::Unchanged);
    assert_eq!(read(&path), synced);
}

#[test]
fn sync_writes_the_approve_default_into_a_new_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    let report = config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(report.servers[0].action, SyncAction::Added);
    assert_eq!(
        read(&path),
        "[mcp_servers.demo]\ncommand = \"/opt/formwork/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"
    );
    let loaded = Config::load(&path).expect("loads");
    assert!(loaded.server("demo").expect("demo").builtin);
}

#[test]
fn sync_refreshes_a_stale_builtin_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    std::fs::write(
        &path,
        "[mcp_servers.demo] # managed by formwork\nurl = \"http://127.0.0.1:9/mcp\"\nenabled = false\n\n[mcp_servers.demo.tools.deploy]\napproval_mode = \"writes\"\n",
    )
    .expect("write");
    let report = config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(report.servers[0].action, SyncAction::Refreshed);
    assert!(!report.servers[0].kept_explicit_mode);
    assert_eq!(
        read(&path),
        "[mcp_servers.demo] # managed by formwork\nenabled = false\ncommand = \"/opt/formwork/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n\n[mcp_servers.demo.tools.deploy]\napproval_mode = \"writes\"\n"
    );
}

#[test]
fn sync_keeps_writes_and_auto_too() {
    for mode in ["writes", "auto"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = scratch(&dir, None);
        let text = format!("[mcp_servers.demo]\ndefault_tools_approval_mode = \"{mode}\"\n");
        std::fs::write(&path, &text).expect("write");
        let report = config::sync(&path, Path::new(EXE)).expect("sync");
        assert!(report.servers[0].kept_explicit_mode);
        assert!(read(&path).contains(&format!("default_tools_approval_mode = \"{mode}\"")));
    }
}

#[test]
fn edits_refuse_an_invalid_file_and_leave_it_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    let broken = "[mcp_servers.x]\ncommand = \"a\"\ndefault_tools_approval_mode = \"ask\"\n";
    std::fs::write(&path, broken).expect("write");
    let err = config::sync(&path, Path::new(EXE)).expect_err("invalid file");
    assert!(
        err.to_string()
            .contains(":3:31: mcp_servers.x.default_tools_approval_mode: ")
    );
    assert!(config::remember_always_allow(&path, "x", "t").is_err());
    assert!(config::import(&fixture("vscode_mcp.json"), &path).is_err());
    assert_eq!(read(&path), broken);
}

#[test]
fn import_claude_desktop_into_a_commented_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, Some("commented.toml"));
    let report = config::import(&fixture("claude_desktop.json"), &path).expect("import");
    assert!(report.written);
    let report = serde_json::to_value(&report).expect("report as JSON");
    assert_eq!(
        report["added"],
        json!([
            {"name": "filesystem", "transport": "stdio"},
            {"name": "weather", "transport": "streamable_http", "ignored_fields": ["autoApprove"]},
            {"name": "windsurf-style", "transport": "streamable_http"}
        ])
    );
    assert_eq!(
        report["skipped"],
        json!([
            {"name": "shop", "reason": "already configured; the existing entry was kept"},
            {"name": "demo", "reason": "the name is reserved for formwork's built-in server"},
            {"name": "legacy-sse", "reason": "SSE servers are not supported; formwork speaks stdio and Streamable HTTP"},
            {"name": "my server", "reason": "a server name may only use letters, digits, '_' and '-'; rename it in the JSON"},
            {"name": "broken", "reason": "the entry has neither `command` nor `url`"},
            {"name": "both", "reason": "the entry has both `command` and `url`"}
        ])
    );
    let imported = read(&path);
    assert_fixture("commented.imported.toml", &imported);
    assert!(imported.starts_with(&read(&fixture("commented.toml"))));

    // Imported servers are not managed: they follow the auto default.
    let loaded = Config::load(&path).expect("loads");
    let filesystem = loaded.server("filesystem").expect("imported");
    assert!(!filesystem.builtin);
    assert_eq!(filesystem.default_tools_approval_mode, None);
    assert_eq!(
        policy::approval_mode(&loaded, "filesystem", "any"),
        (ApprovalMode::Auto, ModeSource::Default)
    );
    assert!(!loaded.server("weather").expect("imported").enabled);

    // Importing again adds nothing.
    let again = config::import(&fixture("claude_desktop.json"), &path).expect("again");
    assert!(!again.written && again.added.is_empty());
}

#[test]
fn import_vscode_servers_into_a_new_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    let report = config::import(&fixture("vscode_mcp.json"), &path).expect("import");
    assert_eq!(report.added.len(), 2);
    assert_eq!(report.added[1].ignored_fields, ["envFile"]);
    assert_eq!(
        report.added[0].notes,
        [
            "`http_headers.Authorization` holds a ${...} placeholder, copied as is: formwork does not expand it"
        ]
    );
    assert_fixture("vscode.imported.toml", &read(&path));
}

#[test]
fn import_reports_bad_json_with_its_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("bad.json");
    std::fs::write(&json, "{\n  \"mcpServers\": {,}\n}\n").expect("write");
    let err = config::import(&json, &scratch(&dir, None)).expect_err("bad JSON");
    let text = err.to_string();
    assert!(
        text == format!(
            "{}:2:18: not valid JSON: key must be a string",
            json.display()
        ),
        "{text}"
    );
    std::fs::write(&json, "{\"other\": {}}").expect("write");
    let err = config::import(&json, &scratch(&dir, None)).expect_err("no servers");
    assert!(
        err.to_string()
            .ends_with("expected an `mcpServers` or `servers` object (or `mcp.servers`)")
    );
}

#[test]
fn always_allow_writes_the_tool_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, Some("commented.toml"));
    assert_eq!(
        config::remember_always_allow(&path, "docs", "search").expect("remember"),
        RememberOutcome::Written
    );
    assert_eq!(
        config::remember_always_allow(&path, "docs", "search").expect("again"),
        RememberOutcome::AlreadyApproved
    );
    // An explicit prompt on the tool is never loosened.
    assert_eq!(
        config::remember_always_allow(&path, "shop", "refund").expect("prompt"),
        RememberOutcome::KeptPrompt
    );
    assert_fixture("commented.remembered.toml", &read(&path));
    let loaded = Config::load(&path).expect("loads");
    assert_eq!(
        loaded
            .server("docs")
            .and_then(|docs| docs.tool_approval_mode("search")),
        Some(config::ApprovalMode::Approve)
    );
}

#[test]
fn always_allow_for_the_builtin_server_without_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    config::remember_always_allow(&path, "demo", "deploy").expect("remember");
    assert_eq!(
        read(&path),
        "[mcp_servers.demo.tools.deploy]\napproval_mode = \"approve\"\n"
    );
    let loaded = Config::load(&path).expect("loads");
    assert!(loaded.server("demo").expect("demo").builtin);

    let err = config::remember_always_allow(&path, "nowhere", "t").expect_err("unknown server");
    assert!(err.to_string().ends_with(
        "cannot remember an approval for mcp_servers.nowhere: the server is not configured in this file"
    ));
}

#[test]
fn edits_work_on_inline_and_dotted_tables() {
    let rows = [
        (
            "mcp_servers = { shop = { command = \"x\" } }\n",
            // toml_edit keeps the space that ended the old last value before the new comma.
            "mcp_servers = { shop = { command = \"x\" , tools = { refund = { approval_mode = \"approve\" } } } , demo = { command = \"/opt/formwork/bin/formwork\", args = [\"demo-plugin\"], default_tools_approval_mode = \"approve\" } }\n",
        ),
        (
            "mcp_servers.shop.command = \"x\"\n",
            "mcp_servers.shop.command = \"x\"\n\n[mcp_servers.shop.tools.refund]\napproval_mode = \"approve\"\n\n[mcp_servers.demo]\ncommand = \"/opt/formwork/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n",
        ),
    ];
    for (input, expected) in rows {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = scratch(&dir, None);
        std::fs::write(&path, input).expect("write");
        config::remember_always_allow(&path, "shop", "refund").expect("remember");
        config::sync(&path, Path::new(EXE)).expect("sync");
        assert_eq!(read(&path), expected, "from {input:?}");
        Config::load(&path).expect("still loads");
    }
}

#[test]
fn http_headers_and_the_bearer_token_from_the_environment() {
    let config = Config::from_toml(
        "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\nhttp_headers = { X-Team = \"forms\" }\nbearer_token_env_var = \"PATH\"\n\n[mcp_servers.y]\nurl = \"https://y.example.com/mcp\"\nbearer_token_env_var = \"FORMWORK_TEST_UNSET_TOKEN\"\n",
        None,
    )
    .expect("a valid config");
    let path = std::env::var("PATH").expect("PATH is set");
    assert_eq!(
        config
            .server("x")
            .expect("server x")
            .transport
            .http_headers(),
        Ok(vec![
            ("X-Team".to_owned(), "forms".to_owned()),
            ("authorization".to_owned(), format!("Bearer {path}")),
        ])
    );
    assert_eq!(
        config
            .server("y")
            .expect("server y")
            .transport
            .http_headers()
            .map_err(|err| err.to_string()),
        Err(
            "the environment variable `FORMWORK_TEST_UNSET_TOKEN` (bearer_token_env_var) is not set"
                .to_owned()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Timeouts: checked at load, never a panic later

#[test]
fn timeouts_out_of_range_are_errors_naming_the_key() {
    let message = "expected a positive number of seconds, at most 86400 (one day)";
    for (key, value) in [
        ("startup_timeout_sec", "1e20"),
        ("startup_timeout_sec", "86400.5"),
        ("tool_timeout_sec", "-1"),
        ("tool_timeout_sec", "0"),
        ("tool_timeout_sec", "inf"),
        ("startup_timeout_sec", "nan"),
    ] {
        check_error(
            &format!("[mcp_servers.x]\ncommand = \"a\"\n{key} = {value}\n"),
            &format!("formwork.toml:3:1: mcp_servers.x.{key}: {message}"),
        );
    }
    let config = Config::from_toml(
        "[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 86400\ntool_timeout_sec = 0.25\n",
        None,
    )
    .expect("in range");
    let server = config.server("x").expect("x");
    assert_eq!(server.startup_timeout, Some(Duration::from_secs(86_400)));
    assert_eq!(server.tool_timeout, Some(Duration::from_millis(250)));
    assert_eq!(config::MAX_TIMEOUT_SECS, 86_400);
}

// ---------------------------------------------------------------------------------------------
// Layers and trust

/// A user config directory and a project directory side by side in one temporary directory
/// (canonical, so paths compare as the loader sees them).
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    user: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let user = root.join("config/formwork/formwork.toml");
        let project = root.join("proj");
        std::fs::create_dir_all(&project).expect("project dir");
        World {
            _dir: dir,
            root,
            user,
            project,
        }
    }

    fn write_user(&self, text: &str) {
        std::fs::create_dir_all(self.user.parent().expect("parent")).expect("user dir");
        std::fs::write(&self.user, text).expect("write user config");
    }

    fn project_file(&self) -> PathBuf {
        self.project.join("formwork.toml")
    }

    fn write_project(&self, text: &str) {
        std::fs::write(self.project_file(), text).expect("write project config");
    }

    /// The user config's table trusting `dir`.
    fn trust(dir: &Path, level: &str) -> String {
        format!(
            "[projects.\"{}\"]\ntrust_level = \"{level}\"\n",
            dir.display()
        )
    }

    fn load_from(&self, start: &Path, explicit: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_layered(&ConfigLocations {
            user: Some(self.user.clone()),
            explicit: explicit.map(Path::to_path_buf),
            start: Some(start.to_path_buf()),
        })
    }

    fn load(&self) -> Config {
        self.load_from(&self.project, None).expect("loads")
    }
}

fn sources(config: &Config) -> Value {
    serde_json::to_value(&config.sources).expect("sources as JSON")
}

fn statuses(config: &Config) -> Vec<(Layer, SourceStatus)> {
    config
        .sources
        .iter()
        .map(|source| (source.layer, source.status))
        .collect()
}

#[test]
fn the_upper_layer_wins_scalars_and_replaces_server_tables_whole() {
    let world = World::new();
    world.write_user(&format!(
        r#"approval_policy = "never"
elicitations_auto_deny = true
model = "o4-mini"

[features]
tool_call_mcp_elicitation = true

[mcp_servers.shop]
command = "user-shop"
args = ["--user"]
env = {{ SHOP_TOKEN = "user" }}
default_tools_approval_mode = "prompt"

[mcp_servers.docs]
url = "https://docs.example.com/mcp"

{}"#,
        World::trust(&world.project, "trusted")
    ));
    world.write_project(
        "approval_policy = \"on-request\"\nmodel = \"o3\"\nsandbox_mode = \"read-only\"\n\n[mcp_servers.extra]\ncommand = \"extra\"\n\n[mcp_servers.shop]\ncommand = \"project-shop\"\n",
    );
    let config = world.load();
    assert_eq!(config.top_file(), Some(world.project_file().as_path()));
    assert_eq!(config.approval_policy, ApprovalPolicy::OnRequest);
    assert!(config.elicitations_auto_deny);
    assert!(config.features.tool_call_mcp_elicitation);
    assert_eq!(config.ignored_keys, ["sandbox_mode"]);
    assert_eq!(config.model.as_deref(), Some("o3"));
    // The project's shop table replaced the user's whole: no args, env or mode of the user's.
    let shop = config.server("shop").expect("shop");
    assert_eq!(shop.transport, stdio("project-shop", &[]));
    assert!(shop.enabled && !shop.builtin);
    assert_eq!(shop.default_tools_approval_mode, None);
    assert_eq!(
        policy::approval_mode(&config, "shop", "any"),
        (ApprovalMode::Auto, ModeSource::Default)
    );
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["shop", "docs", "extra", "demo"]);
    assert_eq!(
        config.server("shop").and_then(|s| s.file.clone()),
        Some(world.project_file())
    );
    assert_eq!(
        config.server("docs").and_then(|s| s.file.clone()),
        Some(world.user.clone())
    );
    assert_eq!(config.server("demo").and_then(|s| s.file.clone()), None);
    assert_eq!(
        sources(&config),
        json!([
            {"layer": "user", "file": world.user.display().to_string(), "applied": true,
             "reason": "the user config: it always applies"},
            {"layer": "project", "file": world.project_file().display().to_string(),
             "applied": true,
             "reason": format!(
                 "project {0} is trusted (projects.\"{0}\".trust_level = \"trusted\" in the user config)",
                 world.project.display()
             )}
        ])
    );
    assert_eq!(
        config.describe_files(),
        format!(
            "{} and {}",
            world.user.display(),
            world.project_file().display()
        )
    );
}

#[test]
fn an_untrusted_project_file_is_not_read_at_all() {
    let world = World::new();
    // Not even TOML: parsing it would fail the load.
    world.write_project("[mcp_servers.evil\ncommand = \"touch /tmp/pwned\"\n");
    let config = world.load();
    assert_eq!(config, {
        let mut expected = Config::embedded();
        expected.sources.clone_from(&config.sources);
        expected
    });
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Missing),
            (Layer::Project, SourceStatus::NotTrusted)
        ]
    );
    let project = world.project.display().to_string();
    assert_eq!(
        sources(&config)[1],
        json!({"layer": "project", "file": world.project_file().display().to_string(),
               "applied": false,
               "reason": format!("not read: project {project} is not trusted; run `formwork trust {project}` to use it")})
    );
    let notices: Vec<String> = config
        .sources
        .iter()
        .filter_map(config::ConfigSource::skipped_notice)
        .collect();
    assert_eq!(
        notices,
        [format!(
            "skipped {project}/formwork.toml (project {project} is not trusted); run `formwork trust {project}` to use it"
        )]
    );
    assert_eq!(
        config.describe_files(),
        "the built-in default config (no formwork.toml)"
    );
    assert_eq!(config.top_file(), None);
}

#[test]
fn a_project_file_cannot_trust_itself() {
    let world = World::new();
    let own_trust = World::trust(&world.project, "trusted");
    world.write_project(&format!(
        "[mcp_servers.evil]\ncommand = \"touch /tmp/pwned\"\n\n{own_trust}"
    ));
    // Without the user config's word, the file's own [projects] table counts for nothing.
    let config = world.load();
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Missing),
            (Layer::Project, SourceStatus::NotTrusted)
        ]
    );
    assert!(config.server("evil").is_none());
    // Neither does it in a user config that does not name this project.
    world.write_user(&World::trust(&world.root.join("elsewhere"), "trusted"));
    assert!(world.load().server("evil").is_none());
    // Once the user trusts it, it applies, and its [projects] table is listed as ignored.
    world.write_user(&own_trust);
    let config = world.load();
    assert!(config.server("evil").is_some());
    assert_eq!(config.ignored_keys, ["projects"]);
}

#[test]
fn trust_names_exactly_the_canonical_project_directory() {
    let world = World::new();
    world.write_project("approval_policy = \"never\"\n");
    let deeper = world.project.join("a/b");
    std::fs::create_dir_all(&deeper).expect("deeper");
    let link = world.root.join("link");
    std::os::unix::fs::symlink(&world.project, &link).expect("symlink");
    let applied = |start: &Path| {
        world.load_from(start, None).expect("loads").approval_policy == ApprovalPolicy::Never
    };

    // An ancestor's entry does not trust the project below it.
    world.write_user(&World::trust(&world.root, "trusted"));
    assert!(!applied(&world.project));
    // A symlinked spelling of the directory is not its canonical path.
    world.write_user(&World::trust(&link, "trusted"));
    assert!(!applied(&world.project));
    assert!(!applied(&link));

    // The project's own canonical path: from it, from below it, and through the link.
    world.write_user(&World::trust(&world.project, "trusted"));
    assert!(applied(&world.project));
    assert!(applied(&deeper));
    assert!(applied(&link));
    let config = world.load_from(&deeper, None).expect("loads");
    assert_eq!(
        config.sources[1].project.as_deref(),
        Some(world.project.as_path())
    );
    // A trailing slash spells the same path.
    world.write_user(&format!(
        "[projects.\"{}/\"]\ntrust_level = \"trusted\"\n",
        world.project.display()
    ));
    assert!(applied(&world.project));

    // The nearest formwork.toml is the project's: one below needs trust of its own.
    std::fs::write(deeper.join("formwork.toml"), "").expect("nested file");
    let config = world.load_from(&deeper, None).expect("loads");
    assert_eq!(config.sources[1].status, SourceStatus::NotTrusted);
    assert_eq!(config.sources[1].project.as_deref(), Some(deeper.as_path()));
}

#[test]
fn a_project_marked_untrusted_is_skipped_without_a_notice() {
    let world = World::new();
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    world.write_user(&World::trust(&world.project, "untrusted"));
    let config = world.load();
    assert_eq!(config.sources[1].status, SourceStatus::MarkedUntrusted);
    assert!(!config.sources[1].applied());
    assert_eq!(config.sources[1].skipped_notice(), None);
    assert_eq!(
        config.sources[1].reason(),
        format!(
            "not read: project {} is marked trust_level = \"untrusted\" in the user config",
            world.project.display()
        )
    );
    assert!(config.server("evil").is_none());
}

#[test]
fn no_project_file_found() {
    let world = World::new();
    let config = world.load();
    assert_eq!(
        sources(&config)[1],
        json!({"layer": "project", "file": null, "applied": false,
               "reason": format!("no formwork.toml in {} or any directory above it", world.project.display())})
    );
}

#[test]
fn the_user_config_found_as_a_project_file_applies_once() {
    let world = World::new();
    world.write_user("[mcp_servers.mine]\ncommand = \"mine\"\n");
    let config = world
        .load_from(world.user.parent().expect("dir"), None)
        .expect("loads");
    assert_eq!(
        statuses(&config),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::UserConfig)
        ]
    );
    assert_eq!(
        config.sources[1].reason(),
        "this is the user config, which applies as such"
    );
    assert_eq!(config.top_file(), Some(world.user.as_path()));
}

#[test]
fn an_explicit_file_applies_on_top_of_the_user_config_and_no_project_is_looked_for() {
    let world = World::new();
    world.write_user(&format!(
        "approval_policy = \"never\"\n[mcp_servers.mine]\ncommand = \"mine\"\n\n{}",
        World::trust(&world.project, "trusted")
    ));
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    let explicit = world.root.join("named.toml");
    std::fs::write(
        &explicit,
        "elicitations_auto_deny = true\n[mcp_servers.named]\ncommand = \"named\"\n",
    )
    .expect("write");
    let config = world
        .load_from(&world.project, Some(&explicit))
        .expect("loads");
    assert_eq!(
        sources(&config),
        json!([
            {"layer": "user", "file": world.user.display().to_string(), "applied": true,
             "reason": "the user config: it always applies"},
            {"layer": "explicit", "file": explicit.display().to_string(), "applied": true,
             "reason": "named with --config: it applies on top of the user config, and no project formwork.toml is looked for"}
        ])
    );
    assert_eq!(config.approval_policy, ApprovalPolicy::Never);
    assert!(config.elicitations_auto_deny);
    let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
    assert_eq!(names, ["mine", "named", "demo"]);

    // A missing explicit file is an error, unlike a missing user config.
    let err = world
        .load_from(&world.project, Some(&world.root.join("nope.toml")))
        .expect_err("missing");
    assert!(matches!(err, ConfigError::Read { .. }), "{err}");
}

#[test]
fn errors_in_any_layer_name_its_file_line_and_key() {
    let world = World::new();
    world.write_user(&format!(
        "{}\n[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_sec = 1e20\n",
        World::trust(&world.project, "trusted")
    ));
    let err = world
        .load_from(&world.project, None)
        .expect_err("bad user config");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:6:1: mcp_servers.x.startup_timeout_sec: expected a positive number of seconds, at most 86400 (one day)",
            world.user.display()
        )
    );
    world.write_user(&World::trust(&world.project, "trusted"));
    world.write_project("approval_policy = \"sometimes\"\n");
    let err = world
        .load_from(&world.project, None)
        .expect_err("bad project file");
    assert_eq!(
        err.to_string(),
        format!(
            r#"{}:1:19: approval_policy: unknown approval policy "sometimes", expected "untrusted", "on-request", "never" or {{ granular = {{ ... }} }}"#,
            world.project_file().display()
        )
    );
}

#[test]
fn a_bad_projects_table_in_the_user_config_is_an_error() {
    let world = World::new();
    let user = world.user.display().to_string();
    let rows = [
        (
            "[projects.\"rel/dir\"]\ntrust_level = \"trusted\"\n",
            format!(
                r#"{user}:1:11: projects."rel/dir": a project is named by the absolute path of its directory"#
            ),
        ),
        (
            "[projects.\"/abs\"]\ntrust_level = \"maybe\"\n",
            format!(
                r#"{user}:2:15: projects."/abs".trust_level: unknown variant `maybe`, expected `trusted` or `untrusted`"#
            ),
        ),
        (
            "[projects.\"/abs\"]\ntrust = \"trusted\"\n",
            format!(
                r#"{user}:2:1: projects."/abs".trust: unknown field `trust`, expected `trust_level`"#
            ),
        ),
    ];
    for (text, expected) in rows {
        world.write_user(text);
        let err = world.load_from(&world.project, None).expect_err(text);
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn writes_go_to_the_user_config_or_the_explicit_file_never_a_project_file() {
    let world = World::new();
    world.write_user(&format!(
        "[mcp_servers.mine]\ncommand = \"mine\"\n\n{}",
        World::trust(&world.project, "trusted")
    ));
    world.write_project("[mcp_servers.theirs]\ncommand = \"theirs\"\n");
    let config = world.load();
    assert_eq!(config.writable_path(), Some(world.user.as_path()));
    assert_eq!(config.remember_file("mine"), Some(world.user.clone()));
    assert_eq!(config.remember_file("demo"), Some(world.user.clone()));
    assert_eq!(config.remember_file("theirs"), None);
    assert_eq!(config.remember_file("unknown"), None);
    // So the card offers Always allow for the user's server, not for the project's.
    let offers = |server: &str| match policy::tool_approval(&config, server, "t", None).need {
        policy::ApprovalNeed::Card(offers) => offers,
        other => panic!("{other:?}"),
    };
    assert!(offers("mine").always && offers("mine").session);
    assert!(!offers("theirs").always && offers("theirs").session);

    let explicit = world.root.join("named.toml");
    std::fs::write(&explicit, "[mcp_servers.named]\ncommand = \"named\"\n").expect("write");
    let config = world
        .load_from(&world.project, Some(&explicit))
        .expect("loads");
    assert_eq!(config.writable_path(), Some(explicit.as_path()));
    assert_eq!(config.remember_file("named"), Some(explicit.clone()));
    assert_eq!(config.remember_file("demo"), Some(explicit.clone()));
    assert_eq!(config.remember_file("mine"), Some(world.user.clone()));
}

#[test]
fn reload_reads_the_same_layers_again() {
    let world = World::new();
    let config = world.load();
    assert_eq!(config.sources[0].status, SourceStatus::Missing);
    let path = config.remember_file("demo").expect("the user config");
    config::remember_always_allow(&path, "demo", "deploy").expect("remember");
    // The project file appearing now changes nothing: the search is not redone.
    world.write_project("[mcp_servers.evil]\ncommand = \"x\"\n");
    let reloaded = config.reload().expect("reload");
    assert_eq!(
        statuses(&reloaded),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::NotFound)
        ]
    );
    assert_eq!(
        reloaded
            .server("demo")
            .and_then(|demo| demo.tool_approval_mode("deploy")),
        Some(ApprovalMode::Approve)
    );
    assert!(reloaded.server("evil").is_none());
}

/// Trust taken back while a host runs: the next reload (after an Always allow) leaves the
/// project's file out, as a fresh load would.
#[test]
fn reload_drops_a_project_whose_trust_was_taken_back() {
    let world = World::new();
    world.write_user(&World::trust(&world.project, "trusted"));
    world.write_project("[mcp_servers.shop]\ncommand = \"shop\"\n");
    let config = world.load();
    assert!(config.server("shop").is_some());
    world.write_user(&World::trust(&world.project, "untrusted"));
    let reloaded = config.reload().expect("reload");
    assert_eq!(
        statuses(&reloaded),
        [
            (Layer::User, SourceStatus::Applied),
            (Layer::Project, SourceStatus::MarkedUntrusted)
        ]
    );
    assert!(reloaded.server("shop").is_none());
    world.write_user("");
    let reloaded = config.reload().expect("reload");
    assert_eq!(reloaded.sources[1].status, SourceStatus::NotTrusted);
    assert!(reloaded.server("shop").is_none());
}

// ---------------------------------------------------------------------------------------------
// `formwork trust`

#[test]
fn trust_project_records_the_directory_in_a_new_private_user_config() {
    let world = World::new();
    let report = config::trust_project(&world.user, &world.project).expect("trust");
    assert_eq!(
        serde_json::to_value(&report).expect("json"),
        json!({"config": world.user.display().to_string(),
               "project": world.project.display().to_string(),
               "trust_level": "trusted", "written": true})
    );
    assert_eq!(read(&world.user), World::trust(&world.project, "trusted"));
    assert_eq!(mode(&world.user), 0o600);
    let dir = world.user.parent().expect("dir");
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(dir.parent().expect("config dir")), 0o700);
    assert!(
        !config::trust_project(&world.user, &world.project)
            .expect("again")
            .written
    );

    // It applies now; an "untrusted" entry is turned into a trusted one, the rest kept.
    world.write_project("approval_policy = \"never\"\n");
    assert_eq!(world.load().approval_policy, ApprovalPolicy::Never);
    let kept = "# mine\nmodel = \"o3\"\n\n";
    world.write_user(&format!(
        "{kept}{}",
        World::trust(&world.project, "untrusted")
    ));
    assert!(
        config::trust_project(&world.user, &world.project)
            .expect("flip")
            .written
    );
    assert_eq!(
        read(&world.user),
        format!("{kept}{}", World::trust(&world.project, "trusted"))
    );

    let err = config::trust_project(&world.user, Path::new("rel")).expect_err("relative");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot trust rel: a project is named by an absolute UTF-8 path",
            world.user.display()
        )
    );
}

// ---------------------------------------------------------------------------------------------
// How files are written

/// A temporary directory by its canonical path.
fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    (dir, root)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o7777
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_file_formwork_creates_is_private_even_with_secrets_in_it() {
    let (_dir, root) = canonical_tempdir();
    let path = root.join("new/dir/formwork.toml");
    let report = config::import(&fixture("vscode_mcp.json"), &path).expect("import");
    assert!(report.written);
    assert!(read(&path).contains("http_headers = { Authorization = "));
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().expect("dir")), 0o700);
    assert_eq!(mode(&root.join("new")), 0o700);
    assert_eq!(names_in(path.parent().expect("dir")), ["formwork.toml"]);
}

#[test]
fn a_rewrite_keeps_the_mode_and_leaves_no_temporary_file() {
    let (_dir, root) = canonical_tempdir();
    let path = root.join("formwork.toml");
    std::fs::write(&path, "[mcp_servers.shop]\ncommand = \"x\"\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    config::remember_always_allow(&path, "shop", "refund").expect("remember");
    assert_eq!(mode(&path), 0o640);
    assert_eq!(
        read(&path),
        "[mcp_servers.shop]\ncommand = \"x\"\n\n[mcp_servers.shop.tools.refund]\napproval_mode = \"approve\"\n"
    );
    assert_eq!(names_in(&root), ["formwork.toml"]);
}

#[test]
fn a_symlinked_config_is_written_through_and_stays_a_symlink() {
    let (_dir, root) = canonical_tempdir();
    let real = root.join("dotfiles/formwork.toml");
    std::fs::create_dir_all(real.parent().expect("dir")).expect("dir");
    std::fs::write(&real, "approval_policy = \"never\" # kept in dotfiles\n").expect("write");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let link = root.join("formwork.toml");
    std::os::unix::fs::symlink("dotfiles/formwork.toml", &link).expect("symlink");

    config::sync(&link, Path::new(EXE)).expect("sync");
    let metadata = std::fs::symlink_metadata(&link).expect("link");
    assert!(metadata.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(&link).expect("read link"),
        Path::new("dotfiles/formwork.toml")
    );
    assert_eq!(
        read(&real),
        "approval_policy = \"never\" # kept in dotfiles\n\n[mcp_servers.demo]\ncommand = \"/opt/formwork/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"
    );
    assert_eq!(mode(&real), 0o644);
    // The temporary file was made beside the real file, and is gone.
    assert_eq!(names_in(real.parent().expect("dir")), ["formwork.toml"]);
}

#[test]
fn a_taken_temporary_name_is_neither_followed_nor_replaced() {
    let (_dir, root) = canonical_tempdir();
    let project = root.join("proj");
    std::fs::create_dir_all(&project).expect("dir");
    let path = project.join("formwork.toml");
    std::fs::write(&path, "").expect("write");
    let victim = root.join("victim");
    std::fs::write(&victim, "precious\n").expect("write victim");
    // The name the first attempt would use, taken by a link to somewhere else.
    let squatter = project.join(format!(".formwork.toml.{}.tmp", std::process::id()));
    std::os::unix::fs::symlink(&victim, &squatter).expect("symlink");

    config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(read(&victim), "precious\n");
    assert!(
        std::fs::symlink_metadata(&squatter)
            .expect("still there")
            .file_type()
            .is_symlink()
    );
    assert!(read(&path).starts_with("[mcp_servers.demo]\n"));
    let mut expected = vec![
        "formwork.toml".to_owned(),
        format!(".formwork.toml.{}.tmp", std::process::id()),
    ];
    expected.sort();
    assert_eq!(names_in(&project), expected);
}

#[test]
fn the_forms_table_is_checked() {
    check_error(
        "[forms]\nmax_pending = 0\n",
        "formwork.toml:2:1: forms.max_pending: expected a whole number from 1 to 1000",
    );
    check_error(
        "[forms]\nmax_pending = 1001\n",
        "formwork.toml:2:1: forms.max_pending: expected a whole number from 1 to 1000",
    );
    let wrong = Config::from_toml("[forms]\nsensitive_fields = \"maybe\"\n", None)
        .expect_err("an unknown choice")
        .to_string();
    assert!(wrong.contains("forms.sensitive_fields"), "{wrong}");
    let typo = Config::from_toml("[forms]\nmax_pendng = 3\n", None)
        .expect_err("an unknown key")
        .to_string();
    assert!(typo.contains("max_pendng"), "{typo}");
    let config =
        Config::from_toml("[forms]\nsensitive_fields = \"decline\"\n", None).expect("a good file");
    assert_eq!(
        config.forms,
        formwork_host::config::FormsConfig {
            max_pending: 16,
            sensitive_fields: formwork_host::config::SensitiveFields::Decline,
        }
    );
}

// ---------------------------------------------------------------------------------------------
// OAuth: Codex's `scopes`, `oauth_resource`, `env_http_headers` and the top-level store keys;
// formwork's own `[mcp_servers.<name>.oauth]`

#[test]
fn oauth_keys_load_and_resolve_to_auth_settings() {
    let (_dir, root) = canonical_tempdir();
    let key = "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";
    std::fs::create_dir(root.join("keys")).expect("mkdir");
    std::fs::write(root.join("keys/client.pem"), key).expect("write the key");
    let path = root.join("formwork.toml");
    std::fs::write(
        &path,
        r#"mcp_oauth_credentials_store = "file"
mcp_oauth_callback_port = 8765

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
scopes = ["docs:read", "docs:write"]
oauth_resource = "https://docs.example.com/"
env_http_headers = { X-Team = "HOME" }

[mcp_servers.docs.oauth]
client_id = "formwork-docs"
grant = "client_credentials"
private_key_file = "keys/client.pem"
issuer = "https://auth.example.com/tenant"

[mcp_servers.cimd]
url = "https://cimd.example.com/mcp"
oauth = { client_metadata_url = "https://formwork.example.com/client.json" }

[mcp_servers.secret]
url = "https://secret.example.com/mcp"
oauth = { client_id = "app", client_secret_env_var = "PATH", grant = "client_credentials", private_key_file = "", signing_algorithm = "RS256" }

[mcp_servers.enterprise]
url = "https://enterprise.example.com/mcp"
oauth = { grant = "cross_app_access", client_id = "app", client_secret_env_var = "PATH", idp_token_endpoint = "https://idp.example.com/oauth2/token", idp_client_id = "idp-app", id_token_env_var = "HOME" }
"#,
    )
    .expect("write the config");
    check_error(
        &std::fs::read_to_string(&path).expect("read"),
        "formwork.toml:22:92: mcp_servers.secret.oauth.private_key_file: the client signs in with `client_secret_env_var` or with `private_key_file`; keep one of the two",
    );
    let text = std::fs::read_to_string(&path).expect("read").replace(
        r#", private_key_file = "", signing_algorithm = "RS256""#,
        "",
    );
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("loads");
    assert_eq!(
        config.mcp_oauth_credentials_store,
        formwork_host::CredentialsStoreMode::File
    );
    assert_eq!(config.mcp_oauth_callback_port, Some(8765));
    assert_eq!(config.ignored_keys, Vec::<String>::new());

    let docs = &config.server("docs").expect("docs").transport;
    assert_eq!(
        *docs,
        Transport::StreamableHttp {
            url: "https://docs.example.com/mcp".to_owned(),
            http_headers: Default::default(),
            env_http_headers: [("X-Team".to_owned(), "HOME".to_owned())].into(),
            bearer_token_env_var: None,
            scopes: vec!["docs:read".to_owned(), "docs:write".to_owned()],
            oauth_resource: Some("https://docs.example.com/".to_owned()),
            oauth: Box::new(config::OAuthConfig {
                client_id: Some("formwork-docs".to_owned()),
                grant: formwork_host::Grant::ClientCredentials,
                private_key_file: Some(root.join("keys/client.pem")),
                issuer: Some("https://auth.example.com/tenant".to_owned()),
                ..Default::default()
            }),
            share_session: false,
        }
    );
    let settings = docs.auth_settings().expect("resolves");
    assert_eq!(
        format!("{settings:?}"),
        "AuthSettings { client_id: Some(\"formwork-docs\"), client_secret: None, \
         client_metadata_url: None, issuer: Some(\"https://auth.example.com/tenant\"), \
         grant: ClientCredentials, private_key_pem: \
         Some(<redacted>), signing_algorithm: Some(\"ES256\"), scopes: [\"docs:read\", \
         \"docs:write\"], resource: Some(\"https://docs.example.com/\"), identity_provider: None }"
    );
    assert_eq!(settings.private_key_pem.as_deref(), Some(key));
    let home = std::env::var("HOME").expect("HOME is set");
    assert_eq!(docs.http_headers(), Ok(vec![("X-Team".to_owned(), home)]));

    let cimd = config
        .server("cimd")
        .expect("cimd")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(
        cimd.client_metadata_url.as_deref(),
        Some("https://formwork.example.com/client.json")
    );
    assert_eq!(cimd.grant, formwork_host::Grant::AuthorizationCode);
    assert_eq!(cimd.signing_algorithm, None);

    let secret = config
        .server("secret")
        .expect("secret")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(
        secret.client_secret,
        Some(std::env::var("PATH").expect("PATH is set"))
    );
    assert_eq!(secret.private_key_pem, None);

    // The identity provider's ID token is read from its variable like a secret.
    let enterprise = config
        .server("enterprise")
        .expect("enterprise")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(enterprise.grant, formwork_host::Grant::CrossAppAccess);
    let idp = enterprise.identity_provider.expect("an identity provider");
    assert_eq!(
        (idp.token_endpoint.as_str(), idp.client_id.as_str()),
        ("https://idp.example.com/oauth2/token", "idp-app")
    );
    assert_eq!(idp.client_secret, None);
    assert_eq!(Some(idp.id_token), std::env::var("HOME").ok());

    // A stdio server resolves to no OAuth at all.
    assert_eq!(
        format!(
            "{:?}",
            stdio("x", &[]).auth_settings().expect("nothing to read")
        ),
        format!("{:?}", formwork_host::AuthSettings::default())
    );
    // Without a file, the store is `auto` and the port a free one.
    let config = load("");
    assert_eq!(
        config.mcp_oauth_credentials_store,
        formwork_host::CredentialsStoreMode::Auto
    );
    assert_eq!(config.mcp_oauth_callback_port, None);
}

#[test]
fn oauth_secrets_and_keys_that_cannot_be_read_are_errors_naming_the_key() {
    let (_dir, root) = canonical_tempdir();
    std::fs::write(
        root.join("not-a-key.pem"),
        "-----BEGIN EC PRIVATE KEY-----\n",
    )
    .expect("write");
    let server = |oauth: &str| {
        let text = format!(
            "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\noauth = {{ {oauth} }}\n"
        );
        let path = root.join("formwork.toml");
        std::fs::write(&path, text).expect("write");
        let config = Config::load(&path).expect("loads");
        config
            .server("x")
            .expect("x")
            .transport
            .auth_settings()
            .map_err(|err| err.to_string())
    };
    assert_eq!(
        server(r#"client_id = "a", client_secret_env_var = "FORMWORK_TEST_UNSET_SECRET""#)
            .map(|_| ()),
        Err("the environment variable `FORMWORK_TEST_UNSET_SECRET` (oauth.client_secret_env_var) is not set".to_owned())
    );
    let missing = root.join("missing.pem");
    assert_eq!(
        server(
            r#"client_id = "a", grant = "client_credentials", private_key_file = "missing.pem""#
        )
        .map(|_| ()),
        Err(format!(
            "cannot read {} (oauth.private_key_file): No such file or directory (os error 2)",
            missing.display()
        ))
    );
    assert_eq!(
        server(
            r#"client_id = "a", grant = "client_credentials", private_key_file = "not-a-key.pem""#
        )
        .map(|_| ()),
        Err(format!(
            "{} (oauth.private_key_file) is not a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)",
            root.join("not-a-key.pem").display()
        ))
    );
}

#[test]
fn env_http_headers_join_the_headers_from_their_variables() {
    let config = load(
        "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\nhttp_headers = { X-Team = \"forms\" }\nenv_http_headers = { X-Path = \"PATH\", X-Unset = \"FORMWORK_TEST_UNSET_HEADER\" }\n\n[mcp_servers.y]\nurl = \"https://y.example.com/mcp\"\nenv_http_headers = { \"X-Path\" = \"PATH\" }\nbearer_token_env_var = \"PATH\"\n",
    );
    let path = std::env::var("PATH").expect("PATH is set");
    // A header whose variable is unset is left out, as in Codex.
    assert_eq!(
        config.server("x").expect("x").transport.http_headers(),
        Ok(vec![
            ("X-Team".to_owned(), "forms".to_owned()),
            ("X-Path".to_owned(), path.clone()),
        ])
    );
    assert_eq!(
        config.server("y").expect("y").transport.http_headers(),
        Ok(vec![
            ("X-Path".to_owned(), path.clone()),
            ("authorization".to_owned(), format!("Bearer {path}")),
        ])
    );
}

#[test]
fn oauth_keys_that_cannot_work_are_errors_naming_the_key() {
    let http = "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\n";
    let rows = [
        (
            "oauth = { grant = \"implicit\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: unknown grant \"implicit\", expected \"authorization_code\", \"client_credentials\" or \"cross_app_access\"",
        ),
        (
            "oauth = { grant = \"client_credentials\", client_secret_env_var = \"S\" }",
            "formwork.toml:3:41: mcp_servers.x.oauth.client_secret_env_var: a client secret needs the `client_id` it belongs to",
        ),
        (
            "oauth = { grant = \"client_credentials\", private_key_file = \"k.pem\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the client_credentials grant needs `client_id`",
        ),
        (
            "oauth = { grant = \"client_credentials\", client_id = \"a\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the client_credentials grant needs `client_secret_env_var` or `private_key_file`",
        ),
        (
            "oauth = { client_id = \"a\", private_key_file = \"k.pem\" }",
            "formwork.toml:3:28: mcp_servers.x.oauth.private_key_file: a private key signs in with grant = \"client_credentials\" only",
        ),
        (
            "oauth = { client_id = \"a\", client_secret_env_var = \"S\", signing_algorithm = \"ES256\" }",
            "formwork.toml:3:57: mcp_servers.x.oauth.signing_algorithm: the signing algorithm is for the key of `private_key_file`, which is not given",
        ),
        (
            "oauth = { client_metadata_url = \"http://formwork.example.com/client.json\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { client_metadata_url = \"https://formwork.example.com/\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { client_metadata_url = \"https://formwork.example.com/c.json#x\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { issuer = \"http://auth.example.com\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { issuer = \"https://auth.example.com/?tenant=1\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { issuer = \"auth.example.com\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { client_id = \"a\", scopes = [\"x\"] }",
            "formwork.toml:3:28: mcp_servers.x.oauth.scopes: unknown field `scopes`, expected one of `client_id`, `client_secret_env_var`, `client_metadata_url`, `issuer`, `grant`, `private_key_file`, `signing_algorithm`, `idp_token_endpoint`, `idp_client_id`, `idp_client_secret_env_var`, `id_token_env_var`",
        ),
        (
            "oauth = { client_id = \"a\", id_token_env_var = \"T\" }",
            "formwork.toml:3:28: mcp_servers.x.oauth.id_token_env_var: the identity provider's keys are for grant = \"cross_app_access\" only",
        ),
        (
            "oauth = { grant = \"cross_app_access\", idp_client_id = \"i\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the cross_app_access grant needs `client_id` (formwork's client at the server's authorization server)",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the cross_app_access grant needs `idp_token_endpoint`",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_token_endpoint = \"idp.example/token\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:56: mcp_servers.x.oauth.idp_token_endpoint: expected the identity provider's token endpoint, an https:// URL (http:// only to localhost)",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_token_endpoint = \"http://idp.example/token\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:56: mcp_servers.x.oauth.idp_token_endpoint: expected the identity provider's token endpoint, an https:// URL (http:// only to localhost)",
        ),
        (
            "oauth_resource = \"docs\"",
            "formwork.toml:3:1: mcp_servers.x.oauth_resource: expected an http:// or https:// URL without a fragment (the resource to ask tokens for)",
        ),
        (
            "scopes = \"read write\"",
            "formwork.toml:3:10: mcp_servers.x.scopes: invalid type: string \"read write\", expected a sequence",
        ),
        (
            "http_headers = { x-team = \"a\" }\nenv_http_headers = { X-Team = \"T\" }",
            "formwork.toml:4:22: mcp_servers.x.env_http_headers.X-Team: `http_headers` already has this header; keep one of the two",
        ),
        (
            "bearer_token_env_var = \"T\"\nenv_http_headers = { Authorization = \"T\" }",
            "formwork.toml:4:22: mcp_servers.x.env_http_headers.Authorization: `bearer_token_env_var` already sends an Authorization header; keep one of the two",
        ),
    ];
    for (keys, expected) in rows {
        check_error(&format!("{http}{keys}\n"), expected);
    }
    // The table form is located the same way.
    check_error(
        &format!("{http}\n[mcp_servers.x.oauth]\nclient_id = \"a\"\nmode = \"x\"\n"),
        "formwork.toml:6:1: mcp_servers.x.oauth.mode: unknown field `mode`, expected one of `client_id`, `client_secret_env_var`, `client_metadata_url`, `issuer`, `grant`, `private_key_file`, `signing_algorithm`, `idp_token_endpoint`, `idp_client_id`, `idp_client_secret_env_var`, `id_token_env_var`",
    );
}

#[test]
fn http_only_keys_are_errors_on_a_stdio_server() {
    for key in [
        "env_http_headers = { A = \"B\" }",
        "scopes = [\"a\"]",
        "oauth_resource = \"https://x.example.com\"",
        "oauth = { client_id = \"a\" }",
    ] {
        let name = key.split(' ').next().expect("a key");
        check_error(
            &format!("[mcp_servers.x]\ncommand = \"a\"\n{key}\n"),
            &format!(
                "formwork.toml:3:1: mcp_servers.x.{name}: only a `url` (Streamable HTTP) server takes this key"
            ),
        );
    }
}

#[test]
fn the_oauth_store_keys_are_checked() {
    check_error(
        "mcp_oauth_credentials_store = \"vault\"\n",
        "formwork.toml:1:31: mcp_oauth_credentials_store: unknown variant `vault`, expected one of `auto`, `keyring`, `file`",
    );
    for port in ["0", "65536", "-1"] {
        check_error(
            &format!("mcp_oauth_callback_port = {port}\n"),
            "formwork.toml:1:1: mcp_oauth_callback_port: expected a port from 1 to 65535 (leave it out for a free port each time)",
        );
    }
    for (text, mode) in [
        ("auto", formwork_host::CredentialsStoreMode::Auto),
        ("keyring", formwork_host::CredentialsStoreMode::Keyring),
        ("file", formwork_host::CredentialsStoreMode::File),
    ] {
        let config = load(&format!(
            "mcp_oauth_credentials_store = \"{text}\"\nmcp_oauth_callback_port = 65535\n"
        ));
        assert_eq!(config.mcp_oauth_credentials_store, mode);
        assert_eq!(config.mcp_oauth_callback_port, Some(65535));
    }
}

#[test]
fn sync_removes_the_http_and_oauth_keys_of_a_builtin_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    std::fs::write(
        &path,
        "[mcp_servers.demo]\nurl = \"https://x.example.com/mcp\"\nenv_http_headers = { A = \"B\" }\nscopes = [\"a\"]\noauth_resource = \"https://x.example.com\"\noauth = { client_id = \"a\" }\nshare_session = true\n",
    )
    .expect("write");
    config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(
        read(&path),
        format!(
            "[mcp_servers.demo]\ncommand = \"{EXE}\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"
        )
    );
}

#[test]
fn import_codex_config_toml_carries_the_shared_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    let report = config::import(&fixture("codex_config.toml"), &path).expect("import");
    let report = serde_json::to_value(&report).expect("report as JSON");
    // Only what formwork does not act on is ignored: approvals, `env_vars`, `enabled` and the
    // timeouts come along.
    assert_eq!(
        report["added"],
        json!([
            {"name": "docs", "transport": "streamable_http", "ignored_fields": ["tools.delete_page.note"]},
            {"name": "files", "transport": "stdio", "ignored_fields": ["required", "supports_parallel_tool_calls"]}
        ])
    );
    assert_eq!(
        report["skipped"],
        json!([
            {"name": "wrong", "reason": "it would not load: mcp_servers.wrong.scopes: only a `url` (Streamable HTTP) server takes this key"},
            {"name": "demo", "reason": "the name is reserved for formwork's built-in server"}
        ])
    );
    assert_eq!(
        read(&path),
        r#"[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
env_http_headers = { "X-Tenant" = "DOCS_TENANT" }
scopes = ["docs:read", "docs:write"]
oauth_resource = "https://docs.example.com/"
startup_timeout_sec = 20
default_tools_approval_mode = "approve"
http_headers = { X-Team = "forms" }
tools = { search = { approval_mode = "approve" }, delete_page = { approval_mode = "prompt" } }

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
env = { LOG = "1" }
env_vars = ["GITHUB_TOKEN"]
enabled_tools = ["read_file", "write_file"]
startup_timeout_sec = 15.0
tool_timeout_sec = 90
enabled = false
default_tools_approval_mode = "prompt"
"#
    );
    let loaded = Config::load(&path).expect("loads");
    let docs = loaded.server("docs").expect("imported");
    let Transport::StreamableHttp {
        scopes,
        oauth_resource,
        ..
    } = &docs.transport
    else {
        panic!("not HTTP: {:?}", docs.transport);
    };
    assert_eq!(scopes, &["docs:read", "docs:write"]);
    assert_eq!(oauth_resource.as_deref(), Some("https://docs.example.com/"));
    assert_eq!(
        docs.default_tools_approval_mode,
        Some(ApprovalMode::Approve)
    );
    assert_eq!(
        docs.tool_approval_mode("search"),
        Some(ApprovalMode::Approve)
    );
    assert_eq!(
        docs.tool_approval_mode("delete_page"),
        Some(ApprovalMode::Prompt)
    );
    let files = loaded.server("files").expect("imported");
    assert_eq!(
        files.default_tools_approval_mode,
        Some(ApprovalMode::Prompt)
    );
    assert!(!files.enabled);
    assert_eq!(
        files.startup_timeout,
        Some(std::time::Duration::from_secs(15))
    );
    assert_eq!(files.tool_timeout, Some(std::time::Duration::from_secs(90)));
    let Transport::Stdio { env_vars, .. } = &files.transport else {
        panic!("not stdio: {:?}", files.transport);
    };
    assert_eq!(env_vars, &["GITHUB_TOKEN"]);
}

#[test]
fn an_unknown_protocol_version_names_the_known_ones() {
    assert_eq!(
        config::parse_protocol_version("2024-01-01").map_err(|err| err.to_string()),
        Err(
            "`2024-01-01` is not a protocol version formwork knows; use \"auto\" or one of \
             2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28"
                .to_owned()
        )
    );
    assert_eq!(config::parse_protocol_version("auto"), Ok(None));
}
