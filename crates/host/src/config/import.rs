//! `config import`: brings the MCP servers of another host's configuration into
//! `formwork.toml`.
//!
//! Understood shapes: `{"mcpServers": {...}}` (Claude Desktop, Cursor, Windsurf, Cline),
//! `{"servers": {...}}` (VS Code's `mcp.json`) and `{"mcp": {"servers": {...}}}` (VS Code's
//! `settings.json`). An entry is either `{command, args?, env?, cwd?}` or
//! `{url | serverUrl, headers?}`, optionally with `type` and `disabled`. A file whose name ends
//! in `.toml` is read as Codex's `config.toml`: each `[mcp_servers.<name>]` table keeps the keys
//! both hosts share: its launch and connection keys (`env_http_headers`,
//! `bearer_token_env_var`, `scopes` and `oauth_resource` among them), `enabled`, its tool lists
//! and timeouts; every other key is reported as ignored.
//!
//! Imported servers are the person's own, not formwork's, so they get no approval mode and
//! follow the `auto` default (the tool's annotations decide). Per-host approval lists such as
//! `autoApprove` are reported as ignored rather than translated: an import never widens what
//! a plugin may do. Existing entries are never replaced.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::builtin::builtin_server;
use super::edit::{EditableFile, child_table, set_value};
use super::error::{ConfigError, Invalid};
use super::load::{self, valid_server_name};

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
    /// Its name in the source file.
    pub name: String,
    /// Why it was left out.
    pub reason: String,
}

