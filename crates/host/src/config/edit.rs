//! Edits of `formwork.toml` that keep everything they do not touch byte-for-byte: `config
//! sync` (write or refresh the built-in servers), Always allow (remember one tool's approval)
//! and `formwork trust` (trust one project, or revoke that). `config import` builds on the same
//! helpers.
//!
//! Every edit follows the same steps: read the file (a missing file counts as empty), refuse
//! to edit it when it does not load, change the `toml_edit` document, check that the result
//! still loads, and replace the file atomically only when the text changed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::builtin::BUILTIN_SERVERS;
use super::error::{ConfigError, dotted};
use super::load;
use super::types::{ApprovalMode, Config, TrustLevel};

/// The mode of a configuration file formwork creates: it may hold secrets (`http_headers`).
const NEW_FILE_MODE: u32 = 0o600;
/// The mode of a directory formwork creates to hold a configuration file.
const NEW_DIR_MODE: u32 = 0o700;
/// How many symbolic links are followed to find the file to write.
const MAX_LINKS: usize = 40;

/// What `config sync` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncReport {
    /// The file.
    pub config: PathBuf,
    /// Whether the file was written (false when it was already up to date).
    pub written: bool,
    /// One entry per built-in server.
    pub servers: Vec<SyncChange>,
}

/// What `config sync` did to one built-in server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncChange {
    /// The server name.
    pub name: String,
    /// Added, refreshed or already up to date.
    pub action: SyncAction,
    /// The server's `default_tools_approval_mode` after the sync.
    pub default_tools_approval_mode: ApprovalMode,
    /// `true` when the file's explicit mode (anything but `approve`) was kept.
    pub kept_explicit_mode: bool,
}

/// See [`SyncChange::action`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncAction {
    /// The table was created.
    Added,
    /// The table existed and some of its keys were rewritten.
    Refreshed,
    /// The table was already what sync writes.
    Unchanged,
}

/// What [`remember_always_allow`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RememberOutcome {
    /// `tools.<tool>.approval_mode = "approve"` was written.
    Written,
    /// The tool already had `approval_mode = "approve"`.
    AlreadyApproved,
    /// The tool's explicit `approval_mode = "prompt"` was kept: an explicit prompt is never
    /// loosened.
    KeptPrompt,
}

/// Writes or refreshes the table of every built-in server (see
/// [`super::BUILTIN_SERVERS`]) in the file at `path`, creating the file when it is missing.
///
/// For each built-in server: `command` becomes `formwork_exe` and `args` the server's
/// arguments (a `url` and its HTTP keys are removed, since the name is reserved);
/// `default_tools_approval_mode = "approve"` is written when the table sets no mode. An
/// explicit mode other than `approve` (`prompt`, and likewise `writes` or `auto`) is kept, so
/// a sync never loosens what the person chose. `enabled`, `tools` and every other key,
/// comment and blank line stay as they are.
pub fn sync(path: &Path, formwork_exe: &Path) -> Result<SyncReport, ConfigError> {
    let exe = formwork_exe.to_str().ok_or_else(|| ConfigError::Refused {
        path: path.to_path_buf(),
        message: format!(
            "formwork's own path {} is not valid UTF-8 and cannot be written as `command`",
            formwork_exe.display()
        ),
    })?;
    let mut file = EditableFile::open(path)?;
    let mut servers = Vec::new();
    for builtin in BUILTIN_SERVERS {
        let servers_item = child_table(file.doc.as_item_mut(), "mcp_servers", true)
            .ok_or_else(|| not_a_table(path, &["mcp_servers"]))?;
        let existed = servers_item
            .as_table_like()
            .is_some_and(|table| table.contains_key(builtin.name));
        let table = child_table(servers_item, builtin.name, false)
            .and_then(Item::as_table_like_mut)
            .ok_or_else(|| not_a_table(path, &["mcp_servers", builtin.name]))?;
        let mut changed = false;
        for key in [
            "url",
            "http_headers",
            "env_http_headers",
            "bearer_token_env_var",
            "scopes",
            "oauth_resource",
            "oauth",
            "share_session",
        ] {
            changed |= table.remove(key).is_some();
        }
        changed |= set_value(table, "command", Value::from(exe));
        let args: Array = builtin.args.iter().copied().collect();
        changed |= set_value(table, "args", Value::Array(args));

        let explicit = table
            .get("default_tools_approval_mode")
            .and_then(Item::as_str)
            .and_then(ApprovalMode::parse);
        let (mode, kept) = match explicit {
            Some(ApprovalMode::Approve) => (ApprovalMode::Approve, false),
            Some(mode) => (mode, true),
            None => {
                changed |= set_value(
                    table,
                    "default_tools_approval_mode",
                    Value::from(ApprovalMode::Approve.as_str()),
                );
                (ApprovalMode::Approve, false)
            }
        };
        let action = match (existed, changed) {
            (false, _) => SyncAction::Added,
            (true, true) => SyncAction::Refreshed,
            (true, false) => SyncAction::Unchanged,
        };
        servers.push(SyncChange {
            name: builtin.name.to_owned(),
            action,
            default_tools_approval_mode: mode,
            kept_explicit_mode: kept,
        });
    }
    let written = file.commit()?;
    Ok(SyncReport {
        config: path.to_path_buf(),
        written,
        servers,
    })
}

