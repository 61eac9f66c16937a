//! Good files.

use super::*;

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

/// `[store] url`: a SQLite path (relative to the file's directory) or a PostgreSQL URL, whose
/// password no error or debug output shows; `lease_seconds`, the lease of running calls.
#[test]
fn where_the_store_lives() {
    assert_eq!(load("").store, config::StoreConfig::default());
    let config = load("[store]\nurl = \"postgres://ada:s3cret@db.local:6543/formwork\"\n");
    let url = config.store.url.as_ref().expect("a url");
    assert_eq!(url.to_string(), "postgres://ada@db.local:6543/formwork");
    assert!(!format!("{config:?}").contains("s3cret"));
    let nested = Config::from_toml(
        "[store]\nurl = \"data/formwork.db\"\n",
        Some(Path::new("/etc/formwork/formwork.toml")),
    )
    .expect("loads");
    assert_eq!(
        nested.store.url,
        Some(StoreUrl::Sqlite(PathBuf::from(
            "/etc/formwork/data/formwork.db"
        )))
    );
    check_error(
        "[store]\nurl = \"postgres://ada:s3cret@db.local/formwork?sslmode=require\"\n",
        "formwork.toml:2:1: store.url: the store URL postgres://ada@db.local/formwork?sslmode=require \
         is invalid: query parameters are not supported (TLS and other options are not yet either)",
    );
    check_error(
        "[store]\nurl = \"mysql://db/formwork\"\n",
        "formwork.toml:2:1: store.url: the store URL scheme \"mysql\" is not supported: use \
         postgres:// or a file path",
    );
    check_error(
        "[store]\npath = \"formwork.db\"\n",
        "formwork.toml:2:1: store.path: unknown field `path`, expected `url` or `lease_seconds`",
    );
    let leased = load("[store]\nlease_seconds = 3\n");
    assert_eq!(leased.store.lease, Some(std::time::Duration::from_secs(3)));
    check_error(
        "[store]\nlease_seconds = 0\n",
        "formwork.toml:2:1: store.lease_seconds: must be 1 to 3600 seconds, not 0",
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
