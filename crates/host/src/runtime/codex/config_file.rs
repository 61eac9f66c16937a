//! Codex's `config.toml` as formwork manages it: the model settings, every server of
//! formwork's config as an `[mcp_servers.<name>]` table, and the feature switch that keeps
//! tool approvals out of the business-form path, written into the `CODEX_HOME` formwork runs
//! Codex with.
//!
//! What formwork wrote last is kept beside the file (`formwork-managed.json`, one entry per
//! key, with the value written), so a refresh knows which keys are its own:
//! - a key formwork writes is set to what formwork's config says now;
//! - a key it wrote before and no longer writes is removed, unless the person changed it since
//!   (then it is theirs and stays);
//! - every other key, table and comment is the person's and stays byte for byte;
//! - an approval mode of `"prompt"` that formwork did not write (the person's) is kept over the
//!   `"approve"` formwork writes by default, so a refresh never loosens an explicit prompt.
//!
//! Writing the same config twice changes nothing the second time.

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Value};

use crate::config::{ApprovalMode, ApprovalPolicy, Config, ModelChoice, ServerConfig, Transport};

/// The file Codex reads in its `CODEX_HOME`.
pub const CONFIG_FILE: &str = "config.toml";
/// The record of what formwork wrote into [`CONFIG_FILE`], beside it.
pub const MANAGED_FILE: &str = "formwork-managed.json";

/// Why Codex's config could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The existing `config.toml` is not TOML formwork can edit.
    #[error("{path} cannot be edited: {reason}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed.
    #[error(transparent)]
    Write(#[from] crate::config::ConfigError),
}

/// What [`write`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The `config.toml` written (or left as it was).
    pub path: PathBuf,
    /// Whether its text changed.
    pub changed: bool,
}

/// One key formwork writes: its path of table names and the key, and the value.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedKey {
    /// `["mcp_servers", "demo", "command"]`.
    pub path: Vec<String>,
    /// The value.
    pub value: Json,
}

/// Writes (or refreshes) `<home>/config.toml` for `config`, the model `choice` (when one is
/// named) and `formwork_exe`, which runs the built-in servers.
pub fn write(
    home: &Path,
    config: &Config,
    choice: Option<&ModelChoice>,
    formwork_exe: &Path,
) -> Result<Written, ConfigFileError> {
    let path = home.join(CONFIG_FILE);
    let managed_path = home.join(MANAGED_FILE);
    let old_text = read_optional(&path)?;
    let old_managed = read_optional(&managed_path)?
        .and_then(|text| serde_json::from_str::<Json>(&text).ok())
        .map(|json| managed_from_json(&json))
        .unwrap_or_default();
    let wanted = managed_keys(config, choice, formwork_exe);
    let (text, written) = refresh(old_text.as_deref().unwrap_or(""), &old_managed, &wanted)
        .map_err(|reason| ConfigFileError::Unreadable {
            path: path.clone(),
            reason,
        })?;
    let changed = old_text.as_deref() != Some(text.as_str());
    if changed {
        crate::config::write_atomically(&path, &text)?;
    }
    let record = managed_to_json(&written).to_string();
    if read_optional(&managed_path)?.as_deref() != Some(record.as_str()) {
        crate::config::write_atomically(&managed_path, &record)?;
    }
    Ok(Written { path, changed })
}

/// The keys formwork writes for `config`, in file order.
pub fn managed_keys(
    config: &Config,
    choice: Option<&ModelChoice>,
    formwork_exe: &Path,
) -> Vec<ManagedKey> {
    let mut keys = Vec::new();
    let mut put = |path: &[&str], value: Json| {
        keys.push(ManagedKey {
            path: path.iter().map(|part| (*part).to_owned()).collect(),
            value,
        });
    };
    if let Some(choice) = choice {
        put(&["model"], json!(choice.model));
        put(&["model_provider"], json!(choice.provider_id));
    }
    for (id, provider) in &config.model_providers {
        let at = |key: &'static str| ["model_providers", id.as_str(), key];
        put(&at("name"), json!(provider.name));
        put(&at("base_url"), json!(provider.base_url));
        if let Some(env_key) = &provider.env_key {
            put(&at("env_key"), json!(env_key));
        }
        put(&at("wire_api"), json!(provider.wire_api.as_str()));
        for (key, map) in [
            ("http_headers", &provider.http_headers),
            ("env_http_headers", &provider.env_http_headers),
            ("query_params", &provider.query_params),
        ] {
            if !map.is_empty() {
                put(&at(key), json!(map));
            }
        }
        put(
            &at("request_max_retries"),
            json!(provider.request_max_retries),
        );
        put(
            &at("stream_max_retries"),
            json!(provider.stream_max_retries),
        );
        put(
            &at("stream_idle_timeout_ms"),
            json!(u64::try_from(provider.stream_idle_timeout.as_millis()).unwrap_or(u64::MAX)),
        );
    }
    for (name, server) in &config.mcp_servers {
        server_keys(name, server, formwork_exe, &mut put);
    }
    put(
        &["features", "tool_call_mcp_elicitation"],
        json!(config.features.tool_call_mcp_elicitation),
    );
    keys
}