/// Records an "Always allow" answer: writes `approval_mode = "approve"` into
/// `[mcp_servers.<server>.tools.<tool>]` of the file at `path` (creating the file or the tables
/// when missing), keeping the rest of the file byte-for-byte.
///
/// The server must be configured in the file or be a built-in server. An explicit
/// `approval_mode = "prompt"` on the tool is kept ([`RememberOutcome::KeptPrompt`]); the
/// approval card never offers Always allow for such a tool, so this only guards against a
/// caller that skipped the policy.
pub fn remember_always_allow(
    path: &Path,
    server: &str,
    tool: &str,
) -> Result<RememberOutcome, ConfigError> {
    let mut file = EditableFile::open(path)?;
    let keys = ["mcp_servers", server, "tools", tool];
    let table = server_table(&mut file, path, server, "remember an approval for")?
        .and_then(|server| child_table(server, "tools", true))
        .and_then(|tools| child_table(tools, tool, false))
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_a_table(path, &keys))?;
    let outcome = match table
        .get("approval_mode")
        .and_then(Item::as_str)
        .and_then(ApprovalMode::parse)
    {
        Some(ApprovalMode::Prompt) => RememberOutcome::KeptPrompt,
        Some(ApprovalMode::Approve) => RememberOutcome::AlreadyApproved,
        _ => {
            set_value(
                table,
                "approval_mode",
                Value::from(ApprovalMode::Approve.as_str()),
            );
            RememberOutcome::Written
        }
    };
    file.commit()?;
    Ok(outcome)
}

/// `[mcp_servers.<server>]` of `file`, which must hold it (or `server` be a built-in server,
/// whose table is made); `None` when something in the way is not a table. `doing` says what
/// could not be done otherwise ("cannot <doing> [mcp_servers.x]: ...").
fn server_table<'a>(
    file: &'a mut EditableFile,
    path: &Path,
    server: &str,
    doing: &str,
) -> Result<Option<&'a mut Item>, ConfigError> {
    let configured = file
        .doc
        .get("mcp_servers")
        .and_then(Item::as_table_like)
        .is_some_and(|servers| servers.contains_key(server));
    if !configured && super::builtin_server(server).is_none() {
        return Err(ConfigError::Refused {
            path: path.to_path_buf(),
            message: format!(
                "cannot {doing} {}: the server is not configured in this file",
                dotted(["mcp_servers", server])
            ),
        });
    }
    Ok(child_table(file.doc.as_item_mut(), "mcp_servers", true)
        .and_then(|servers| child_table(servers, server, !configured)))
}

/// Writes `protocol_version = "<version>"` into `[mcp_servers.<server>]` of the file at
/// `path`, which must hold that table (or `server` be a built-in server, whose table it
/// creates). The rest of the file is kept.
pub fn remember_protocol_version(
    path: &Path,
    server: &str,
    version: &str,
) -> Result<(), ConfigError> {
    let mut file = EditableFile::open(path)?;
    let keys = ["mcp_servers", server];
    let table = server_table(&mut file, path, server, "set the protocol version of")?
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_a_table(path, &keys))?;
    set_value(table, "protocol_version", Value::from(version));
    file.commit()?;
    Ok(())
}

/// What [`trust_project`] or [`revoke_trust`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrustReport {
    /// The user config.
    pub config: PathBuf,
    /// The project directory.
    pub project: PathBuf,
    /// Its trust level now: `None` when the user config has no entry for it.
    pub trust_level: Option<TrustLevel>,
    /// Whether the file was written (false when it already said so).
    pub written: bool,
}