/// Merges the servers of the JSON file `source` (or of Codex's `config.toml`, for a name
/// ending in `.toml`) into the configuration file `config` (created when missing), keeping its
/// comments and existing entries.
pub fn import(source: &Path, config: &Path) -> Result<ImportReport, ConfigError> {
    let text = std::fs::read_to_string(source).map_err(|err| ConfigError::Read {
        path: source.to_path_buf(),
        source: err,
    })?;
    let (servers, format) = if source.extension().is_some_and(|ext| ext == "toml") {
        (codex_servers(source, &text)?, "TOML")
    } else {
        (json_servers(source, &text)?, "JSON")
    };

    let mut file = EditableFile::open(config)?;
    let mut added = Vec::new();
    let mut skipped = Vec::new();
    for (name, server) in servers {
        let skip = |reason: SkipReason| SkippedServer {
            name: name.clone(),
            reason: reason.to_string(),
        };
        if builtin_server(&name).is_some() {
            skipped.push(skip(SkipReason::Reserved));
            continue;
        }
        if file.config.mcp_servers.contains_key(&name) {
            skipped.push(skip(SkipReason::AlreadyConfigured));
            continue;
        }
        if !valid_server_name(&name) {
            skipped.push(skip(SkipReason::BadName { format }));
            continue;
        }
        let server = match server.and_then(|server| loads_alone(&name, server)) {
            Ok(server) => server,
            Err(reason) => {
                skipped.push(skip(reason));
                continue;
            }
        };
        let table = child_table(file.doc.as_item_mut(), "mcp_servers", true)
            .and_then(|servers| child_table(servers, &name, false))
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

/// One server of the source by name, converted or with the reason it cannot be.
type SourceServer = (String, Result<Converted, SkipReason>);

/// Why `config import` leaves a server out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SkipReason {
    #[error("the name is reserved for formwork's built-in server")]
    Reserved,
    #[error("already configured; the existing entry was kept")]
    AlreadyConfigured,
    /// The source's format, `JSON` or `TOML`.
    #[error("a server name may only use letters, digits, '_' and '-'; rename it in the {format}")]
    BadName { format: &'static str },
    #[error("the entry is not an object")]
    NotAnObject,
    #[error("the entry is not a table")]
    NotATable,
    #[error("the entry has both `command` and `url`")]
    CommandAndUrl,
    #[error("the entry has neither `command` nor `url`")]
    NoCommandNorUrl,
    #[error("`startup_timeout_ms` is not a positive number of milliseconds")]
    StartupTimeout,
    /// The key.
    #[error("`{0}` is not a value formwork can copy")]
    NotCopyable(String),
    #[error("`tools` is not a table of tools")]
    ToolsNotATable,
    /// The tool.
    #[error("`tools.{0}` is not a table")]
    ToolNotATable(String),
    /// Where and why the config would refuse it.
    #[error("it would not load: {0}")]
    WouldNotLoad(String),
    #[error("SSE servers are not supported; formwork speaks stdio and Streamable HTTP")]
    Sse,
    #[error("unknown server type {0:?}")]
    UnknownType(String),
    #[error("a `command` entry must have type \"stdio\"")]
    CommandNotStdio,
    #[error("a `url` entry cannot have type \"stdio\"")]
    UrlWithStdio,
    #[error("{0:?} is not an http:// or https:// URL")]
    NotHttpUrl(String),
    #[error("`args` must be a list of strings")]
    ArgsNotStrings,
    /// `env` or `headers`.
    #[error("`{0}` must map names to strings")]
    MapNotStrings(&'static str),
    #[error("`disabled` must be true or false")]
    DisabledNotBool,
    /// The key.
    #[error("`{0}` must be a string")]
    NotAString(String),
}

/// The servers of another host's JSON file, in its order.
fn json_servers(source: &Path, text: &str) -> Result<Vec<SourceServer>, ConfigError> {
    let json: Json = serde_json::from_str(text).map_err(|err| {
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

    Ok(servers
        .iter()
        .map(|(name, entry)| (name.clone(), convert(entry)))
        .collect())
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

/// The `[mcp_servers]` of Codex's `config.toml`, in its order.
fn codex_servers(source: &Path, text: &str) -> Result<Vec<SourceServer>, ConfigError> {
    let doc = text
        .parse::<DocumentMut>()
        .map_err(|err| ConfigError::invalid(Some(source), text, err.span(), "", err.message()))?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(Vec::new());
    };
    let Some(servers) = servers.as_table_like() else {
        return Err(ConfigError::Invalid(Box::new(Invalid {
            path: Some(source.to_path_buf()),
            line: None,
            column: None,
            key: "mcp_servers".into(),
            message: "expected a table of servers by name".into(),
        })));
    };
    Ok(servers
        .iter()
        .map(|(name, table)| {
            let server = table
                .as_table_like()
                .ok_or(SkipReason::NotATable)
                .and_then(convert_codex);
            (name.to_owned(), server)
        })
        .collect())
}

/// The keys of a Codex server table that formwork takes over as they are.
const CODEX_KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "http_headers",
    "env_http_headers",
    "bearer_token_env_var",
    "scopes",
    "oauth_resource",
    "enabled",
    "enabled_tools",
    "disabled_tools",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "default_tools_approval_mode",
];

/// A Codex server table: the shared keys copied in its order (sub-tables become inline
/// tables), the rest ignored. Approval settings come along as the person wrote them (a
/// `"prompt"` left behind would let a tool run without the card they asked for): the
/// server's `default_tools_approval_mode`, and of `tools.<tool>` its `approval_mode`.
/// `startup_timeout_ms` becomes `startup_timeout_sec` unless that is set too.
fn convert_codex(table: &dyn toml_edit::TableLike) -> Result<Converted, SkipReason> {
    let transport = match (table.contains_key("command"), table.contains_key("url")) {
        (true, true) => return Err(SkipReason::CommandAndUrl),
        (false, false) => return Err(SkipReason::NoCommandNorUrl),
        (true, false) => "stdio",
        (false, true) => "streamable_http",
    };
    let mut keys = Vec::new();
    let mut ignored_fields = Vec::new();
    for (key, item) in table.iter() {
        if key == "tools" {
            let (tools, ignored) = codex_tool_modes(item)?;
            ignored_fields.extend(ignored);
            if let Some(tools) = tools {
                keys.push(("tools", tools));
            }
            continue;
        }
        if key == "startup_timeout_ms" && !table.contains_key("startup_timeout_sec") {
            let Some(ms) = item.as_integer().filter(|ms| *ms > 0) else {
                return Err(SkipReason::StartupTimeout);
            };
            keys.push(("startup_timeout_sec", Value::from(ms as f64 / 1000.0)));
            continue;
        }
        let Some(known) = CODEX_KEYS.iter().copied().find(|known| *known == key) else {
            ignored_fields.push(key.to_owned());
            continue;
        };
        let mut value = match item {
            Item::Value(value) => value.clone(),
            Item::Table(table) => Value::InlineTable(table.clone().into_inline_table()),
            _ => return Err(SkipReason::NotCopyable(key.to_owned())),
        };
        value.decor_mut().clear();
        keys.push((known, value));
    }
    let notes = placeholder_notes(&keys);
    Ok(Converted {
        transport,
        keys,
        ignored_fields,
        notes,
    })
}

/// A Codex `tools` table as formwork writes it: each tool's `approval_mode`, as an inline table
/// (`None` when no tool has one), and the keys left out, dotted (`tools.search.timeout`).
fn codex_tool_modes(item: &Item) -> Result<(Option<Value>, Vec<String>), SkipReason> {
    let tools = item.as_table_like().ok_or(SkipReason::ToolsNotATable)?;
    let mut modes = toml_edit::InlineTable::new();
    let mut ignored = Vec::new();
    for (tool, settings) in tools.iter() {
        let settings = settings
            .as_table_like()
            .ok_or_else(|| SkipReason::ToolNotATable(tool.to_owned()))?;
        for (key, value) in settings.iter() {
            match (key, value.as_value()) {
                ("approval_mode", Some(mode)) => {
                    let mut entry = toml_edit::InlineTable::new();
                    let mut mode = mode.clone();
                    mode.decor_mut().clear();
                    entry.insert("approval_mode", mode);
                    modes.insert(tool, Value::InlineTable(entry));
                }
                _ => ignored.push(format!("tools.{tool}.{key}")),
            }
        }
    }
    Ok((
        (!modes.is_empty()).then_some(Value::InlineTable(modes)),
        ignored,
    ))
}

/// The server as it would be written, if it loads by itself; else why not, naming the key.
fn loads_alone(name: &str, server: Converted) -> Result<Converted, SkipReason> {
    let mut doc = DocumentMut::new();
    let mut table = Table::new();
    for (key, value) in &server.keys {
        table.insert(key, Item::Value(value.clone()));
    }
    let mut servers = Table::new();
    servers.set_implicit(true);
    servers.insert(name, Item::Table(table));
    doc.insert("mcp_servers", Item::Table(servers));
    match load::parse(&doc.to_string(), None) {
        Ok(_) => Ok(server),
        Err(ConfigError::Invalid(invalid)) => Err(SkipReason::WouldNotLoad(format!(
            "{}: {}",
            invalid.key, invalid.message
        ))),
        Err(other) => Err(SkipReason::WouldNotLoad(other.to_string())),
    }
}

fn convert(entry: &Json) -> Result<Converted, SkipReason> {
    let Some(entry) = entry.as_object() else {
        return Err(SkipReason::NotAnObject);
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
            return Err(SkipReason::Sse);
        }
        Some(other) => return Err(SkipReason::UnknownType(other.to_owned())),
    }
    let mut keys: Vec<(&'static str, Value)> = Vec::new();
    let transport = match (command, url) {
        (Some(_), Some(_)) => return Err(SkipReason::CommandAndUrl),
        (None, None) => return Err(SkipReason::NoCommandNorUrl),
        (Some(command), None) => {
            if kind.as_deref().is_some_and(|kind| kind != "stdio") {
                return Err(SkipReason::CommandNotStdio);
            }
            keys.push(("command", Value::from(command)));
            if let Some(args) = entry.get("args") {
                let args = string_list(args).ok_or(SkipReason::ArgsNotStrings)?;
                if !args.is_empty() {
                    keys.push(("args", Value::Array(args.into_iter().collect::<Array>())));
                }
            }
            if let Some(env) = entry.get("env") {
                let env = string_map(env).ok_or(SkipReason::MapNotStrings("env"))?;
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
                return Err(SkipReason::UrlWithStdio);
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(SkipReason::NotHttpUrl(url));
            }
            keys.push(("url", Value::from(url)));
            if let Some(headers) = entry.get("headers") {
                let headers = string_map(headers).ok_or(SkipReason::MapNotStrings("headers"))?;
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
        Some(_) => return Err(SkipReason::DisabledNotBool),
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
) -> Result<Option<String>, SkipReason> {
    match entry.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::String(value)) => Ok(Some(value.clone())),
        Some(_) => Err(SkipReason::NotAString(key.to_owned())),
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
