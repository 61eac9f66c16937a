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

use crate::config::{
    ApprovalMode, ApprovalPolicy, Config, ModelChoice, ServerConfig, Transport, WireApi,
};

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
    /// The model's provider speaks the Chat Completions API, which Codex no longer reads.
    #[error(
        "Codex does not speak wire_api = \"chat\": the model provider `{provider}` cannot run under the Codex runtime (use a provider with wire_api = \"responses\")"
    )]
    ChatProvider {
        /// The provider's id.
        provider: String,
    },
    /// Reading or writing failed.
    #[error(transparent)]
    Write(#[from] crate::config::ConfigError),
}

/// Why the text of a Codex `config.toml` cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TomlEditError {
    /// It is not TOML: the parser's message.
    #[error("{0}")]
    NotToml(String),
    /// A key formwork writes lies under something that is not a table: its dotted path.
    #[error("{0} is not a table")]
    NotATable(String),
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
struct ManagedKey {
    /// `["mcp_servers", "demo", "command"]`.
    path: Vec<String>,
    /// The value.
    value: Json,
}

/// Writes (or refreshes) `<home>/config.toml` for `config`, the model `choice` (when one is
/// named) and `formwork_exe`, which runs the built-in servers.
pub fn write(
    home: &Path,
    config: &Config,
    choice: Option<&ModelChoice>,
    formwork_exe: &Path,
) -> Result<Written, ConfigFileError> {
    if let Some(choice) = choice.filter(|choice| choice.provider.wire_api == WireApi::Chat) {
        return Err(ConfigFileError::ChatProvider {
            provider: choice.provider_id.clone(),
        });
    }
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
            reason: reason.to_string(),
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

/// The keys formwork writes for `config`, in file order. A provider of `wire_api = "chat"` is
/// left out: Codex refuses a config that holds one, used or not.
fn managed_keys(
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
        if provider.wire_api == WireApi::Chat {
            tracing::warn!(target: "formwork::codex", provider = %id, "a wire_api = \"chat\" provider is not written into Codex's config: Codex does not speak it");
            continue;
        }
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
            env_vars,
            cwd,
        } => {
            put(&at("command"), json!(command));
            if !args.is_empty() {
                put(&at("args"), json!(args));
            }
            if !env.is_empty() {
                put(&at("env"), json!(env));
            }
            if !env_vars.is_empty() {
                put(&at("env_vars"), json!(env_vars));
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
) -> Result<(String, Vec<ManagedKey>), TomlEditError> {
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|err: toml_edit::TomlError| TomlEditError::NotToml(err.message().to_owned()))?;
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
    // A server formwork no longer writes goes whole once it has nothing to run: the person's
    // keys left in it would make a table Codex refuses to read.
    for server in dropped_servers(previous, wanted) {
        let path = ["mcp_servers".to_owned(), server.clone()];
        let runnable = ["command", "url"].iter().any(|key| {
            let mut at = path.to_vec();
            at.push((*key).to_owned());
            current(&doc, &at).is_some()
        });
        if !runnable {
            remove(&mut doc, &path);
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

/// The servers `previous` wrote and `wanted` no longer writes.
fn dropped_servers(previous: &[ManagedKey], wanted: &[ManagedKey]) -> Vec<String> {
    let server_of = |key: &ManagedKey| match key.path.as_slice() {
        [table, name, ..] if table == "mcp_servers" => Some(name.clone()),
        _ => None,
    };
    let mut dropped: Vec<String> = previous
        .iter()
        .filter_map(server_of)
        .filter(|name| {
            !wanted
                .iter()
                .any(|key| server_of(key).as_ref() == Some(name))
        })
        .collect();
    dropped.dedup();
    dropped
}

/// Codex's config text with the values of every secret-bearing key (a server's `env` and
/// `http_headers`, a provider's `http_headers` and `query_params`) replaced by `"<redacted>"`,
/// for showing; the text unchanged when it is not TOML.
pub fn redacted(text: &str) -> String {
    let Ok(mut doc) = text.parse::<DocumentMut>() else {
        return text.to_owned();
    };
    for (group, keys) in [
        ("mcp_servers", &["env", "http_headers"][..]),
        ("model_providers", &["http_headers", "query_params"][..]),
    ] {
        let Some(entries) = doc.get_mut(group).and_then(Item::as_table_like_mut) else {
            continue;
        };
        for (_, entry) in entries.iter_mut() {
            let Some(entry) = entry.as_table_like_mut() else {
                continue;
            };
            for key in keys {
                let Some(secrets) = entry.get_mut(key).and_then(Item::as_table_like_mut) else {
                    continue;
                };
                for (_, value) in secrets.iter_mut() {
                    if value.is_value() {
                        *value = toml_edit::value("<redacted>");
                    }
                }
            }
        }
    }
    doc.to_string()
}

/// The approval mode Codex's config `text` gives `tool` of `server`: the tool's own
/// `approval_mode`, else the server's `default_tools_approval_mode`; and the key that says so.
pub fn tool_approval_mode(text: &str, server: &str, tool: &str) -> Option<(String, String)> {
    let doc = text.parse::<DocumentMut>().ok()?;
    let table = |path: &[&str]| {
        let path: Vec<String> = path.iter().map(|part| (*part).to_owned()).collect();
        current(&doc, &path).and_then(|value| value.as_str().map(str::to_owned))
    };
    [
        vec!["mcp_servers", server, "tools", tool, "approval_mode"],
        vec!["mcp_servers", server, "default_tools_approval_mode"],
    ]
    .into_iter()
    .find_map(|path| table(&path).map(|mode| (mode, crate::config::dotted(path.iter().copied()))))
}

/// Codex's config `text` with every server but `keep` switched off (`enabled = false`).
pub fn only_server(text: &str, keep: &str) -> Result<String, TomlEditError> {
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|err: toml_edit::TomlError| TomlEditError::NotToml(err.message().to_owned()))?;
    if let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) {
        for (name, server) in servers.iter_mut() {
            if name.get() == keep {
                continue;
            }
            if let Some(server) = server.as_table_like_mut() {
                crate::config::set_value(server, "enabled", Value::from(false));
            }
        }
    }
    Ok(doc.to_string())
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
fn set(doc: &mut DocumentMut, path: &[String], value: &Json) -> Result<(), TomlEditError> {
    let Some((key, tables)) = path.split_last() else {
        return Ok(());
    };
    let mut item = doc.as_item_mut();
    for (depth, name) in tables.iter().enumerate() {
        // `[mcp_servers]`, `[model_providers]` and a server's `[tools]` hold tables only.
        let implicit = (depth == 0 && tables.len() > 1) || (depth == 2 && name == "tools");
        item = crate::config::child_table(item, name, implicit).ok_or_else(|| {
            TomlEditError::NotATable(crate::config::dotted(
                tables[..=depth].iter().map(String::as_str),
            ))
        })?;
    }
    let table = item
        .as_table_like_mut()
        .ok_or_else(|| TomlEditError::NotATable(tables.join(".")))?;
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
    fn a_chat_provider_is_left_out_and_refused_as_the_model() {
        let config = Config::from_toml(
            "model_provider = \"local\"\nmodel = \"m\"\n\n\
             [model_providers.local]\nname = \"Local\"\nbase_url = \"http://127.0.0.1:1/v1\"\nwire_api = \"chat\"\n\n\
             [model_providers.cloud]\nname = \"Cloud\"\nbase_url = \"http://127.0.0.1:2/v1\"\n",
            None,
        )
        .unwrap();
        let home = tempfile::tempdir().unwrap();
        let exe = Path::new("/bin/formwork");
        let chosen = config.model_choice(None, None).unwrap().unwrap();
        let refused = write(home.path(), &config, Some(&chosen), exe).unwrap_err();
        assert!(
            refused.to_string().starts_with(
                "Codex does not speak wire_api = \"chat\": the model provider `local`"
            ),
            "{refused}"
        );
        let cloud = config
            .model_choice(Some("cloud"), Some("m"))
            .unwrap()
            .unwrap();
        let written = write(home.path(), &config, Some(&cloud), exe).unwrap();
        let text = std::fs::read_to_string(written.path).unwrap();
        assert!(text.contains("[model_providers.cloud]"), "{text}");
        assert!(!text.contains("local"), "{text}");
    }

    #[test]
    fn secrets_are_redacted_and_approval_modes_read_for_showing() {
        let text = "[model_providers.p]\nhttp_headers = { Authorization = \"Bearer x\" }\n\n\
                    [mcp_servers.a]\ncommand = \"a\"\nenv = { TOKEN = \"t\" }\ndefault_tools_approval_mode = \"approve\"\n\n\
                    [mcp_servers.a.tools.go]\napproval_mode = \"prompt\"\n\n\
                    [mcp_servers.b]\nurl = \"http://b\"\n\n[mcp_servers.b.http_headers]\nX-Key = \"k\"\n";
        let shown = redacted(text);
        assert!(
            shown.contains("Authorization = \"<redacted>\"")
                && shown.contains("TOKEN = \"<redacted>\"")
                && shown.contains("X-Key = \"<redacted>\""),
            "{shown}"
        );
        assert!(
            !shown.contains("Bearer") && !shown.contains("\"k\""),
            "{shown}"
        );
        assert_eq!(
            tool_approval_mode(text, "a", "go"),
            Some((
                "prompt".into(),
                "mcp_servers.a.tools.go.approval_mode".into()
            ))
        );
        assert_eq!(
            tool_approval_mode(text, "a", "other"),
            Some((
                "approve".into(),
                "mcp_servers.a.default_tools_approval_mode".into()
            ))
        );
        assert_eq!(tool_approval_mode(text, "b", "go"), None);
        let only = only_server(text, "a").unwrap();
        assert!(
            only.contains("url = \"http://b\"\nenabled = false\n"),
            "{only}"
        );
        assert!(!only.contains("command = \"a\"\nenabled"), "{only}");
    }

    #[test]
    fn text_that_cannot_take_the_keys_says_where() {
        let wanted = [key(&["mcp_servers", "docs", "url"], json!("http://docs"))];
        assert_eq!(
            refresh("mcp_servers = 1\n", &[], &wanted)
                .map_err(|err| err.to_string())
                .map(|_| ()),
            Err("mcp_servers.docs is not a table".to_owned())
        );
        assert!(matches!(
            refresh("[mcp_servers", &[], &wanted),
            Err(TomlEditError::NotToml(_))
        ));
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
        // b was formwork's and goes whole: the person's key alone would make a table Codex
        // cannot read.
        assert!(!refreshed.contains("[mcp_servers.b]"), "{refreshed}");
        assert!(!refreshed.contains("env_vars"), "{refreshed}");
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