/// Records `[projects."<project>"] trust_level = "trusted"` in the user config at
/// `user_config` (created when missing), so the `formwork.toml` in `project` applies. `project`
/// must be the canonical absolute path of the directory, which is what the trust lookup
/// compares with; an entry marking it untrusted is turned into a trusted one.
pub fn trust_project(user_config: &Path, project: &Path) -> Result<TrustReport, ConfigError> {
    let key = project_key(user_config, project, "trust")?;
    let mut file = EditableFile::open(user_config)?;
    let keys = ["projects", key];
    let table = child_table(file.doc.as_item_mut(), "projects", true)
        .and_then(|projects| child_table(projects, key, false))
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| not_a_table(user_config, &keys))?;
    set_value(table, "trust_level", Value::from("trusted"));
    let written = file.commit()?;
    Ok(TrustReport {
        config: user_config.to_path_buf(),
        project: project.to_path_buf(),
        trust_level: Some(TrustLevel::Trusted),
        written,
    })
}

/// Removes the `[projects."<project>"]` entry that trusts `project` from the user config at
/// `user_config`, so the `formwork.toml` in `project` is no longer read. `project` is matched
/// exactly, as [`trust_project`] writes it. A project that is not trusted is left as it is (an
/// entry marking it untrusted stays, and a missing user config is not created): the report
/// then says `written: false` and the trust level found.
pub fn revoke_trust(user_config: &Path, project: &Path) -> Result<TrustReport, ConfigError> {
    let key = project_key(user_config, project, "revoke trust in")?;
    let mut file = EditableFile::open(user_config)?;
    let projects = file
        .doc
        .get_mut("projects")
        .and_then(Item::as_table_like_mut);
    let trust_level = match projects
        .as_ref()
        .and_then(|projects| projects.get(key))
        .and_then(|entry| entry.get("trust_level"))
        .and_then(Item::as_str)
    {
        Some("trusted") => Some(TrustLevel::Trusted),
        Some("untrusted") => Some(TrustLevel::Untrusted),
        _ => None,
    };
    if let (Some(TrustLevel::Trusted), Some(projects)) = (trust_level, projects) {
        // A project table holds nothing but `trust_level`, so the whole entry goes.
        projects.remove(key);
    }
    let written = file.commit()?;
    Ok(TrustReport {
        config: user_config.to_path_buf(),
        project: project.to_path_buf(),
        trust_level: if written { None } else { trust_level },
        written,
    })
}

/// The `[projects]` key of `project`: its path, which must be absolute and UTF-8.
fn project_key<'a>(
    user_config: &Path,
    project: &'a Path,
    action: &str,
) -> Result<&'a str, ConfigError> {
    project
        .to_str()
        .filter(|_| project.is_absolute())
        .ok_or_else(|| ConfigError::Refused {
            path: user_config.to_path_buf(),
            message: format!(
                "cannot {action} {}: a project is named by an absolute UTF-8 path",
                project.display()
            ),
        })
}

/// A configuration file opened for editing.
pub(crate) struct EditableFile {
    pub(crate) path: PathBuf,
    pub(crate) original: String,
    /// The file as loaded before any edit.
    pub(crate) config: Config,
    pub(crate) doc: DocumentMut,
}

impl EditableFile {
    /// Reads the file (missing counts as empty) and refuses one that does not load.
    pub(crate) fn open(path: &Path) -> Result<EditableFile, ConfigError> {
        let original = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let config = load::parse(&original, Some(path))?;
        let doc = original.parse::<DocumentMut>().map_err(|err| {
            ConfigError::invalid(Some(path), &original, err.span(), "", err.message())
        })?;
        Ok(EditableFile {
            path: path.to_path_buf(),
            original,
            config,
            doc,
        })
    }

    /// Writes the document back when its text changed; returns whether it did. The new text
    /// must load, so an edit can never leave a broken file behind.
    pub(crate) fn commit(self) -> Result<bool, ConfigError> {
        let text = self.doc.to_string();
        if text == self.original {
            return Ok(false);
        }
        if let Err(err) = load::parse(&text, Some(&self.path)) {
            return Err(ConfigError::Refused {
                path: self.path,
                message: format!("the edited file would not load, so it was not written: {err}"),
            });
        }
        write_atomically(&self.path, &text)?;
        Ok(true)
    }
}

