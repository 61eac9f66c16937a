//! Where the configuration comes from and how its files layer: the user config, then either the
//! file named with `--config` or a trusted project's `formwork.toml`. The rules are written
//! down in the [module documentation](super).

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::DEFAULT_CONFIG_FILE;
use super::builtin::BUILTIN_SERVERS;
use super::error::ConfigError;
use super::load::{self, FileConfig};
use super::types::{
    CodexConfig, Config, ConfigSource, Features, FormsConfig, Layer, SourceStatus, StoreConfig,
    TrustLevel,
};

/// Where a command looks for its configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigLocations {
    /// The user config; it applies when the file exists. `None` when there is no home
    /// directory to find it in.
    pub user: Option<PathBuf>,
    /// The file named with `--config`: it applies on top of the user config, and no project
    /// file is looked for.
    pub explicit: Option<PathBuf>,
    /// Where the search for a project's `formwork.toml` starts (the working directory);
    /// `None` looks for none.
    pub start: Option<PathBuf>,
}

impl ConfigLocations {
    /// The user config at [`user_config_path`], the project search from the working
    /// directory, and `explicit` (the `--config` value).
    pub fn from_env(explicit: Option<PathBuf>) -> ConfigLocations {
        ConfigLocations {
            user: user_config_path(),
            explicit,
            start: std::env::current_dir().ok(),
        }
    }
}

/// The user config: `$XDG_CONFIG_HOME/formwork/formwork.toml` when `XDG_CONFIG_HOME` is an
/// absolute path, else `~/.config/formwork/formwork.toml`; `None` without a home directory.
pub fn user_config_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            dirs::home_dir()
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".config"))
        })?;
    Some(base.join("formwork").join(DEFAULT_CONFIG_FILE))
}

/// The `formwork.toml` nearest to `start`: in `start` itself, else in the closest directory
/// above it, up to the filesystem root. The search stops at the first one found, trusted or
/// not.
pub fn find_project_file(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(DEFAULT_CONFIG_FILE))
        .find(|file| file.is_file())
}

/// Loads the layers `locations` names.
pub(crate) fn load(locations: &ConfigLocations) -> Result<Config, ConfigError> {
    let mut sources = Vec::new();
    let mut files = Vec::new();
    let mut trust = IndexMap::new();
    if let Some(user) = &locations.user {
        let status = match read_optional(user)? {
            Some(text) => {
                let file = load::parse_file(&text, Some(user))?;
                if let Some(projects) = &file.projects {
                    trust.clone_from(projects);
                }
                files.push((Layer::User, file));
                SourceStatus::Applied
            }
            None => SourceStatus::Missing,
        };
        sources.push(ConfigSource {
            layer: Layer::User,
            file: Some(user.clone()),
            project: None,
            status,
        });
    }
    if let Some(explicit) = &locations.explicit {
        let file = load::parse_file(&read(explicit)?, Some(explicit))?;
        files.push((Layer::Explicit, file));
        sources.push(explicit_source(explicit));
    } else if let Some(start) = &locations.start {
        let source = project_source(start, locations.user.as_deref(), &trust);
        if let (true, Some(path)) = (source.applied(), &source.file) {
            files.push((Layer::Project, load::parse_file(&read(path)?, Some(path))?));
        }
        sources.push(source);
    }
    Ok(assemble(sources, files))
}

/// Reads the files that made `config` again, with the same layers: the project search is not
/// redone, but the project's trust is decided again by the user config as it reads now, so a
/// trust taken back since takes the project's file out.
pub(crate) fn reload(config: &Config) -> Result<Config, ConfigError> {
    let mut sources = config.sources.clone();
    let mut files = Vec::new();
    let mut trust = IndexMap::new();
    for source in &mut sources {
        let Some(path) = source.file.clone() else {
            continue;
        };
        match (source.layer, source.status) {
            (Layer::User, SourceStatus::Applied | SourceStatus::Missing) => {
                source.status = match read_optional(&path)? {
                    Some(text) => {
                        let file = load::parse_file(&text, Some(&path))?;
                        trust = file.projects.clone().unwrap_or_default();
                        files.push((Layer::User, file));
                        SourceStatus::Applied
                    }
                    None => SourceStatus::Missing,
                };
            }
            (Layer::Explicit, _) => {
                files.push((source.layer, load::parse_file(&read(&path)?, Some(&path))?));
            }
            (
                Layer::Project,
                SourceStatus::Trusted | SourceStatus::NotTrusted | SourceStatus::MarkedUntrusted,
            ) => {
                source.status = match source.project.as_ref().and_then(|dir| trust.get(dir)) {
                    Some(Some(TrustLevel::Trusted)) => SourceStatus::Trusted,
                    Some(Some(TrustLevel::Untrusted)) => SourceStatus::MarkedUntrusted,
                    _ => SourceStatus::NotTrusted,
                };
                if source.status == SourceStatus::Trusted {
                    files.push((source.layer, load::parse_file(&read(&path)?, Some(&path))?));
                }
            }
            _ => {}
        }
    }
    Ok(assemble(sources, files))
}

/// The source entry of a file named explicitly.
pub(crate) fn explicit_source(path: &Path) -> ConfigSource {
    ConfigSource {
        layer: Layer::Explicit,
        file: Some(path.to_path_buf()),
        project: None,
        status: SourceStatus::Applied,
    }
}

