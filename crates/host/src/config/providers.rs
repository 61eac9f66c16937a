//! Model providers, with Codex's keys: the two built in (`openai` and `oss`), the
//! `[model_providers.<id>]` tables a file adds, and the choice of the model a session talks to
//! ([`Config::model_choice`]).
//!
//! A provider table is read as strictly as a server table: it decides where the person's
//! messages go, so a key formwork does not know (a typo included) is an error, and so is a
//! key that would hold a secret (`experimental_bearer_token`): the API key lives in the
//! environment variable `env_key` names, never in a file. Nothing here reads that key; the
//! agent sends it when it makes a request.

use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;

use super::error::{ConfigError, dotted};
use super::load::{Ctx, MAX_TIMEOUT_SECS};
use super::types::{Config, ModelChoice, ModelProvider, WireApi};

/// The ids of the built-in providers, in the order errors list them.
pub const BUILTIN_MODEL_PROVIDERS: &[&str] = &["openai", "oss"];

/// The default of `tool_output_token_limit`.
pub const DEFAULT_TOOL_OUTPUT_TOKEN_LIMIT: u64 = 2500;

/// The most `request_max_retries` or `stream_max_retries` accepted.
pub const MAX_PROVIDER_RETRIES: u32 = 100;

/// The bytes one token of tool output is counted as.
const BYTES_PER_TOKEN: u64 = 4;

const DEFAULT_REQUEST_MAX_RETRIES: u32 = 4;
const DEFAULT_STREAM_MAX_RETRIES: u32 = 5;
const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_millis(300_000);

/// The port of a local model server when `CODEX_OSS_PORT` does not name one (Ollama's).
const DEFAULT_OSS_PORT: u16 = 11434;