/// The keys of one `[mcp_servers.<name>]` table.
fn server_keys(
    name: &str,
    server: &ServerConfig,
    formwork_exe: &Path,
    put: &mut impl FnMut(&[&str], Json),
) {
    let at = |key: &'static str| ["mcp_servers", name, key];
    match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            put(&at("command"), json!(command));
            if !args.is_empty() {
                put(&at("args"), json!(args));
            }
            if !env.is_empty() {
                put(&at("env"), json!(env));
            }
            if let Some(cwd) = cwd {
                put(&at("cwd"), json!(cwd.display().to_string()));
            }
        }
        Transport::StreamableHttp {
            url,
            http_headers,
            env_http_headers,
            bearer_token_env_var,
            scopes,
            oauth_resource,
            ..
        } => {
            put(&at("url"), json!(url));
            if !http_headers.is_empty() {
                put(&at("http_headers"), json!(http_headers));
            }
            if !env_http_headers.is_empty() {
                put(&at("env_http_headers"), json!(env_http_headers));
            }
            if let Some(variable) = bearer_token_env_var {
                put(&at("bearer_token_env_var"), json!(variable));
            }
            if !scopes.is_empty() {
                put(&at("scopes"), json!(scopes));
            }
            if let Some(resource) = oauth_resource {
                put(&at("oauth_resource"), json!(resource));
            }
        }
        Transport::Builtin { args } => {
            put(&at("command"), json!(formwork_exe.display().to_string()));
            put(&at("args"), json!(args));
        }
    }
    if !server.enabled {
        put(&at("enabled"), json!(false));
    }
    if let Some(enabled) = &server.enabled_tools {
        put(&at("enabled_tools"), json!(enabled));
    }
    if !server.disabled_tools.is_empty() {
        put(&at("disabled_tools"), json!(server.disabled_tools));
    }
    for (key, timeout) in [
        ("startup_timeout_sec", server.startup_timeout),
        ("tool_timeout_sec", server.tool_timeout),
    ] {
        if let Some(timeout) = timeout {
            put(&at(key), seconds(timeout));
        }
    }
    // Normal tool calls run without a card unless the person asked for one: the no-prompt
    // behaviour Codex has under `approval_policy = "never"`, kept under the granular policy.
    let mode = server
        .default_tools_approval_mode
        .unwrap_or(ApprovalMode::Approve);
    put(&at("default_tools_approval_mode"), json!(mode.as_str()));
    for (tool, tool_config) in &server.tools {
        if let Some(mode) = tool_config.approval_mode {
            put(
                &["mcp_servers", name, "tools", tool, "approval_mode"],
                json!(mode.as_str()),
            );
        }
    }
}

/// A duration as Codex's `*_sec` keys take it: whole seconds as an integer, else a float.
fn seconds(duration: std::time::Duration) -> Json {
    if duration.subsec_nanos() == 0 {
        json!(duration.as_secs())
    } else {
        json!(duration.as_secs_f64())
    }
}

/// The approval policy of Codex's threads and turns for formwork's `approval_policy`: the
/// granular policy, with plugin forms (`mcp_elicitations`) allowed unless the person's policy
/// declines them, and Codex's other prompts (sandbox, rules, skills, permissions) as the
/// person's policy has them: all asked under `on-request`, as set under `granular`, none under
/// `never` (which declines forms too). `untrusted` has no granular equivalent and is passed
/// as it is; it lets forms through.
pub fn approval_policy(config: &Config) -> Json {
    let granular = |sandbox, rules, skill, permissions, elicitations| {
        json!({ "granular": {
            "sandbox_approval": sandbox,
            "rules": rules,
            "skill_approval": skill,
            "request_permissions": permissions,
            "mcp_elicitations": elicitations,
        }})
    };
    match config.approval_policy {
        ApprovalPolicy::OnRequest => granular(true, true, true, true, true),
        ApprovalPolicy::Untrusted => json!("untrusted"),
        ApprovalPolicy::Never => json!("never"),
        ApprovalPolicy::Granular(policy) => granular(
            policy.sandbox_approval,
            policy.rules,
            policy.skill_approval,
            policy.request_permissions,
            policy.mcp_elicitations,
        ),
    }
}