/// Layers the files (lowest first) over the embedded default: a scalar an upper file sets
/// wins; an upper file's `[mcp_servers.<name>]` or `[model_providers.<id>]` table replaces a
/// lower one of the same name whole, in its place; built-in servers no file names come last.
pub(crate) fn assemble(sources: Vec<ConfigSource>, files: Vec<(Layer, FileConfig)>) -> Config {
    let mut approval_policy = None;
    let mut elicitations_auto_deny = None;
    let mut tool_call_mcp_elicitation = None;
    let mut openai_elicitation = None;
    let mut forms = FormsConfig::default();
    let mut mcp_oauth_credentials_store = None;
    let mut mcp_oauth_callback_port = None;
    let mut mcp_servers = IndexMap::new();
    let mut model = None;
    let mut model_provider = None;
    let mut model_providers = IndexMap::new();
    let mut tool_output_token_limit = None;
    let mut runtime = None;
    let mut codex = CodexConfig::default();
    let mut store = StoreConfig::default();
    let mut ignored_keys: Vec<String> = Vec::new();
    for (layer, file) in files {
        approval_policy = file.approval_policy.or(approval_policy);
        elicitations_auto_deny = file.elicitations_auto_deny.or(elicitations_auto_deny);
        tool_call_mcp_elicitation = file.tool_call_mcp_elicitation.or(tool_call_mcp_elicitation);
        openai_elicitation = file.openai_elicitation.or(openai_elicitation);
        forms.max_pending = file.max_pending_forms.unwrap_or(forms.max_pending);
        forms.sensitive_fields = file.sensitive_fields.unwrap_or(forms.sensitive_fields);
        mcp_oauth_credentials_store = file
            .mcp_oauth_credentials_store
            .or(mcp_oauth_credentials_store);
        mcp_oauth_callback_port = file.mcp_oauth_callback_port.or(mcp_oauth_callback_port);
        // `insert` keeps an existing name in its place and replaces its table.
        mcp_servers.extend(file.mcp_servers);
        model = file.model.or(model);
        model_provider = file.model_provider.or(model_provider);
        model_providers.extend(file.model_providers);
        tool_output_token_limit = file.tool_output_token_limit.or(tool_output_token_limit);
        runtime = file.runtime.or(runtime);
        codex.command = file.codex_command.or(codex.command);
        codex.home = file.codex_home.or(codex.home);
        store.url = file.store_url.or(store.url);
        store.lease = file.store_lease.or(store.lease);
        let mut ignored = file.ignored_keys;
        if layer != Layer::User && file.projects.is_some() {
            // Trust is only ever read from the user config.
            ignored.push("projects".to_owned());
        }
        for key in ignored {
            if !ignored_keys.contains(&key) {
                ignored_keys.push(key);
            }
        }
    }
    for builtin in BUILTIN_SERVERS {
        if !mcp_servers.contains_key(builtin.name) {
            mcp_servers.insert(builtin.name.to_owned(), load::builtin_default(builtin.args));
        }
    }
    Config {
        sources,
        approval_policy: approval_policy.unwrap_or_default(),
        elicitations_auto_deny: elicitations_auto_deny.unwrap_or(false),
        features: Features {
            tool_call_mcp_elicitation: tool_call_mcp_elicitation.unwrap_or(false),
            openai_elicitation: openai_elicitation.unwrap_or(false),
        },
        forms,
        mcp_servers,
        mcp_oauth_credentials_store: mcp_oauth_credentials_store.unwrap_or_default(),
        mcp_oauth_callback_port,
        model,
        model_provider,
        model_providers,
        tool_output_token_limit: tool_output_token_limit
            .unwrap_or(super::providers::DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT),
        runtime: runtime.unwrap_or_default(),
        codex,
        store,
        ignored_keys,
    }
}

/// Finds the project's file from `start` and decides by the user config's `[projects]`
/// whether it applies: only an entry for exactly the project's canonical directory counts.
/// Without a user config (`user` is `None`) no project is trusted.
fn project_source(
    start: &Path,
    user: Option<&Path>,
    trust: &IndexMap<PathBuf, Option<TrustLevel>>,
) -> ConfigSource {
    // Every ancestor of a canonical path is canonical, so the directory found is too.
    let start = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    let Some(found) = find_project_file(&start) else {
        return ConfigSource {
            layer: Layer::Project,
            file: None,
            project: Some(start),
            status: SourceStatus::NotFound,
        };
    };
    let dir = found
        .parent()
        .map_or_else(|| start.clone(), Path::to_path_buf);
    let status = match user {
        None => SourceStatus::NoUserConfig,
        Some(user) if same_file(user, &found) => SourceStatus::UserConfig,
        Some(_) => match trust.get(&dir) {
            Some(Some(TrustLevel::Trusted)) => SourceStatus::Trusted,
            Some(Some(TrustLevel::Untrusted)) => SourceStatus::MarkedUntrusted,
            _ => SourceStatus::NotTrusted,
        },
    };
    ConfigSource {
        layer: Layer::Project,
        file: Some(found),
        project: Some(dir),
        status,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The file's text, or `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}
