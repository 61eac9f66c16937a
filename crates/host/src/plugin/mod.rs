//! A connection to one plugin: the MCP handshake and the host's own requests (`mod.rs`), the
//! pausable request clocks (`clocks.rs`), the read loop that dispatches what the plugin sends
//! (`dispatch.rs`), `elicitation/create` (`elicitation.rs`), the hook through which an
//! observer such as the doctor watches the plugin's requests (`observe.rs`), and the request a
//! sign-in from scratch starts from (`sign_in.rs`).

mod clocks;
mod dispatch;
mod elicitation;
mod era;
mod observe;
mod rounds;
mod sign_in;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use futures::future::Either;
use rmcp::model::ProtocolVersion;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::HostError;
use crate::jsonrpc::{self, RawId, RpcError};
use crate::responder::FormResponder;
use crate::transport::{self, Sent, Transport};

pub(crate) use clocks::CountedAgainst;
use clocks::{FormClocks, RequestClock, later};
pub use era::{Era, MODERN_VERSION, PUSH_VERSION, push_fix, push_refusal, push_refusal_in_result};
pub use observe::{RequestObserver, ServedRequest};
pub use rounds::{InputRound, MAX_ROUNDS, Resume, RoundObserver};
pub use sign_in::sign_in_probe;

/// The protocol version formwork asks for in `initialize`, unless the config names another.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::LATEST_WITH_INITIALIZE;

/// How long opening a connection may take, `server/discover` and `initialize` together (a
/// plugin started by `npx` may download first).
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(120);

/// The most pages of `tools/list` read for one list.
pub const MAX_TOOL_PAGES: usize = 100;

/// The most bytes of `tools/list` results read for one list, all pages together.
pub const MAX_TOOL_LIST_BYTES: usize = 16 * 1024 * 1024;

/// Where a plugin lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginTarget {
    /// A shell command, spawned with `sh -c`, spoken to over stdio. The process gets a minimal
    /// environment (see [`PluginEnv`]), never formwork's whole one.
    Command {
        /// The `sh -c` command line.
        line: String,
        /// What the process gets beyond the minimal set.
        env: PluginEnv,
    },
    /// A Streamable HTTP endpoint.
    Url(String),
}

impl PluginTarget {
    /// A command line with nothing beyond the minimal environment.
    pub fn command(line: impl Into<String>) -> PluginTarget {
        PluginTarget::Command {
            line: line.into(),
            env: PluginEnv::default(),
        }
    }
}

/// The variables of formwork's environment every stdio plugin gets, when set: what a program
/// needs to run as the person (the set Codex passes).
pub const BASE_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    #[cfg(target_os = "macos")]
    "__CF_USER_TEXT_ENCODING",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
];

/// The environment of a stdio plugin beyond [`BASE_ENV`]. Nothing else of formwork's
/// environment reaches a plugin: not a model provider's key, not another server's token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginEnv {
    /// Variables set to these values (the server's `env` table).
    pub set: Vec<(String, String)>,
    /// Variables passed through from formwork's environment when set there (`env_vars`);
    /// read when the process starts.
    pub pass: Vec<String>,
}

impl PluginEnv {
    /// The whole environment of a plugin started now: [`BASE_ENV`] and `pass` as formwork has
    /// them, then `set`, which wins.
    fn resolve(&self) -> Vec<(String, std::ffi::OsString)> {
        let mut variables: Vec<(String, std::ffi::OsString)> = Vec::new();
        let inherited = BASE_ENV
            .iter()
            .copied()
            .chain(self.pass.iter().map(String::as_str));
        for name in inherited {
            if let Some(value) = std::env::var_os(name)
                && !variables.iter().any(|(known, _)| known == name)
            {
                variables.push((name.to_owned(), value));
            }
        }
        for (name, value) in &self.set {
            variables.retain(|(known, _)| known != name);
            variables.push((name.clone(), value.into()));
        }
        variables
    }