/// The text of `old` with `wanted` written and what `previous` wrote and `wanted` no longer
/// has removed; and the keys to remember as formwork's.
fn refresh(
    old: &str,
    previous: &[ManagedKey],
    wanted: &[ManagedKey],
) -> Result<(String, Vec<ManagedKey>), String> {
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|err: toml_edit::TomlError| err.message().to_owned())?;
    let before = |path: &[String]| {
        previous
            .iter()
            .find(|key| key.path == path)
            .map(|key| &key.value)
    };
    for key in previous {
        if wanted.iter().any(|wanted| wanted.path == key.path) {
            continue;
        }
        // Removed only while it still holds what formwork wrote.
        if current(&doc, &key.path).as_ref() == Some(&key.value) {
            remove(&mut doc, &key.path);
        }
    }
    let mut written = Vec::with_capacity(wanted.len());
    for key in wanted {
        let now = current(&doc, &key.path);
        let persons_prompt = is_approval_mode(&key.path)
            && now.as_ref() == Some(&json!(ApprovalMode::Prompt.as_str()))
            && before(&key.path) != now.as_ref();
        let value = if persons_prompt {
            json!(ApprovalMode::Prompt.as_str())
        } else {
            key.value.clone()
        };
        if now.as_ref() != Some(&value) {
            set(&mut doc, &key.path, &value)?;
        }
        // What formwork would write, even where the person's prompt was kept: so the prompt
        // stays theirs at the next refresh too.
        written.push(key.clone());
    }
    Ok((doc.to_string(), written))
}

fn is_approval_mode(path: &[String]) -> bool {
    matches!(
        path.last().map(String::as_str),
        Some("default_tools_approval_mode" | "approval_mode")
    )
}

/// The value at `path`, when there is one formwork can read.
fn current(doc: &DocumentMut, path: &[String]) -> Option<Json> {
    let (key, tables) = path.split_last()?;
    let mut table: &dyn toml_edit::TableLike = doc.as_table();
    for name in tables {
        table = table.get(name)?.as_table_like()?;
    }
    match table.get(key)? {
        Item::Value(value) => Some(to_json(value)),
        Item::Table(table) => Some(table_to_json(table)),
        _ => None,
    }
}

/// Sets `path` to `value`, creating the tables on the way (`[a.b]` headers; a table that only
/// holds tables gets no header of its own).
fn set(doc: &mut DocumentMut, path: &[String], value: &Json) -> Result<(), String> {
    let Some((key, tables)) = path.split_last() else {
        return Ok(());
    };
    let mut item = doc.as_item_mut();
    for (depth, name) in tables.iter().enumerate() {
        // `[mcp_servers]`, `[model_providers]` and a server's `[tools]` hold tables only.
        let implicit = (depth == 0 && tables.len() > 1) || (depth == 2 && name == "tools");
        item = crate::config::child_table(item, name, implicit).ok_or_else(|| {
            format!(
                "{} is not a table",
                crate::config::dotted(tables[..=depth].iter().map(String::as_str))
            )
        })?;
    }
    let table = item
        .as_table_like_mut()
        .ok_or_else(|| format!("{} is not a table", tables.join(".")))?;
    crate::config::set_value(table, key, to_toml(value));
    Ok(())
}

/// Removes `path`, and the tables it leaves empty.
fn remove(doc: &mut DocumentMut, path: &[String]) {
    fn remove_in(table: &mut dyn toml_edit::TableLike, path: &[String]) {
        match path {
            [] => {}
            [key] => {
                table.remove(key);
            }
            [name, rest @ ..] => {
                let emptied = match table.get_mut(name).and_then(Item::as_table_like_mut) {
                    Some(child) => {
                        remove_in(child, rest);
                        child.is_empty()
                    }
                    None => false,
                };
                if emptied {
                    table.remove(name);
                }
            }
        }
    }
    remove_in(doc.as_table_mut(), path);
}

fn to_toml(value: &Json) -> Value {
    match value {
        Json::String(text) => Value::from(text.as_str()),
        Json::Bool(flag) => Value::from(*flag),
        Json::Number(number) => match number.as_i64() {
            Some(integer) => Value::from(integer),
            None => Value::from(number.as_f64().unwrap_or_default()),
        },
        Json::Array(items) => Value::Array(items.iter().map(to_toml).collect::<Array>()),
        Json::Object(map) => {
            let mut table = InlineTable::new();
            for (key, value) in map {
                table.insert(key, to_toml(value));
            }
            Value::InlineTable(table)
        }
        Json::Null => Value::from(""),
    }
}

fn to_json(value: &Value) -> Json {
    match value {
        Value::String(text) => json!(text.value()),
        Value::Integer(integer) => json!(integer.value()),
        Value::Float(float) => json!(float.value()),
        Value::Boolean(flag) => json!(flag.value()),
        Value::Datetime(datetime) => json!(datetime.value().to_string()),
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::InlineTable(table) => Json::Object(
            table
                .iter()
                .map(|(key, value)| (key.to_owned(), to_json(value)))
                .collect(),
        ),
    }
}

