//! Bad files: the error names file, line, column and key; timeouts are checked at load, never a
//! panic later.

use super::*;

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
        "formwork.toml:2:1: aproval_policy: unknown key; formwork reads approval_policy, codex, elicitations_auto_deny, features, forms, mcp_oauth_callback_port, mcp_oauth_credentials_store, mcp_servers, model, model_provider, model_providers, projects, runtime, store, tool_output_token_limit, and accepts Codex's other settings (sandbox_mode, profiles, ...) without using them",
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