    /// The names of the variables a plugin started now would receive, sorted.
    pub fn names_now(&self) -> Vec<String> {
        let mut names: Vec<String> = self.resolve().into_iter().map(|(name, _)| name).collect();
        names.sort();
        names
    }
}

impl std::fmt::Display for PluginTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginTarget::Command { line, .. } => write!(f, "`{line}`"),
            PluginTarget::Url(url) => f.write_str(url),
        }
    }
}

/// How to connect.
pub struct ConnectOptions {
    /// The plugin's name in logs and prompts.
    pub name: String,
    /// Who answers the plugin's forms.
    pub responder: Arc<dyn FormResponder>,
    /// How long a request may run. The clock stops while a form of this plugin is open.
    pub request_timeout: Duration,
    /// Pass the plugin's stderr through to ours (stdio only).
    pub inherit_stderr: bool,
    /// `clientInfo.name` and `clientInfo.version` sent in `initialize`.
    pub client_info: (String, String),
    /// Told of every request the plugin sends, with formwork's answer (`formwork doctor`).
    pub on_request: Option<RequestObserver>,
    /// Headers for every HTTP request (`http_headers`, bearer token); ignored on stdio.
    pub http_headers: Vec<(String, String)>,
    /// Signs requests in when an HTTP server asks for authorization (OAuth); `None` leaves a
    /// 401 as the request's failure. Ignored on stdio.
    pub auth: Option<Arc<crate::auth::Authorizer>>,
    /// The protocol version to speak (`protocol_version`); by default (`None`) 2026-07-28
    /// when the plugin offers it in `server/discover`, else the `initialize` handshake.
    pub protocol: Option<ProtocolVersion>,
    /// The extensions formwork speaks on this connection: what it declares
    /// ([`client_capabilities`]) and which request shapes it accepts.
    pub extensions: ClientExtensions,
}

/// The extensions of MCP formwork may speak, each off unless the config turns it on
/// (`[features]`; the connection knows no config, its callers fill this in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientExtensions {
    /// `features.openai_elicitation`: OpenAI's form extension (`openai/elicitation`).
    pub openai_elicitation: bool,
    /// MCP Apps (`io.modelcontextprotocol/ui`): declared by a host that shows app documents
    /// (the workbench's sessions and palette), never by the terminal commands.
    pub mcp_apps: bool,
}

impl ConnectOptions {
    /// Options with formwork's defaults: a 60 s request timeout, stderr passed through.
    pub fn new(name: impl Into<String>, responder: Arc<dyn FormResponder>) -> Self {
        ConnectOptions {
            name: name.into(),
            responder,
            request_timeout: Duration::from_secs(60),
            inherit_stderr: true,
            client_info: ("formwork".to_owned(), env!("CARGO_PKG_VERSION").to_owned()),
            on_request: None,
            http_headers: Vec::new(),
            auth: None,
            protocol: None,
            extensions: ClientExtensions::default(),
        }
    }
}

/// The client capabilities formwork declares, in `initialize` or in every 2026-07-28 request's
/// `_meta`: form and URL elicitation; with `features.openai_elicitation`, OpenAI's form
/// extension (`extensions["openai/elicitation"] = {"form": {}}`); with `mcp_apps`, MCP Apps
/// (`extensions["io.modelcontextprotocol/ui"] = {"mimeTypes": ["text/html;profile=mcp-app"]}`).
/// No sampling and no roots: a
/// plugin that asks for them in an `input_required` result has its call fail (see `rounds.rs`).
/// The one place they are built.
pub fn client_capabilities(extensions: &ClientExtensions) -> Value {
    let mut capabilities = json!({"elicitation": {"form": {}, "url": {}}});
    let mut declared = serde_json::Map::new();
    if extensions.openai_elicitation {
        declared.insert(OPENAI_ELICITATION.to_owned(), json!({"form": {}}));
    }
    if extensions.mcp_apps {
        declared.insert(
            crate::apps::UI_EXTENSION.to_owned(),
            json!({"mimeTypes": [crate::apps::APP_MIME]}),
        );
    }
    if !declared.is_empty() {
        capabilities["extensions"] = Value::Object(declared);
    }
    capabilities
}

