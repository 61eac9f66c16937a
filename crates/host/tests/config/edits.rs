//! Edits: sync, import, Always allow.

use super::*;

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
