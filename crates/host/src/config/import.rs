//! `config import`: brings the MCP servers of another host's JSON configuration into
//! `formwork.toml`.
//!
//! Understood shapes: `{"mcpServers": {...}}` (Claude Desktop, Cursor, Windsurf, Cline),
//! `{"servers": {...}}` (VS Code's `mcp.json`) and `{"mcp": {"servers": {...}}}` (VS Code's
//! `settings.json`). An entry is either `{command, args?, env?, cwd?}` or
//! `{url | serverUrl, headers?}`, optionally with `type` and `disabled`.
//!
//! Imported servers are the person's own, not formwork's, so they get no approval mode and
//! follow the `auto` default (the tool's annotations decide). Per-host approval lists such as
//! `autoApprove` are reported as ignored rather than translated: an import never widens what
//! a plugin may do. Existing entries are never replaced.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;
use toml_edit::{Array, InlineTable, Item, Value};

use super::builtin::builtin_server;
use super::edit::{EditableFile, child_table, set_value};
use super::error::{ConfigError, Invalid};
use super::load::valid_server_name;

/// What `config import` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportReport {
    /// The JSON file read.
    pub source: PathBuf,
    /// The configuration file merged into.
    pub config: PathBuf,
    /// Whether the configuration file was written (false when nothing was added).
    pub written: bool,
    /// The servers added, in the JSON's order.
    pub added: Vec<ImportedServer>,
    /// The servers left out, with the reason.
    pub skipped: Vec<SkippedServer>,
}

/// One server added by `config import`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImportedServer {
    /// Its name.
    pub name: String,
    /// `"stdio"` or `"streamable_http"`.
    pub transport: &'static str,
    /// Fields of the JSON entry that have no formwork equivalent and were left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_fields: Vec<String>,
    /// Things to check by hand, such as `${...}` placeholders of the other host, which were
    /// copied literally because formwork does not expand them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One server left out by `config import`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedServer {
    /// Its name in the JSON.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// Merges the servers of the JSON file `source` into the configuration file `config`
/// (created when missing), keeping its comments and existing entries.
pub fn import(source: &Path, config: &Path) -> Result<ImportReport, ConfigError> {
    let text = std::fs::read_to_string(source).map_err(|err| ConfigError::Read {
        path: source.to_path_buf(),
        source: err,
    })?;
    let json: Json = serde_json::from_str(&text).map_err(|err| {
        ConfigError::Invalid(Box::new(Invalid {
            path: Some(source.to_path_buf()),
            line: Some(err.line()),
            column: Some(err.column()),
            key: String::new(),
            message: format!("not valid JSON: {}", json_message(&err)),
        }))
    })?;
    let (servers_key, servers) = find_servers(&json).ok_or_else(|| {
        ConfigError::Invalid(Box::new(Invalid {
            path: Some(source.to_path_buf()),
            line: None,
            column: None,
            key: String::new(),
            message: "expected an `mcpServers` or `servers` object (or `mcp.servers`)".into(),
        }))
    })?;
    let Some(servers) = servers.as_object() else {
        return Err(ConfigError::Invalid(Box::new(Invalid {
            path: Some(source.to_path_buf()),
            line: None,
            column: None,
            key: servers_key.into(),
            message: "expected an object of servers by name".into(),
        })));
    };

    let mut file = EditableFile::open(config)?;
    let mut added = Vec::new();
    let mut skipped = Vec::new();
    for (name, entry) in servers {
        let skip = |reason: String| SkippedServer {
            name: name.clone(),
            reason,
        };
        if builtin_server(name).is_some() {
            skipped.push(skip(
                "the name is reserved for formwork's built-in server".into(),
            ));
            continue;
        }
        if file.config.mcp_servers.contains_key(name) {
            skipped.push(skip(
                "already configured; the existing entry was kept".into(),
            ));
            continue;
        }
        if !valid_server_name(name) {
            skipped.push(skip(
                "a server name may only use letters, digits, '_' and '-'; rename it in the JSON"
                    .into(),
            ));
            continue;
        }
        let server = match convert(entry) {
            Ok(server) => server,
            Err(reason) => {
                skipped.push(skip(reason));
                continue;
            }
        };
        let table = child_table(file.doc.as_item_mut(), "mcp_servers", true)
            .and_then(|servers| child_table(servers, name, false))
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| ConfigError::Refused {
                path: config.to_path_buf(),
                message: "cannot edit `mcp_servers`: it is not a table".into(),
            })?;
        for (key, value) in server.keys {
            set_value(table, key, value);
        }
        added.push(ImportedServer {
            name: name.clone(),
            transport: server.transport,
            ignored_fields: server.ignored_fields,
            notes: server.notes,
        });
    }
    let written = file.commit()?;
    Ok(ImportReport {
        source: source.to_path_buf(),
        config: config.to_path_buf(),
        written,
        added,
        skipped,
    })
}

/// The servers object and the key it was found under.
fn find_servers(json: &Json) -> Option<(&'static str, &Json)> {
    if let Some(servers) = json.get("mcpServers") {
        return Some(("mcpServers", servers));
    }
    if let Some(servers) = json.get("servers") {
        return Some(("servers", servers));
    }
    json.get("mcp")
        .and_then(|mcp| mcp.get("servers"))
        .map(|servers| ("mcp.servers", servers))
}