/// The id of OpenAI's form extension, as declared in `capabilities.extensions`.
pub const OPENAI_ELICITATION: &str = "openai/elicitation";

/// The extension's own request method, a compatibility shape of `elicitation/create`.
pub const OPENAI_ELICITATION_METHOD: &str = "openai/elicitation/create";

/// What the plugin said about itself in the handshake.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The era that version belongs to.
    pub era: Era,
    /// Why the connection speaks that era, in words (e.g. "`server/discover` answered -32601
    /// Method not found").
    pub era_reason: String,
    /// The whole `initialize` result (the `server/discover` result in the modern era), the
    /// JSON text as the plugin sent it (kept as text: a connection per session holds it all
    /// its life).
    pub initialize_result: Box<RawValue>,
}

/// The part of the `initialize` result the connection reads itself.
#[derive(serde::Deserialize)]
struct Handshake {
    #[serde(rename = "protocolVersion", default)]
    protocol_version: Option<String>,
}

impl ServerInfo {
    /// The `initialize` result as a JSON value.
    pub fn initialize_result_value(&self) -> Value {
        // The text was read as JSON when it arrived.
        serde_json::from_str(self.initialize_result.get()).unwrap_or(Value::Null)
    }
}

/// Opens the conversation: `server/discover` first (unless the config names a handshake
/// version), then `initialize` for a plugin that does not offer 2026-07-28.
async fn open(
    shared: &Shared,
    choice: Option<&ProtocolVersion>,
    client_info: &Value,
) -> Result<ServerInfo, HostError> {
    let opened = Instant::now();
    // Opening takes at most `INITIALIZE_TIMEOUT` in all, every request included.
    let left = || INITIALIZE_TIMEOUT.saturating_sub(opened.elapsed());
    let capabilities = client_capabilities(&shared.extensions);
    let envelope = era::envelope(&capabilities, client_info);
    let discover = |timeout| {
        let params = era::with_envelope(None, &envelope);
        shared.request_raw_within(shared.next_id(), "server/discover", Some(params), timeout)
    };
    let modern = |result: Box<RawValue>, era_reason: String| {
        let _ = shared.envelope.set(envelope.clone());
        ServerInfo {
            protocol_version: MODERN_VERSION.to_owned(),
            era: Era::Modern,
            era_reason,
            initialize_result: result,
        }
    };
    let mut discover_timed_out = false;
    let reason = if era::discovers(choice) {
        let reason = match discover(era::DISCOVER_TIMEOUT).await {
            Ok(result) => match era::judge_discover(result.get()) {
                Ok(reason) => return Ok(modern(result, reason)),
                Err(reason) => reason.to_string(),
            },
            Err(HostError::Rpc { error, .. }) => {
                if error.code == jsonrpc::code::UNSUPPORTED_PROTOCOL_VERSION
                    && let Some(supported) = supported_versions(error.data.as_ref())
                    && !supported
                        .iter()
                        .any(|version| handshake_version_known(version))
                {
                    return Err(HostError::UnsupportedVersion(format!(
                        "the plugin supports only {}",
                        supported.join(", ")
                    )));
                }
                format!(
                    "`server/discover` answered {} {}",
                    error.code,
                    crate::budget::clipped(&error.message)
                )
            }
            Err(HostError::Timeout { .. }) => {
                discover_timed_out = true;
                format!(
                    "`server/discover` got no answer within {} s",
                    era::DISCOVER_TIMEOUT.as_secs()
                )
            }
            Err(other) => return Err(other),
        };
        if choice.is_some() {
            return Err(HostError::UnsupportedVersion(format!(
                "{MODERN_VERSION} was asked for, but {reason}"
            )));
        }
        reason
    } else {
        format!(
            "{} was asked for (`protocol_version` or `--protocol`)",
            era::handshake_version(choice)
        )
    };

    let params = json!({
        "protocolVersion": era::handshake_version(choice),
        "capabilities": capabilities,
        "clientInfo": client_info,
    });
    let result = match shared
        .request_raw_within(shared.next_id(), "initialize", Some(params), left())
        .await
    {
        // A plugin that answered the probe after it gave up now speaks 2026-07-28 only.
        Err(HostError::Rpc { error, .. })
            if discover_timed_out
                && error.code == jsonrpc::code::UNSUPPORTED_PROTOCOL_VERSION
                && supported_versions(error.data.as_ref())
                    .is_some_and(|supported| supported.iter().any(|v| v == MODERN_VERSION)) =>
        {
            let result = discover(left()).await?;
            let reason = era::judge_discover(result.get())
                .map_err(|reason| HostError::UnsupportedVersion(reason.to_string()))?;
            return Ok(modern(
                result,
                format!("{reason} (after its first answer came too late)"),
            ));
        }
        other => other?,
    };
    let protocol_version = serde_json::from_str::<Handshake>(result.get())
        .ok()
        .and_then(|handshake| handshake.protocol_version)
        .unwrap_or_default();
    if !handshake_version_known(&protocol_version) {
        return Err(HostError::UnsupportedVersion(protocol_version));
    }
    Ok(ServerInfo {
        protocol_version,
        era: Era::Handshake,
        era_reason: reason,
        initialize_result: result,
    })
}