/// Why no model could be chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelChoiceError {
    /// The provider id names neither a built-in provider nor a `[model_providers.<id>]` table.
    #[error("unknown model provider `{id}` (from {origin}); the known ones are {}", .known.join(", "))]
    UnknownProvider {
        /// The id.
        id: String,
        /// Where it was named: `--model-provider` or `model_provider`.
        origin: &'static str,
        /// Every id that would do: the built-in ones, then the configured ones.
        known: Vec<String>,
    },
    /// A provider of the config was chosen, and nothing names its model.
    #[error(
        "model provider `{provider}` has no default model; set `model` in formwork.toml or pass \
         --model"
    )]
    NoModel {
        /// The provider's id.
        provider: String,
    },
    /// A variable that points the `oss` provider elsewhere holds something unusable.
    #[error("the environment variable {variable}: {message}")]
    Environment {
        /// `CODEX_OSS_BASE_URL` or `CODEX_OSS_PORT`.
        variable: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl Config {
    /// The model a session talks to, from the process environment: see
    /// [`Config::model_choice_with_env`].
    pub fn model_choice(
        &self,
        provider_override: Option<&str>,
        model_override: Option<&str>,
    ) -> Result<Option<ModelChoice>, ModelChoiceError> {
        self.model_choice_with_env(provider_override, model_override, |name| {
            std::env::var(name).ok()
        })
    }

    /// The model a session talks to. `None` when neither the overrides (`--model-provider`,
    /// `--model`) nor the config (`model_provider`, `model`) name a provider or a model: the
    /// person's messages are then only recorded. Otherwise the provider is the override, else
    /// `model_provider`, else `openai`; the model is the override, else `model`, else the
    /// built-in provider's default. `env` reads an environment variable (`CODEX_OSS_BASE_URL`
    /// and `CODEX_OSS_PORT` point the `oss` provider elsewhere); an empty value counts as
    /// unset. The provider's API key is not looked at.
    pub fn model_choice_with_env(
        &self,
        provider_override: Option<&str>,
        model_override: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ModelChoice>, ModelChoiceError> {
        let named_provider = provider_override
            .map(|id| (id, "--model-provider"))
            .or_else(|| {
                self.model_provider
                    .as_deref()
                    .map(|id| (id, "model_provider"))
            });
        let named_model = model_override.or(self.model.as_deref());
        if named_provider.is_none() && named_model.is_none() {
            return Ok(None);
        }
        // `openai` is built in, so no error ever names this origin.
        let (id, origin) = named_provider.unwrap_or(("openai", "the default"));
        let env = |name: &str| env(name).filter(|value| !value.is_empty());
        let (provider, default_model) = match builtin_provider(id, env)? {
            Some((provider, default_model)) => (provider, Some(default_model)),
            None => match self.model_providers.get(id) {
                Some(provider) => (provider.clone(), None),
                None => {
                    let known = BUILTIN_MODEL_PROVIDERS
                        .iter()
                        .map(|id| (*id).to_owned())
                        .chain(self.model_providers.keys().cloned())
                        .collect();
                    return Err(ModelChoiceError::UnknownProvider {
                        id: id.to_owned(),
                        origin,
                        known,
                    });
                }
            },
        };
        let model = named_model
            .or(default_model)
            .ok_or_else(|| ModelChoiceError::NoModel {
                provider: id.to_owned(),
            })?;
        let max_bytes = self.tool_output_token_limit.saturating_mul(BYTES_PER_TOKEN);
        Ok(Some(ModelChoice {
            provider_id: id.to_owned(),
            provider,
            model: model.to_owned(),
            tool_output_max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        }))
    }
}

/// The built-in provider `id` with its default model; `None` for any other id.
fn builtin_provider(
    id: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<(ModelProvider, &'static str)>, ModelChoiceError> {
    let provider = |name: &str, base_url: String, env_key: Option<&str>, wire_api| ModelProvider {
        name: name.to_owned(),
        base_url,
        env_key: env_key.map(str::to_owned),
        wire_api,
        http_headers: IndexMap::new(),
        env_http_headers: IndexMap::new(),
        query_params: IndexMap::new(),
        request_max_retries: DEFAULT_REQUEST_MAX_RETRIES,
        stream_max_retries: DEFAULT_STREAM_MAX_RETRIES,
        stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
    };
    match id {
        "openai" => Ok(Some((
            provider(
                "OpenAI",
                "https://api.openai.com/v1".to_owned(),
                Some("OPENAI_API_KEY"),
                WireApi::Responses,
            ),
            "gpt-5",
        ))),
        "oss" => {
            let base_url = match env("CODEX_OSS_BASE_URL") {
                Some(url) => {
                    check_base_url(&url).map_err(|message| ModelChoiceError::Environment {
                        variable: "CODEX_OSS_BASE_URL",
                        message: message.to_owned(),
                    })?
                }
                None => {
                    let port = match env("CODEX_OSS_PORT") {
                        None => DEFAULT_OSS_PORT,
                        Some(text) => match text.parse::<u16>() {
                            Ok(port @ 1..) => port,
                            _ => {
                                return Err(ModelChoiceError::Environment {
                                    variable: "CODEX_OSS_PORT",
                                    message: format!(
                                        "expected a port from 1 to 65535, found `{text}`"
                                    ),
                                });
                            }
                        },
                    };
                    format!("http://localhost:{port}/v1")
                }
            };
            Ok(Some((
                provider("Open-source model (local)", base_url, None, WireApi::Chat),
                "gpt-oss:20b",
            )))
        }
        _ => Ok(None),
    }
}

/// A `[model_providers.<id>]` table as written. Codex keys that formwork skips are typed as
/// any value so they pass; everything else unknown is rejected by serde.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider {
    name: Option<String>,
    base_url: Option<String>,
    env_key: Option<String>,
    wire_api: Option<String>,
    http_headers: Option<IndexMap<String, String>>,
    env_http_headers: Option<IndexMap<String, String>>,
    query_params: Option<IndexMap<String, String>>,
    request_max_retries: Option<i64>,
    stream_max_retries: Option<i64>,
    stream_idle_timeout_ms: Option<i64>,
    // Codex keys formwork refuses: a secret in the file, or a way of signing in it lacks.
    experimental_bearer_token: Option<toml::Value>,
    auth: Option<toml::Value>,
    aws: Option<toml::Value>,
    // Codex keys formwork accepts and does not use: a hint shown when the key is missing, the
    // WebSocket transport (formwork streams over HTTP), and ChatGPT sign-in.
    env_key_instructions: Option<toml::Value>,
    supports_websockets: Option<toml::Value>,
    websocket_connect_timeout_ms: Option<toml::Value>,
    requires_openai_auth: Option<toml::Value>,
}

/// One `[model_providers.<id>]` table, checked.
pub(super) fn build_provider(
    ctx: &Ctx<'_>,
    id: &str,
    raw: RawProvider,
    ignored_keys: &mut Vec<String>,
) -> Result<ModelProvider, ConfigError> {
    let at = |key: &'static str| -> Vec<&str> {
        if key.is_empty() {
            vec!["model_providers", id]
        } else {
            vec!["model_providers", id, key]
        }
    };
    if BUILTIN_MODEL_PROVIDERS.contains(&id) {
        return Err(ctx.error(
            &at(""),
            format!("`{id}` is a built-in provider; give yours another id"),
        ));
    }
    let refused = [
        (
            "experimental_bearer_token",
            raw.experimental_bearer_token.is_some(),
            "formwork keeps no secrets in its config: put the API key in an environment \
             variable and name that variable with `env_key`",
        ),
        (
            "auth",
            raw.auth.is_some(),
            "not supported by formwork (a command that prints the token); put the API key in \
             an environment variable and name that variable with `env_key`",
        ),
        (
            "aws",
            raw.aws.is_some(),
            "not supported by formwork (requests signed with an AWS profile)",
        ),
    ];
    for (key, present, message) in refused {
        if present {
            return Err(ctx.error(&at(key), message));
        }
    }
    let skipped = [
        ("env_key_instructions", raw.env_key_instructions.is_some()),
        ("supports_websockets", raw.supports_websockets.is_some()),
        (
            "websocket_connect_timeout_ms",
            raw.websocket_connect_timeout_ms.is_some(),
        ),
        ("requires_openai_auth", raw.requires_openai_auth.is_some()),
    ];
    for (key, present) in skipped {
        if present {
            ignored_keys.push(dotted(at(key)));
        }
    }

    let Some(base_url) = raw.base_url else {
        return Err(ctx.error(
            &at(""),
            "a model provider needs `base_url`, the URL that `/responses` or \
             `/chat/completions` is appended to",
        ));
    };
    let base_url =
        check_base_url(&base_url).map_err(|message| ctx.error(&at("base_url"), message))?;
    if raw.env_key.as_deref() == Some("") {
        return Err(ctx.error(
            &at("env_key"),
            "expected the name of the environment variable that holds the API key",
        ));
    }
    let wire_api = match raw.wire_api.as_deref() {
        None | Some("responses") => WireApi::Responses,
        Some("chat") => WireApi::Chat,
        Some(other) => {
            return Err(ctx.error(
                &at("wire_api"),
                format!(r#"unknown wire_api "{other}", expected "responses" or "chat""#),
            ));
        }
    };
    let retries = |key: &'static str, value: Option<i64>, default: u32| match value {
        None => Ok(default),
        Some(count) => match u32::try_from(count) {
            Ok(count @ 0..=MAX_PROVIDER_RETRIES) => Ok(count),
            _ => Err(ctx.error(
                &at(key),
                format!("expected a whole number from 0 to {MAX_PROVIDER_RETRIES}"),
            )),
        },
    };
    let request_max_retries = retries(
        "request_max_retries",
        raw.request_max_retries,
        DEFAULT_REQUEST_MAX_RETRIES,
    )?;
    let stream_max_retries = retries(
        "stream_max_retries",
        raw.stream_max_retries,
        DEFAULT_STREAM_MAX_RETRIES,
    )?;
    let max_millis = MAX_TIMEOUT_SECS * 1000;
    let stream_idle_timeout = match raw.stream_idle_timeout_ms {
        None => DEFAULT_STREAM_IDLE_TIMEOUT,
        Some(millis) => match u64::try_from(millis) {
            Ok(millis @ 1..) if millis <= max_millis => Duration::from_millis(millis),
            _ => {
                return Err(ctx.error(
                    &at("stream_idle_timeout_ms"),
                    format!(
                        "expected a positive number of milliseconds, at most {max_millis} \
                         (one day)"
                    ),
                ));
            }
        },
    };
    Ok(ModelProvider {
        name: raw.name.unwrap_or_else(|| id.to_owned()),
        base_url,
        env_key: raw.env_key,
        wire_api,
        http_headers: raw.http_headers.unwrap_or_default(),
        env_http_headers: raw.env_http_headers.unwrap_or_default(),
        query_params: raw.query_params.unwrap_or_default(),
        request_max_retries,
        stream_max_retries,
        stream_idle_timeout,
    })
}

/// `tool_output_token_limit`, checked: a positive whole number.
pub(super) fn token_limit(ctx: &Ctx<'_>, value: Option<i64>) -> Result<Option<u64>, ConfigError> {
    match value {
        None => Ok(None),
        Some(tokens) => match u64::try_from(tokens) {
            Ok(tokens @ 1..) => Ok(Some(tokens)),
            _ => Err(ctx.error(
                &["tool_output_token_limit"],
                "expected a positive whole number of tokens",
            )),
        },
    }
}

/// A provider's base URL, checked, without the trailing `/` (a path is appended to it): an
/// http or https URL with a host, and no query or fragment.
fn check_base_url(text: &str) -> Result<String, &'static str> {
    let usable = url::Url::parse(text).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.has_host()
            && url.query().is_none()
            && url.fragment().is_none()
    });
    if usable {
        Ok(text.trim_end_matches('/').to_owned())
    } else {
        Err(
            "expected an http:// or https:// URL without a query or fragment (query \
             parameters go in `query_params`)",
        )
    }
}

#[cfg(test)]
mod tests;