/// A JSON entry turned into formwork keys, in the order they are written.
struct Converted {
    transport: &'static str,
    keys: Vec<(&'static str, Value)>,
    ignored_fields: Vec<String>,
    notes: Vec<String>,
}

const KNOWN_FIELDS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "serverUrl",
    "headers",
    "disabled",
];

fn convert(entry: &Json) -> Result<Converted, String> {
    let Some(entry) = entry.as_object() else {
        return Err("the entry is not an object".into());
    };
    let command = optional_string(entry, "command")?;
    let url = match optional_string(entry, "url")? {
        Some(url) => Some(url),
        None => optional_string(entry, "serverUrl")?,
    };
    let kind = optional_string(entry, "type")?;
    match kind.as_deref() {
        None
        | Some("stdio" | "http" | "streamable-http" | "streamable_http" | "streamableHttp") => {}
        Some("sse") => {
            return Err(
                "SSE servers are not supported; formwork speaks stdio and Streamable HTTP".into(),
            );
        }
        Some(other) => return Err(format!("unknown server type {other:?}")),
    }
    let mut keys: Vec<(&'static str, Value)> = Vec::new();
    let transport = match (command, url) {
        (Some(_), Some(_)) => return Err("the entry has both `command` and `url`".into()),
        (None, None) => return Err("the entry has neither `command` nor `url`".into()),
        (Some(command), None) => {
            if kind.as_deref().is_some_and(|kind| kind != "stdio") {
                return Err("a `command` entry must have type \"stdio\"".into());
            }
            keys.push(("command", Value::from(command)));
            if let Some(args) = entry.get("args") {
                let args = string_list(args).ok_or("`args` must be a list of strings")?;
                if !args.is_empty() {
                    keys.push(("args", Value::Array(args.into_iter().collect::<Array>())));
                }
            }
            if let Some(env) = entry.get("env") {
                let env = string_map(env).ok_or("`env` must map names to strings")?;
                if !env.is_empty() {
                    keys.push(("env", Value::InlineTable(inline_table(env))));
                }
            }
            if let Some(cwd) = optional_string(entry, "cwd")? {
                keys.push(("cwd", Value::from(cwd)));
            }
            "stdio"
        }
        (None, Some(url)) => {
            if kind.as_deref() == Some("stdio") {
                return Err("a `url` entry cannot have type \"stdio\"".into());
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("{url:?} is not an http:// or https:// URL"));
            }
            keys.push(("url", Value::from(url)));
            if let Some(headers) = entry.get("headers") {
                let headers = string_map(headers).ok_or("`headers` must map names to strings")?;
                if !headers.is_empty() {
                    keys.push(("http_headers", Value::InlineTable(inline_table(headers))));
                }
            }
            "streamable_http"
        }
    };
    match entry.get("disabled") {
        None | Some(Json::Bool(false)) => {}
        Some(Json::Bool(true)) => keys.push(("enabled", Value::from(false))),
        Some(_) => return Err("`disabled` must be true or false".into()),
    }
    let ignored_fields = entry
        .keys()
        .filter(|key| !KNOWN_FIELDS.contains(&key.as_str()))
        .cloned()
        .collect();
    let notes = placeholder_notes(&keys);
    Ok(Converted {
        transport,
        keys,
        ignored_fields,
        notes,
    })
}

/// One note per written value that holds a `${...}` placeholder.
fn placeholder_notes(keys: &[(&'static str, Value)]) -> Vec<String> {
    fn walk(path: String, value: &Value, notes: &mut Vec<String>) {
        match value {
            Value::String(text) if text.value().contains("${") => notes.push(format!(
                "`{path}` holds a ${{...}} placeholder, copied as is: formwork does not expand it"
            )),
            Value::Array(items) => {
                for (idx, item) in items.iter().enumerate() {
                    walk(format!("{path}[{idx}]"), item, notes);
                }
            }
            Value::InlineTable(table) => {
                for (key, item) in table.iter() {
                    walk(format!("{path}.{key}"), item, notes);
                }
            }
            _ => {}
        }
    }
    let mut notes = Vec::new();
    for (key, value) in keys {
        walk((*key).to_owned(), value, &mut notes);
    }
    notes
}

fn optional_string(
    entry: &serde_json::Map<String, Json>,
    key: &str,
) -> Result<Option<String>, String> {
    match entry.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn string_list(value: &Json) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

/// Strings stay strings; numbers and booleans (which some hosts accept in `env`) become their
/// text; anything else makes the whole map invalid.
fn string_map(value: &Json) -> Option<IndexMap<String, String>> {
    value
        .as_object()?
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Json::String(text) => text.clone(),
                Json::Number(number) => number.to_string(),
                Json::Bool(flag) => flag.to_string(),
                _ => return None,
            };
            Some((key.clone(), text))
        })
        .collect()
}

fn inline_table(map: IndexMap<String, String>) -> InlineTable {
    map.into_iter()
        .map(|(key, value)| (key, Value::from(value)))
        .collect()
}

/// serde_json's message without the " at line L column C" it appends; the position is
/// reported separately.
fn json_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}
