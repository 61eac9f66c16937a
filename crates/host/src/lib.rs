//! The formwork host runtime: connects to plugins (MCP servers) over stdio or Streamable HTTP,
//! lists and calls their tools, and turns the forms they ask for into prompts for a
//! [`FormResponder`] and the answers back into elicitation results.
//!
//! The host owns the client side of the JSON-RPC wire instead of using rmcp's typed client:
//! rmcp's client drops unknown schema keywords, rewrites unknown modes to `form`, moves request
//! `_meta` out of the params and leaves some malformed requests unanswered. Reading each
//! request as raw JSON is what lets formwork decline precisely and never hang a plugin. rmcp
//! still provides the protocol vocabulary (versions) here and the server side elsewhere.

mod agent;
mod approval_choice;
pub mod apps;
mod budget;
pub mod config;
pub mod doctor;
mod error;
mod future;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod instance;
mod jsonrpc;
mod oauth_choices;
mod persist;
mod plugin;
pub mod policy;
mod responder;
pub mod runtime;
mod session;
mod sign_on;
pub mod store;
mod store_url;
mod transport;

pub use error::HostError;
pub use formwork_forms::{ElicitationRequest, FormRequest, UrlRequest};
pub use future::BoxFuture;
pub use jsonrpc::RpcError;
pub use oauth_choices::{CredentialsStoreMode, Grant};
pub use plugin::sign_in_probe;
pub use plugin::{
    ClientExtensions, ConnectOptions, Era, InputRound, MAX_ROUNDS, MAX_TOOL_LIST_BYTES,
    MAX_TOOL_PAGES, MODERN_VERSION, OPENAI_ELICITATION, OPENAI_ELICITATION_METHOD,
    PROTOCOL_VERSION, PUSH_VERSION, Plugin, PluginEnv, PluginTarget, RoundObserver, ServerInfo,
    client_capabilities, push_fix, push_refusal, push_refusal_in_result,
};
pub use responder::{DeclineNotice, FormAction, FormPrompt, FormReply, FormResponder};
pub use session::{
    APPS_PROTOCOL_VERSION, AppAnswer, AppError, AppMessage, AppReply, AppRpc, CardAsks, Command,
    CommandError, CommandErrorKind, EndReason, Event, FormAnswer, Host, HostOptions, MAX_APP_CARDS,
    MAX_APP_REQUESTS_IN_FLIGHT, MAX_APP_TEXT_BYTES, OpenedApp, Role, SessionId, ShownCard,
    SocketMessage, TurnEndReason, UiGuard, UploadError, server_target,
};
pub use sign_on::{DEFAULT_SIGNING_ALGORITHM, SignOnError, authorizer_for, token_store};
pub use transport::MAX_FRAME_BYTES;
pub use transport::auth;
pub use transport::auth::settings::AuthSettings;
pub use transport::auth::store::{
    CREDENTIALS_FILE, CREDENTIALS_LOCK_FILE, KEYRING_SERVICE, StoredTokens, TokenPlace, TokenStore,
    TokenStoreError,
};
pub use transport::stdio::ACCESS_TOKEN_ENV;
