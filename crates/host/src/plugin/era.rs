//! Which protocol era a connection speaks, and how it was chosen.
//!
//! Up to 2025-11-25 a connection opens with the `initialize` handshake and the plugin may send
//! `elicitation/create` while a tool runs. From 2026-07-28 there is no handshake: the host asks
//! `server/discover`, every request carries the protocol version and the client's capabilities
//! in its `_meta`, and a plugin asks the person by answering `input_required` (see `rounds.rs`).

use rmcp::model::ProtocolVersion;
use serde_json::{Map, Value, json};

/// The one modern version formwork speaks.
pub const MODERN_VERSION: &str = "2026-07-28";

/// `_meta` keys of the per-request envelope (2026-07-28).
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// How long `server/discover` may take before the host tries `initialize` instead. A plugin
/// that ignores an unknown method must not cost a whole handshake timeout.
pub(crate) const DISCOVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What SDKs say when a tool pushes a form on a 2026-07-28 connection (the Python SDK, fastmcp,
/// rmcp), lowercase.
const PUSH_REFUSALS: [&str; 4] = [
    "no back-channel for server-initiated requests",
    "server-initiated requests is unavailable on 2026-07-28",
    "server-to-client requests are not allowed on protocol 2026-07-28",
    "elicitation via server-initiated requests",
];

/// The version a plugin that pushes its forms needs.
pub const PUSH_VERSION: &str = "2025-11-25";

/// The refusal `failure` (a call's error or its text) quotes when the call failed on a
/// 2026-07-28 connection because its plugin pushed a form, which that version does not carry:
/// the SDK's words, as found.
pub fn push_refusal(era: Era, failure: &str) -> Option<&'static str> {
    if era != Era::Modern {
        return None;
    }
    let lower = failure.to_lowercase();
    PUSH_REFUSALS
        .into_iter()
        .find(|refusal| lower.contains(refusal))
}

/// [`push_refusal`] in a `CallToolResult`: an error result whose text blocks quote the refusal
/// (fastmcp answers a refused push so, where the Python SDK fails the request).
pub fn push_refusal_in_result(era: Era, result: &Value) -> Option<&'static str> {
    if result.get("isError") != Some(&Value::Bool(true)) {
        return None;
    }
    let texts: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    push_refusal(era, &texts.join("\n"))
}

/// What to do about [`push_refusal`] for the plugin `name`, in words for the person; `configured`
/// when it is a server of the config (else it was named on the command line).
pub fn push_fix(name: &str, configured: bool) -> String {
    let how = if configured {
        format!(
            "protocol_version = \"{PUSH_VERSION}\" in [mcp_servers.{name}], or --protocol {PUSH_VERSION}"
        )
    } else {
        format!("--protocol {PUSH_VERSION}")
    };
    format!(
        "`{name}` pushes its forms (elicitation/create), which 2026-07-28 does not carry: speak \
         {PUSH_VERSION} to it ({how})"
    )
}

/// The two ways a connection can speak MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Era {
    /// `initialize`, then requests; forms come as `elicitation/create` requests (≤ 2025-11-25).
    Handshake,
    /// No handshake; each request carries its envelope, and forms come inside `input_required`
    /// results (2026-07-28).
    Modern,
}

/// Whether a connection asked for `version` (`None`: whatever the plugin offers) starts with
/// `server/discover`.
pub(crate) fn discovers(version: Option<&ProtocolVersion>) -> bool {
    version.is_none_or(|version| !version.has_initialize())
}

/// The version `initialize` asks for.
pub(crate) fn handshake_version(version: Option<&ProtocolVersion>) -> &str {
    match version {
        Some(version) if version.has_initialize() => version.as_str(),
        _ => ProtocolVersion::LATEST_WITH_INITIALIZE.as_str(),
    }
}

/// The `_meta` every 2026-07-28 request carries.
pub(crate) fn envelope(capabilities: &Value, client_info: &Value) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(META_PROTOCOL_VERSION.into(), MODERN_VERSION.into());
    meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities.clone());
    meta.insert(META_CLIENT_INFO.into(), client_info.clone());
    meta
}

/// Adds the envelope to a request's params, beside the `_meta` keys the params already have.
pub(crate) fn with_envelope(params: Option<Value>, envelope: &Map<String, Value>) -> Value {
    let mut params = match params {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        for (key, value) in envelope {
            meta.insert(key.clone(), value.clone());
        }
    }
    Value::Object(params)
}

/// What a `server/discover` answer says about the plugin's era: `Ok` with the reason when it
/// offers 2026-07-28, `Err` with the reason when it does not.
pub(crate) fn judge_discover(result: &str) -> Result<String, NotModern> {
    let result: Value = serde_json::from_str(result).map_err(NotModern::Unreadable)?;
    let Some(versions) = result.get("supportedVersions").and_then(Value::as_array) else {
        return Err(NotModern::NoVersions);
    };
    let versions: Vec<&str> = versions.iter().filter_map(Value::as_str).collect();
    if versions.contains(&MODERN_VERSION) {
        Ok(format!("`server/discover` offered {}", json!(versions)))
    } else {
        Err(NotModern::OlderOnly(json!(versions)))
    }
}

/// Why a `server/discover` answer does not make the connection 2026-07-28.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotModern {
    #[error("its `server/discover` result could not be read ({0})")]
    Unreadable(serde_json::Error),
    #[error("its `server/discover` result has no `supportedVersions`")]
    NoVersions,
    /// The versions it offered, as a JSON array.
    #[error("`server/discover` offered only {0}")]
    OlderOnly(Value),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_envelope_joins_the_params_own_meta() {
        let envelope = envelope(&json!({"elicitation": {}}), &json!({"name": "f"}));
        let params = with_envelope(
            Some(json!({"name": "t", "_meta": {"progressToken": 1}})),
            &envelope,
        );
        assert_eq!(
            params.to_string(),
            r#"{"name":"t","_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"f"}}}"#
        );
        assert_eq!(
            with_envelope(None, &envelope)["_meta"][META_PROTOCOL_VERSION],
            "2026-07-28"
        );
    }

    #[test]
    fn discover_is_judged_by_its_versions() {
        let judge = |result: &str| judge_discover(result).map_err(|err| err.to_string());
        assert_eq!(
            judge(r#"{"supportedVersions":["2026-07-28"],"capabilities":{}}"#),
            Ok(r#"`server/discover` offered ["2026-07-28"]"#.to_owned())
        );
        assert_eq!(
            judge(r#"{"supportedVersions":["2025-11-25"]}"#),
            Err(r#"`server/discover` offered only ["2025-11-25"]"#.to_owned())
        );
        assert_eq!(
            judge(r#"{"capabilities":{}}"#),
            Err("its `server/discover` result has no `supportedVersions`".to_owned())
        );
        assert!(judge_discover(r#"{"capabilities":{}}"#).is_err());
    }

    #[test]
    fn only_a_handshake_version_skips_discovery() {
        assert!(discovers(None));
        assert!(discovers(Some(&ProtocolVersion::V_2026_07_28)));
        assert!(!discovers(Some(&ProtocolVersion::V_2025_06_18)));
        assert_eq!(
            handshake_version(Some(&ProtocolVersion::V_2025_06_18)),
            "2025-06-18"
        );
        assert_eq!(handshake_version(None), "2025-11-25");
    }
}