/// Replaces the file's text so that a reader sees the old file or the new one, never half of
/// either, and a crash leaves one of the two on disk.
///
/// The file written is the one `path` finally names: a symbolic link is followed and its
/// target replaced, the link itself kept. The text goes into a temporary file created
/// exclusively (`O_EXCL`, so nothing already there is followed or overwritten) in the real
/// file's directory with the real file's mode (`0600` for a new file), is fsynced and renamed
/// over the file; then the directory is fsynced. Missing directories are created `0700`.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), ConfigError> {
    let write_error = |source| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let target = real_path(path).map_err(write_error)?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(NEW_DIR_MODE)
        .create(&dir)
        .map_err(write_error)?;
    let mode = match std::fs::metadata(&target) {
        Ok(metadata) => metadata.permissions().mode() & 0o7777,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => NEW_FILE_MODE,
        Err(err) => return Err(write_error(err)),
    };
    let name = target
        .file_name()
        .map_or_else(|| "formwork.toml".into(), |name| name.to_string_lossy());
    let (temp_path, mut temp) = create_temp(&dir, &name, mode).map_err(write_error)?;
    let filled = fill(&mut temp, text, mode);
    drop(temp);
    if let Err(err) = filled.and_then(|()| std::fs::rename(&temp_path, &target)) {
        let _ = std::fs::remove_file(&temp_path);
        return Err(write_error(err));
    }
    File::open(&dir)
        .and_then(|dir| dir.sync_all())
        .map_err(write_error)
}

/// The file `path` finally names: symbolic links followed, a relative one against the
/// directory holding it. A path that does not exist (or a link to nothing) names itself.
fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(current),
            Err(err) => return Err(err),
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// A new file `.<name>.<pid>[.<n>].tmp` in `dir`, created exclusively with `mode`; a name
/// that is taken (by anything, a link included) is passed over for the next.
fn create_temp(dir: &Path, name: &str, mode: u32) -> std::io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut attempt = 0_u32;
    loop {
        let temp = if attempt == 0 {
            dir.join(format!(".{name}.{pid}.tmp"))
        } else {
            dir.join(format!(".{name}.{pid}.{attempt}.tmp"))
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Writes the text and sets the exact mode (the one `open` used was narrowed by the umask).
fn fill(file: &mut File, text: &str, mode: u32) -> std::io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The child table `key` of a table item, created when missing: a header table (`implicit`
/// when it only holds other tables, so no empty `[a]` header is written) under a header
/// table, an inline table under an inline table. `None` when `parent` is not a table.
pub(crate) fn child_table<'a>(
    parent: &'a mut Item,
    key: &str,
    implicit: bool,
) -> Option<&'a mut Item> {
    let inline = matches!(parent, Item::Value(Value::InlineTable(_)));
    let table = parent.as_table_like_mut()?;
    if !table.contains_key(key) {
        let item = if inline {
            Item::Value(Value::InlineTable(InlineTable::new()))
        } else {
            let mut new = Table::new();
            new.set_implicit(implicit);
            Item::Table(new)
        };
        table.insert(key, item);
    }
    table.get_mut(key)
}

/// The error for a table that the loader accepted but the editor cannot reach; it means a
/// shape formwork does not know how to edit.
fn not_a_table(path: &Path, keys: &[&str]) -> ConfigError {
    ConfigError::Refused {
        path: path.to_path_buf(),
        message: format!(
            "cannot edit {}: it is not a table",
            dotted(keys.iter().copied())
        ),
    }
}

/// Sets `key` to `value`, keeping the key's formatting and the old value's surrounding
/// whitespace and comment. Returns whether anything changed.
pub(crate) fn set_value(table: &mut dyn toml_edit::TableLike, key: &str, mut value: Value) -> bool {
    match table.get_mut(key) {
        Some(Item::Value(old)) => {
            if same_value(old, &value) {
                return false;
            }
            *value.decor_mut() = old.decor().clone();
            *old = value;
            true
        }
        Some(item) => {
            *item = Item::Value(value);
            true
        }
        None => {
            table.insert(key, Item::Value(value));
            true
        }
    }
}

fn same_value(old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::String(old), Value::String(new)) => old.value() == new.value(),
        (Value::Array(old), Value::Array(new)) => {
            old.len() == new.len() && old.iter().zip(new.iter()).all(|(a, b)| same_value(a, b))
        }
        (Value::Boolean(old), Value::Boolean(new)) => old.value() == new.value(),
        _ => false,
    }
}