/// Whether `version` is one formwork can speak with `initialize`.
fn handshake_version_known(version: &str) -> bool {
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known.has_initialize() && known.as_str() == version)
}

/// `data.supported` of an unsupported-version error (-32022).
fn supported_versions(data: Option<&Value>) -> Option<Vec<String>> {
    let supported = data?.get("supported")?.as_array()?;
    Some(
        supported
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

/// A live connection to a plugin.
pub struct Plugin {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    server: ServerInfo,
    /// A process formwork started (stdio), not a server reached over HTTP.
    local: bool,
}

/// Where the answer to one of the host's requests is delivered (the error boxed: the slot is
/// held for as long as a call waits, and errors are rare).
type ResponseSlot = oneshot::Sender<Result<Box<RawValue>, Box<RpcError>>>;

/// State shared between the connection handle and the tasks that serve it.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) responder: Arc<dyn FormResponder>,
    outgoing: transport::Outgoing,
    pending: Mutex<HashMap<u64, ResponseSlot>>,
    next_id: AtomicU64,
    /// Cancelled when the transport is gone; every open form is a child of it.
    pub(crate) closed: CancellationToken,
    closed_reason: Mutex<Option<String>>,
    /// The open forms and the time they have been open; request timeouts do not count that time.
    forms: Mutex<FormClocks>,
    /// Requests from the plugin being handled, by id, so `notifications/cancelled` can end them.
    pub(crate) in_flight: Mutex<HashMap<RawId, CancellationToken>>,
    /// URL-mode flows waiting for `notifications/elicitation/complete`, by elicitation id.
    pub(crate) url_flows: Mutex<HashMap<String, watch::Sender<bool>>>,
    request_timeout: Duration,
    on_request: Option<RequestObserver>,
    /// The extensions this connection declared, and so speaks: OpenAI's form shapes are
    /// accepted only with `openai_elicitation`.
    pub(crate) extensions: ClientExtensions,
    /// How much more this plugin may make the host log.
    log_budget: Mutex<crate::budget::LogBudget>,
    /// The `_meta` envelope every request carries, once the connection speaks 2026-07-28.
    envelope: OnceLock<serde_json::Map<String, Value>>,
    /// How often the plugin said its tools or its resources changed
    /// (`notifications/{tools,resources}/list_changed`): what was listed before is stale.
    pub(crate) changes: ListChanges,
    /// The last `tools/list`, and the count of tool changes it was listed at.
    tools: Mutex<Option<(u64, Arc<Vec<Value>>)>>,
}

/// Counts of the plugin's `list_changed` notifications.
#[derive(Default)]
pub(crate) struct ListChanges {
    pub(crate) tools: AtomicU64,
    pub(crate) resources: AtomicU64,
}

impl Plugin {
    /// Starts or reaches the plugin and performs the `initialize` handshake.
    pub async fn connect(
        target: &PluginTarget,
        mut options: ConnectOptions,
    ) -> Result<Plugin, HostError> {
        let extensions = options.extensions;
        let negotiated = Arc::new(OnceLock::new());
        let Transport {
            outgoing,
            incoming,
            mut tasks,
        } = match target {
            PluginTarget::Command { line, env } => transport::stdio::spawn(
                line,
                transport::stdio::ChildEnv::Only(env.resolve()),
                options.inherit_stderr,
            )?,
            PluginTarget::Url(url) => transport::http::connect(
                url,
                Arc::clone(&negotiated),
                std::mem::take(&mut options.http_headers),
                options.auth.clone(),
            )?,
        };
        let shared = Arc::new(Shared {
            name: options.name,
            responder: options.responder,
            outgoing,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            closed: CancellationToken::new(),
            closed_reason: Mutex::new(None),
            forms: Mutex::new(FormClocks::default()),
            in_flight: Mutex::new(HashMap::new()),
            url_flows: Mutex::new(HashMap::new()),
            request_timeout: options.request_timeout,
            on_request: options.on_request,
            extensions,
            log_budget: Mutex::new(crate::budget::LogBudget::new(Instant::now())),
            envelope: OnceLock::new(),
            changes: ListChanges::default(),
            tools: Mutex::new(None),
        });
        if let Some(auth) = &options.auth {
            // A person signing in is not the plugin being slow: the connection's clocks stop.
            let shared = Arc::downgrade(&shared);
            auth.on_waiting_for_person(move |waiting| {
                shared.upgrade().is_some_and(|shared| {
                    shared.signing_in(waiting);
                    true
                })
            });
        }
        tasks.push(tokio::spawn(dispatch::read_loop(
            Arc::clone(&shared),
            incoming,
        )));

        let (client_name, client_version) = options.client_info;
        let client_info = json!({"name": client_name, "version": client_version});
        let server = open(&shared, options.protocol.as_ref(), &client_info)
            .await
            .map_err(|err| match err {
                HostError::PluginGone { reason, .. } => HostError::Connect {
                    target: target.to_string(),
                    reason,
                },
                other => other,
            })?;
        if server.era == Era::Handshake {
            let _ = negotiated.set(server.protocol_version.clone());
            shared.write(
                jsonrpc::notification("notifications/initialized", None),
                Sent::Initialized,
            );
        }
        tracing::info!(
            target: "formwork::plugin",
            plugin = %shared.name,
            protocol_version = %server.protocol_version,
            era = %server.era_reason,
            "plugin connected"
        );
        Ok(Plugin {
            shared,
            tasks,
            server,
            local: matches!(target, PluginTarget::Command { .. }),
        })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Whether the plugin is a process formwork started (stdio) rather than a server reached
    /// over HTTP.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// What the plugin said in the handshake.
    pub fn server_info(&self) -> &ServerInfo {
        &self.server
    }

    /// A fresh request id, taken now so that a call can be registered under it before it is
    /// sent with [`Plugin::call_tool_with_id`] (forms are routed by it: see
    /// [`FormPrompt::call_request`](crate::FormPrompt::call_request)).
    pub fn reserve_request_id(&self) -> u64 {
        self.shared.next_id()
    }

    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.is_cancelled()
    }

    /// All tools, every page of `tools/list` merged, each exactly as the plugin sent it. A cursor
    /// seen before ends the list; more than [`MAX_TOOL_PAGES`] pages or [`MAX_TOOL_LIST_BYTES`]
    /// in all is an error.
    pub async fn list_tools(&self) -> Result<Vec<Value>, HostError> {
        let too_long = |reason: String| HostError::InvalidResponse {
            method: "tools/list".to_owned(),
            reason,
        };
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        let mut bytes = 0;
        for _ in 0..MAX_TOOL_PAGES {
            let params = cursor.as_ref().map(|cursor| json!({"cursor": cursor}));
            let raw = self
                .shared
                .request_raw(self.shared.next_id(), "tools/list", params)
                .await?;
            bytes += raw.get().len();
            if bytes > MAX_TOOL_LIST_BYTES {
                return Err(too_long(format!(
                    "the tool list is longer than {MAX_TOOL_LIST_BYTES} bytes"
                )));
            }
            let mut page: Value =
                serde_json::from_str(raw.get()).map_err(|err| too_long(err.to_string()))?;
            match page.get_mut("tools").map(Value::take) {
                Some(Value::Array(page_tools)) => tools.extend(page_tools),
                _ => return Err(too_long("the result has no `tools` array".to_owned())),
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if seen.insert(next.to_owned()) => cursor = Some(next.to_owned()),
                _ => return Ok(tools),
            }
        }
        Err(too_long(format!(
            "the tool list goes on for more than {MAX_TOOL_PAGES} pages"
        )))
    }

    /// [`Plugin::list_tools`], listed again only after the plugin said its tools changed
    /// (`notifications/tools/list_changed`).
    pub async fn tools(&self) -> Result<Arc<Vec<Value>>, HostError> {
        let changes = self.shared.changes.tools.load(Ordering::Acquire);
        if let Ok(cached) = self.shared.tools.lock()
            && let Some((listed_at, tools)) = cached.as_ref()
            && *listed_at == changes
        {
            return Ok(Arc::clone(tools));
        }
        let tools = Arc::new(self.list_tools().await?);
        if let Ok(mut cached) = self.shared.tools.lock() {
            *cached = Some((changes, Arc::clone(&tools)));
        }
        Ok(tools)
    }

    /// The tool's entry in `tools/list` (annotations, title, description, `_meta`), or `null`
    /// when the plugin does not list it.
    pub async fn listed_tool(&self, tool: &str) -> Result<Value, HostError> {
        Ok(self
            .tools()
            .await?
            .iter()
            .find(|listed| listed.get("name").and_then(Value::as_str) == Some(tool))
            .cloned()
            .unwrap_or(Value::Null))
    }

    /// How many times the plugin has said its resources changed
    /// (`notifications/resources/list_changed`): a resource read at another count may be stale.
    pub fn resource_changes(&self) -> u64 {
        self.shared.changes.resources.load(Ordering::Acquire)
    }

    /// Calls a tool and returns its `CallToolResult` exactly as the plugin sent it.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, HostError> {
        self.call_tool_with_id(self.reserve_request_id(), name, arguments)
            .await
    }

    /// [`Plugin::call_tool`] under an id from [`Plugin::reserve_request_id`].
    pub async fn call_tool_with_id(
        &self,
        id: u64,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, HostError> {
        self.call_tool_rounds(id, name, arguments, &|_| {}).await
    }

    /// [`Plugin::call_tool_with_id`], telling `on_round` of each `input_required` round
    /// (2026-07-28) before its forms are shown. Forms of every round carry `id` as their
    /// [`FormPrompt::call_request`](crate::FormPrompt::call_request), though each retry is
    /// sent under a new id.
    ///
    /// Not an `async fn`, nor are the layers under it: a call waits here as long as a person
    /// takes, and each layer would keep its own copy of what it passed down.
    pub fn call_tool_rounds(
        &self,
        id: u64,
        name: &str,
        arguments: Option<Value>,
        on_round: rounds::RoundObserver<'_>,
    ) -> impl Future<Output = Result<Value, HostError>> + Send {
        let mut params = serde_json::Map::new();
        params.insert("name".into(), name.into());
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), arguments);
        }
        self.request_rounds(id, "tools/call", Value::Object(params), on_round)
            .map(|result| match result {
                Ok(result) if !result.is_object() => Err(HostError::InvalidResponse {
                    method: "tools/call".to_owned(),
                    reason: "the result is not an object".to_owned(),
                }),
                other => other,
            })
    }

    /// Carries on a 2026-07-28 `tools/call` another replica began, from the retry of the round
    /// it had reached (`resume`), under `id`; later rounds are served as in
    /// [`Plugin::call_tool_rounds`].
    pub async fn resume_tool_rounds(
        &self,
        id: u64,
        name: &str,
        arguments: Option<Value>,
        resume: Resume,
        on_round: rounds::RoundObserver<'_>,
    ) -> Result<Value, HostError> {
        if self.server.era != Era::Modern {
            return Err(HostError::InvalidResponse {
                method: "tools/call".to_owned(),
                reason:
                    "the call began on 2026-07-28, but this connection speaks an older protocol"
                        .to_owned(),
            });
        }
        let mut params = serde_json::Map::new();
        params.insert("name".into(), name.into());
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), arguments);
        }
        let params = Value::Object(params);
        rounds::drive(
            &self.shared,
            id,
            "tools/call",
            params,
            on_round,
            Some(resume),
        )
        .await
    }

    /// Sends any request; the request timeout pauses while a form is open. `tools/call`,
    /// `prompts/get` and `resources/read` on a 2026-07-28 connection have their
    /// `input_required` rounds served.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, HostError> {
        let id = self.shared.next_id();
        match params {
            Some(params) if rounds::may_ask(method) => {
                self.request_rounds(id, method, params, &|_| {}).await
            }
            params => self.shared.request_with_id(id, method, params).await,
        }
    }

    fn request_rounds(
        &self,
        id: u64,
        method: &str,
        params: Value,
        on_round: rounds::RoundObserver<'_>,
    ) -> impl Future<Output = Result<Value, HostError>> + Send {
        if self.server.era == Era::Modern {
            // Boxed: the rounds' state would otherwise be held by every call, of either era.
            Either::Left(Box::pin(rounds::drive(
                &self.shared,
                id,
                method,
                params,
                on_round,
                None,
            )))
        } else {
            Either::Right(self.shared.request_with_id(id, method, Some(params)))
        }
    }

    /// Closes the connection: stdin is closed (or the HTTP session deleted) and the plugin
    /// is given a moment to exit before it is terminated.
    pub async fn close(self) {
        let Plugin { shared, tasks, .. } = self;
        shared.closed.cancel();
        drop(shared);
        for task in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Shared {
    /// Sends a response (or another message no transport needs to tell apart).
    pub(crate) fn send(&self, message: String) {
        self.write(message, Sent::Other);
    }

    /// Hands a message to the transport; a plugin that does not read what it is sent, so that
    /// too much would wait for it, loses its connection.
    fn write(&self, message: String, kind: Sent) {
        if let Err(full) = self.outgoing.send(message, kind) {
            tracing::warn!(target: "formwork::plugin", plugin = %self.name, limit = transport::MAX_QUEUED_BYTES, "{full}; closing the connection");
            if let Ok(mut slot) = self.closed_reason.lock() {
                slot.get_or_insert(full.to_string());
            }
            self.closed.cancel();
        }
    }

    fn gone(&self) -> HostError {
        HostError::PluginGone {
            plugin: self.name.clone(),
            reason: self
                .closed_reason
                .lock()
                .ok()
                .and_then(|reason| reason.clone())
                .unwrap_or_else(|| "the connection was closed".to_owned()),
        }
    }

    /// Whether a line about this plugin may be logged now (see [`crate::budget`]); `Some(n)`: yes,
    /// after `n` were left out.
    pub(crate) fn may_log(&self) -> Option<u64> {
        self.log_budget
            .lock()
            .ok()
            .and_then(|mut budget| budget.take(Instant::now()))
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A request with the connection's timeout, which pauses while a form is open.
    fn request_with_id(
        &self,
        id: u64,
        method: &str,
        params: Option<Value>,
    ) -> impl Future<Output = Result<Value, HostError>> + Send {
        self.request_raw(id, method, params).map(move |raw| {
            serde_json::from_str(raw?.get()).map_err(|err| HostError::InvalidResponse {
                method: method.to_owned(),
                reason: err.to_string(),
            })
        })
    }

    /// A request whose result is kept as the JSON text the plugin sent. `initialize` has a
    /// timeout of its own that forms do not pause, and is never cancelled (the spec forbids it).
    fn request_raw(
        &self,
        id: u64,
        method: &str,
        params: Option<Value>,
    ) -> impl Future<Output = Result<Box<RawValue>, HostError>> + Send {
        let timeout = if opens(method) {
            INITIALIZE_TIMEOUT
        } else {
            self.request_timeout
        };
        self.request_raw_within(id, method, params, timeout)
    }

    /// [`Shared::request_raw`] with a timeout of its own. On a 2026-07-28 connection the
    /// params carry the request envelope.
    async fn request_raw_within(
        &self,
        id: u64,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, HostError> {
        let handshake = opens(method);
        let params = match self.envelope.get() {
            Some(envelope) => Some(era::with_envelope(params, envelope)),
            None => params,
        };
        let (tx, mut rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        if self.closed.is_cancelled() {
            self.forget(id);
            return Err(self.gone());
        }
        // Before sending: a form may come on the request's stream at once.
        let clock = RequestClock::start(self, id, !handshake);
        self.write(jsonrpc::request(id, method, params), Sent::Request(id));
        let mut abandoned = Abandoned {
            shared: self,
            id,
            armed: !handshake,
        };

        // The deadline is only checked when it comes: then the time forms concerning this
        // request were open since it was sent (waiting for the last one to close first) moves it on.
        let started = Instant::now();
        let mut deadline = later(started, timeout);
        let outcome = loop {
            let due = async {
                tokio::time::sleep_until(deadline).await;
                clock.all_closed().await;
            };
            tokio::select! {
                biased;
                outcome = &mut rx => break outcome,
                () = due => {
                    let now = Instant::now();
                    let paused = clock.paused_until(now);
                    deadline = later(started, timeout.saturating_add(paused));
                    if deadline <= now {
                        abandoned.armed = false;
                        if self.forget(id) && !handshake {
                            self.cancel(id, "timed out");
                        }
                        return Err(HostError::Timeout { method: method.to_owned(), after: timeout });
                    }
                }
            }
        };
        abandoned.armed = false;
        match outcome {
            Err(_) => Err(self.gone()),
            Ok(Err(error)) => Err(HostError::Rpc {
                method: method.to_owned(),
                error,
            }),
            Ok(Ok(raw)) => Ok(raw),
        }
    }

    /// Frees the answer slot of request `id`; whether it was still waiting.
    fn forget(&self, id: u64) -> bool {
        self.pending
            .lock()
            .is_ok_and(|mut pending| pending.remove(&id).is_some())
    }

    fn cancel(&self, id: u64, reason: &str) {
        let params = json!({"requestId": id, "reason": reason});
        self.write(
            jsonrpc::notification("notifications/cancelled", Some(params)),
            Sent::Cancel(id),
        );
    }
}

/// Whether `method` opens the conversation: it has the handshake's timeout, which forms do not
/// pause, and is never cancelled (the spec forbids cancelling `initialize`).
fn opens(method: &str) -> bool {
    matches!(method, "initialize" | "server/discover")
}

/// A request whose caller stopped waiting (a stopped turn, a session shutting down): the
/// plugin is told, and the answer slot does not outlive it on a connection that stays open.
struct Abandoned<'a> {
    shared: &'a Shared,
    id: u64,
    /// `initialize` is never cancelled (the spec forbids it), nor a request that ended.
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if self.armed && !self.shared.closed.is_cancelled() && self.shared.forget(self.id) {
            self.shared
                .cancel(self.id, "the host no longer waits for it");
        }
    }
}