fn table_to_json(table: &toml_edit::Table) -> Json {
    Json::Object(
        table
            .iter()
            .filter_map(|(key, item)| match item {
                Item::Value(value) => Some((key.to_owned(), to_json(value))),
                Item::Table(table) => Some((key.to_owned(), table_to_json(table))),
                _ => None,
            })
            .collect(),
    )
}

fn managed_to_json(keys: &[ManagedKey]) -> Json {
    json!({
        "about": "keys formwork wrote into config.toml; a refresh rewrites or removes only these",
        "keys": keys.iter().map(|key| json!({"path": key.path, "value": key.value})).collect::<Vec<_>>(),
    })
}

fn managed_from_json(json: &Json) -> Vec<ManagedKey> {
    json.get("keys")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let path = entry
                .get("path")?
                .as_array()?
                .iter()
                .map(|part| part.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?;
            Some(ManagedKey {
                path,
                value: entry.get("value")?.clone(),
            })
        })
        .collect()
}

fn read_optional(path: &Path) -> Result<Option<String>, ConfigFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(ConfigFileError::Unreadable {
            path: path.to_path_buf(),
            reason: err.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn key(path: &[&str], value: Json) -> ManagedKey {
        ManagedKey {
            path: path.iter().map(|part| (*part).to_owned()).collect(),
            value,
        }
    }

    #[test]
    fn a_second_refresh_changes_nothing_and_keeps_the_persons_keys() {
        let old = "# mine\nsandbox_mode = \"read-only\"\n\n[mcp_servers.mine]\ncommand = \"x\"\n";
        let wanted = vec![
            key(&["mcp_servers", "demo", "command"], json!("/bin/formwork")),
            key(&["mcp_servers", "demo", "args"], json!(["demo-plugin"])),
            key(
                &["mcp_servers", "demo", "default_tools_approval_mode"],
                json!("approve"),
            ),
            key(&["features", "tool_call_mcp_elicitation"], json!(false)),
        ];
        let (once, written) = refresh(old, &[], &wanted).unwrap();
        assert!(once.starts_with(old), "{once}");
        let (twice, again) = refresh(&once, &written, &wanted).unwrap();
        assert_eq!(once, twice);
        assert_eq!(written, again);
        assert!(twice.contains("[mcp_servers.demo]\ncommand = \"/bin/formwork\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"), "{twice}");
        assert!(
            twice.contains("[features]\ntool_call_mcp_elicitation = false\n"),
            "{twice}"
        );
    }

    #[test]
    fn a_persons_prompt_survives_and_formworks_own_keys_go_when_no_longer_written() {
        let wanted = vec![
            key(&["mcp_servers", "a", "command"], json!("a")),
            key(
                &["mcp_servers", "a", "default_tools_approval_mode"],
                json!("approve"),
            ),
            key(&["mcp_servers", "b", "command"], json!("b")),
        ];
        let (text, written) = refresh("", &[], &wanted).unwrap();
        // The person asks for a card on every call of a, and adds a key to b.
        let edited = text
            .replace(
                "default_tools_approval_mode = \"approve\"",
                "default_tools_approval_mode = \"prompt\"",
            )
            .replace("command = \"b\"", "command = \"b\"\nenv_vars = [\"HOME\"]");
        let fewer = vec![wanted[0].clone(), wanted[1].clone()];
        let (refreshed, kept) = refresh(&edited, &written, &fewer).unwrap();
        assert!(
            refreshed.contains("default_tools_approval_mode = \"prompt\""),
            "{refreshed}"
        );
        // Remembered as what formwork writes, so the prompt stays the person's next time too.
        assert_eq!(kept[1].value, json!("approve"));
        let (again, _) = refresh(&refreshed, &kept, &fewer).unwrap();
        assert_eq!(again, refreshed);
        // b's command was formwork's and goes; the person's key keeps the table.
        assert!(
            refreshed.contains("[mcp_servers.b]\nenv_vars = [\"HOME\"]\n"),
            "{refreshed}"
        );
        assert!(!refreshed.contains("command = \"b\""), "{refreshed}");
        // formwork's own prompt, once written, gives way when the config says otherwise.
        let own = vec![key(
            &["mcp_servers", "a", "default_tools_approval_mode"],
            json!("prompt"),
        )];
        let (text, written) = refresh("", &[], &own).unwrap();
        let (text, _) = refresh(
            &text,
            &written,
            &[key(
                &own[0].path.iter().map(String::as_str).collect::<Vec<_>>(),
                json!("approve"),
            )],
        )
        .unwrap();
        assert!(
            text.contains("default_tools_approval_mode = \"approve\""),
            "{text}"
        );
    }
}
