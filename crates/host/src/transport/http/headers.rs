//! The headers the transport sets itself (the session, the protocol version, the 2026-07-28
//! routing headers mirrored from a request's body) and the check of configured ones.

use serde::Deserialize;

pub(super) const SESSION_HEADER: &str = "mcp-session-id";
pub(super) const VERSION_HEADER: &str = "mcp-protocol-version";
/// 2026-07-28: a request's method and the name it concerns, mirrored from its body so that
/// whatever sits in front of the plugin can route it without reading the body.
pub(super) const METHOD_HEADER: &str = "mcp-method";
pub(super) const NAME_HEADER: &str = "mcp-name";
pub(super) const LAST_EVENT_ID_HEADER: &str = "last-event-id";

/// The headers of a request that carries the 2026-07-28 envelope (its protocol version in
/// `params._meta`), which the server checks against the body.
pub(super) struct RoutingHeaders {
    pub(super) version: String,
    pub(super) method: String,
    pub(super) name: Option<String>,
}

impl RoutingHeaders {
    pub(super) fn of(body: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Head {
            method: String,
            params: Params,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Meta,
            name: Option<String>,
            uri: Option<String>,
        }
        #[derive(Deserialize)]
        struct Meta {
            #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
            version: String,
        }
        if !body.contains("io.modelcontextprotocol/protocolVersion") {
            return None;
        }
        let head: Head = serde_json::from_str(body).ok()?;
        let name = match head.method.as_str() {
            "tools/call" | "prompts/get" => head.params.name,
            "resources/read" => head.params.uri,
            _ => None,
        };
        Some(RoutingHeaders {
            version: header_value(&head.params.meta.version),
            method: header_value(&head.method),
            name: name.as_deref().map(header_value),
        })
    }
}

/// A value as a header carries it: as is when it is plain visible ASCII, else (spaces at its
/// ends, other characters, or what looks like the wrapping itself) base64 in `=?base64?…?=`.
fn header_value(value: &str) -> String {
    use base64::Engine as _;
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("=?base64?{encoded}?=")
    }
}

/// Headers the transport sets itself, or whose meaning it does not implement (`expect` would
/// ask for an interim answer first); configuration may not set them.
const OWN_HEADERS: [&str; 17] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "accept",
    "content-type",
    SESSION_HEADER,
    VERSION_HEADER,
    METHOD_HEADER,
    NAME_HEADER,
    LAST_EVENT_ID_HEADER,
];

/// Why a configured header cannot be sent; each names the header.
#[derive(Debug, thiserror::Error)]
pub(super) enum HeaderError {
    #[error("`{0}` is not a valid HTTP header name")]
    InvalidName(String),
    #[error("the header `{0}` is set by formwork itself")]
    SetByFormwork(String),
    #[error("the value of the header `{0}` has characters HTTP does not allow")]
    InvalidValue(String),
}

/// A configured header must be a valid name and value, and not one the transport sets itself.
pub(super) fn check_header(name: &str, value: &str) -> Result<(), HeaderError> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(HeaderError::InvalidName(name.to_owned()));
    }
    if OWN_HEADERS.iter().any(|own| own.eq_ignore_ascii_case(name)) {
        return Err(HeaderError::SetByFormwork(name.to_owned()));
    }
    if !valid_value(value) {
        return Err(HeaderError::InvalidValue(name.to_owned()));
    }
    Ok(())
}

/// Visible ASCII, spaces and tabs: nothing that could end a header line.
pub(super) fn valid_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

pub(super) const ACCEPT_BOTH: &str = "application/json, text/event-stream";
pub(super) const ACCEPT_EVENTS: &str = "text/event-stream";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn refuses_headers_it_cannot_send_or_sets_itself() {
        let check_header = |name, value| check_header(name, value).map_err(|err| err.to_string());
        assert_eq!(check_header("X-Team", "a b\tc"), Ok(()));
        assert_eq!(
            check_header("X Team", "a"),
            Err("`X Team` is not a valid HTTP header name".to_owned())
        );
        assert_eq!(
            check_header("Mcp-Session-Id", "a"),
            Err("the header `Mcp-Session-Id` is set by formwork itself".to_owned())
        );
        assert_eq!(
            check_header("X-Team", "a\r\nX-Evil: 1"),
            Err("the value of the header `X-Team` has characters HTTP does not allow".to_owned())
        );
    }

    #[test]
    fn a_2026_request_mirrors_its_method_and_name_in_headers() {
        let body = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"déployer","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let routing = RoutingHeaders::of(body).unwrap();
        assert_eq!(routing.version, "2026-07-28");
        assert_eq!(routing.method, "tools/call");
        // Not plain ASCII: base64 in the wrapping the spec gives.
        assert_eq!(routing.name.as_deref(), Some("=?base64?ZMOpcGxveWVy?="));
        let read = r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a b","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert_eq!(
            RoutingHeaders::of(read).unwrap().name.as_deref(),
            Some("file:///a b")
        );
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        // A handshake-era request carries no envelope, and gets none of these headers.
        assert!(RoutingHeaders::of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).is_none());
    }
}
