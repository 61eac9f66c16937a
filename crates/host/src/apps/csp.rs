//! The sandbox policy of one app document, from its resource's `_meta.ui` (or a skybridge
//! widget's `openai/widgetCSP`): the Content-Security-Policy header, the iframe's `allow`
//! attribute, and what was granted, for `hostCapabilities.sandbox` in `ui/initialize`.
//!
//! The rules, after the MCP Apps spec (2026-01-26, "UI Resource Format" and "Security"):
//!
//! - `ui.csp` absent (and no `openai/widgetCSP`): [`DEFAULT_CSP`], the spec's strict default
//!   (`connect-src 'none'`) plus the two directives `default-src` does not cover, `base-uri
//!   'self'` and `form-action 'none'`; `font-src 'self'`, `frame-src 'none'` and `object-src
//!   'none'` are written out as in the template below. Inline script and style run (the
//!   bundled apps are single HTML files); nothing loads from anywhere but the document's own
//!   origin, and nothing connects anywhere. Images and media may also be `blob:` URLs, which
//!   the document makes from bytes it already holds (a video it read with `resources/read`,
//!   as the official video-resource example does): no request leaves the frame for them.
//! - `ui.csp` declared: the spec's template. `resourceDomains` join `script-src`, `style-src`,
//!   `img-src`, `media-src` and `font-src`; `connect-src` is `'self'` plus `connectDomains`;
//!   `frame-src` is `frameDomains`, else `'none'`; `base-uri` is `baseUriDomains`, else
//!   `'self'`; `default-src 'none'`, `object-src 'none'` and `form-action 'none'` always.
//! - `openai/widgetCSP` is read only when `ui.csp` is absent: `connect_domains`,
//!   `resource_domains` and `frame_domains` stand for the three MCP Apps lists.
//! - Each entry must be an origin: `https://` or `wss://`, a host name (letters, digits and
//!   hyphens between dots; international names as punycode) or `[::1]`, optionally a `*.`
//!   wildcard as the leftmost label over at least two labels, optionally `:port` or `:*` (any
//!   port), optionally a path (`https://cdn.example/npm/`: CSP then allows only what is under
//!   it). Plain `http://` and `ws://` only for the local development hosts `localhost`,
//!   `127.0.0.1` and `[::1]` (not `*.localhost`, where other apps' documents live). No query,
//!   fragment or user info; no quote, semicolon, comma, whitespace, control or non-ASCII
//!   character; a path of URL characters only (`%` with two hex digits, no `*`). Keywords
//!   (`'unsafe-eval'`), bare schemes (`https:`, `data:`, `blob:`) and `*` are not origins.
//!   Anything else is dropped and reported in [`SandboxPolicy::dropped`], never written into
//!   the header.
//! - An entry on this machine or its private network (`localhost`, `127.0.0.0/8`, `[::1]`,
//!   `0.0.0.0`, `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `169.254.0.0/16`) is kept only
//!   for the app of a local (stdio) plugin ([`PluginPlace::Local`]) and only with an explicit
//!   port: a remote plugin's app must not probe the person's local services, and a local one
//!   names the one port its own server listens on. A `*.localhost` name is never kept: other
//!   apps' documents live there.
//! - Kept entries are written with the scheme and host in lowercase (the path as declared; a
//!   path of only `/` is left out), in their declared order, each once. A list reads at most
//!   [`MAX_DOMAINS_PER_LIST`] entries, each at most [`MAX_ENTRY_LEN`] bytes.
//! - `ui.permissions`: `camera`, `microphone`, `geolocation` and `clipboardWrite`, each `{}`,
//!   become the `allow` features `camera`, `microphone`, `geolocation` and `clipboard-write`.
//!
//! `frame-ancestors` is not part of the header built here: the web crate adds it, it knows the
//! workbench's origin.

use super::quoted;
use serde_json::{Map, Value, json};

/// How many entries of one domain list are read; the rest are dropped.
pub const MAX_DOMAINS_PER_LIST: usize = 64;
/// The longest domain entry, in bytes, that is read.
pub const MAX_ENTRY_LEN: usize = 255;
/// The Content-Security-Policy of a document whose resource declares no CSP.
pub const DEFAULT_CSP: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; \
     font-src 'self'; connect-src 'none'; frame-src 'none'; object-src 'none'; \
     base-uri 'self'; form-action 'none'";

/// Where each domain list is kept in [`Declared`].
const CONNECT: usize = 0;
const RESOURCE: usize = 1;
const FRAME: usize = 2;
const BASE_URI: usize = 3;
/// The MCP Apps names of the four domain lists, in the order `granted` lists them.
const MCP_LISTS: [(&str, usize); 4] = [
    ("connectDomains", CONNECT),
    ("resourceDomains", RESOURCE),
    ("frameDomains", FRAME),
    ("baseUriDomains", BASE_URI),
];
/// The OpenAI Apps SDK names in `openai/widgetCSP`, with the list each stands for.
const OPENAI_LISTS: [(&str, usize); 3] = [
    ("connect_domains", CONNECT),
    ("resource_domains", RESOURCE),
    ("frame_domains", FRAME),
];
/// `ui.permissions` keys and their Permissions Policy feature, in the order `allow` lists them.
const PERMISSIONS: [(&str, &str); 4] = [
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboardWrite", "clipboard-write"),
];
/// The hosts plain `http://` and `ws://` may name.
const LOCAL_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Where the plugin serving a document runs, which decides whether its app may reach this
/// machine's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginPlace {
    /// A process formwork started (stdio): its app may name a local port.
    Local,
    /// A server reached over HTTP: its app gets no loopback or private-network entry.
    Remote,
}

/// What the sandbox of one app document allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The Content-Security-Policy header value for the document, without `frame-ancestors`
    /// (the web crate adds that, it knows the workbench origin).
    pub csp: String,
    /// The iframe `allow` attribute from `_meta.ui.permissions` (`camera`, `microphone`,
    /// `geolocation`, `clipboard-write`), joined by `"; "`, empty when none.
    pub allow: String,
    /// What was granted, as `hostCapabilities.sandbox` of `ui/initialize`:
    /// `{"csp": {…}, "permissions": {…}}`. `csp` holds the kept entries of each list that was
    /// declared (as an array), under its MCP Apps name, in the order connect, resource, frame,
    /// base URI; `permissions` holds `{}` for each granted permission. Both are always present,
    /// empty when nothing was granted.
    pub granted: Value,
    /// What was dropped, one line each with why (for a log line or a diagnostic); plugin text in
    /// it is quoted and cut short.
    pub dropped: Vec<String>,
}

/// The policy from `ui`, the resource's `_meta.ui` object, and `openai_csp`, its
/// `_meta["openai/widgetCSP"]` (used only when `ui.csp` is absent). The module documentation
/// gives the rules.
pub fn sandbox_policy(
    ui: Option<&Value>,
    openai_csp: Option<&Value>,
    place: PluginPlace,
) -> SandboxPolicy {
    let mut dropped = Vec::new();
    let ui = match ui {
        Some(Value::Object(ui)) => Some(ui),
        Some(_) => {
            dropped.push("ui: not an object".to_owned());
            None
        }
        None => None,
    };
    let declared = match (ui.and_then(|ui| ui.get("csp")), openai_csp) {
        (Some(csp), _) => read_lists(csp, "ui.csp", &MCP_LISTS, place, &mut dropped),
        (None, Some(csp)) => {
            read_lists(csp, "openai/widgetCSP", &OPENAI_LISTS, place, &mut dropped)
        }
        (None, None) => None,
    };
    let permissions = ui.and_then(|ui| ui.get("permissions"));
    let features = read_permissions(permissions, &mut dropped);

    let csp = declared
        .as_ref()
        .map_or_else(|| DEFAULT_CSP.to_owned(), declared_csp);
    let mut granted_csp = Map::new();
    if let Some(declared) = &declared {
        for (name, index) in MCP_LISTS {
            if let Some(list) = &declared[index] {
                granted_csp.insert(name.to_owned(), json!(list));
            }
        }
    }
    let granted_permissions: Map<String, Value> = features
        .iter()
        .map(|(key, _)| ((*key).to_owned(), json!({})))
        .collect();
    SandboxPolicy {
        csp,
        allow: features
            .iter()
            .map(|(_, feature)| *feature)
            .collect::<Vec<_>>()
            .join("; "),
        granted: json!({ "csp": granted_csp, "permissions": granted_permissions }),
        dropped,
    }
}

/// The four lists as declared: `None` for a list that was not (or not as an array).
type Declared = [Option<Vec<String>>; 4];

/// The declared lists of one CSP object, `None` when it is not an object (then the default
/// applies).
fn read_lists(
    csp: &Value,
    source: &str,
    names: &[(&str, usize)],
    place: PluginPlace,
    dropped: &mut Vec<String>,
) -> Option<Declared> {
    let Value::Object(csp) = csp else {
        dropped.push(format!("{source}: not an object"));
        return None;
    };
    let mut declared = Declared::default();
    for (key, value) in csp {
        let Some(&(_, index)) = names.iter().find(|(name, _)| name == key) else {
            dropped.push(format!(
                "{source}.{}: not a list formwork reads",
                quoted(key)
            ));
            continue;
        };
        declared[index] = read_list(value, &format!("{source}.{key}"), place, dropped);
    }
    Some(declared)
}

/// The kept origins of one list, `None` when it is not an array.
fn read_list(
    value: &Value,
    label: &str,
    place: PluginPlace,
    dropped: &mut Vec<String>,
) -> Option<Vec<String>> {
    let Some(items) = value.as_array() else {
        dropped.push(format!("{label}: not a list of origins"));
        return None;
    };
    let mut kept: Vec<String> = Vec::new();
    for item in items.iter().take(MAX_DOMAINS_PER_LIST) {
        let Some(entry) = item.as_str() else {
            dropped.push(format!("{label}: {}, not a string", json_kind(item)));
            continue;
        };
        match origin_source(entry, place) {
            Ok(origin) if kept.contains(&origin) => {}
            Ok(origin) => kept.push(origin),
            Err(reason) => dropped.push(format!("{label}: {}: {reason}", quoted(entry))),
        }
    }
    if items.len() > MAX_DOMAINS_PER_LIST {
        dropped.push(format!(
            "{label}: {} entries past the first {MAX_DOMAINS_PER_LIST}",
            items.len() - MAX_DOMAINS_PER_LIST
        ));
    }
    Some(kept)
}

/// What a JSON value is, for a `dropped` line.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The spec's template over the kept lists.
fn declared_csp(declared: &Declared) -> String {
    let sources = |index: usize| declared[index].as_deref().unwrap_or_default().join(" ");
    let after = |fixed: &str, index: usize| {
        let extra = sources(index);
        if extra.is_empty() {
            fixed.to_owned()
        } else {
            format!("{fixed} {extra}")
        }
    };
    let or = |index: usize, fallback: &str| {
        let listed = sources(index);
        if listed.is_empty() {
            fallback.to_owned()
        } else {
            listed
        }
    };
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src {}; media-src {}; \
         font-src {}; connect-src {}; frame-src {}; object-src 'none'; base-uri {}; \
         form-action 'none'",
        after("'self' 'unsafe-inline'", RESOURCE),
        after("'self' 'unsafe-inline'", RESOURCE),
        after("'self' data: blob:", RESOURCE),
        after("'self' data: blob:", RESOURCE),
        after("'self'", RESOURCE),
        after("'self'", CONNECT),
        or(FRAME, "'none'"),
        or(BASE_URI, "'self'"),
    )
}

/// The granted permissions, as (key, feature), in [`PERMISSIONS`] order.
fn read_permissions(
    permissions: Option<&Value>,
    dropped: &mut Vec<String>,
) -> Vec<(&'static str, &'static str)> {
    let permissions = match permissions {
        Some(Value::Object(permissions)) => permissions,
        Some(_) => {
            dropped.push("ui.permissions: not an object".to_owned());
            return Vec::new();
        }
        None => return Vec::new(),
    };
    for (key, value) in permissions {
        if !PERMISSIONS.iter().any(|(known, _)| known == key) {
            dropped.push(format!(
                "ui.permissions.{}: not a permission formwork grants",
                quoted(key)
            ));
        } else if !value.is_object() {
            dropped.push(format!("ui.permissions.{key}: not an object ({{}})"));
        }
    }
    PERMISSIONS
        .into_iter()
        .filter(|(key, _)| permissions.get(*key).is_some_and(Value::is_object))
        .collect()
}

/// Why a declared CSP entry is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum OriginRefused {
    #[error("longer than {MAX_ENTRY_LEN} bytes")]
    TooLong,
    #[error("not ASCII (an international host name is written in punycode)")]
    NotAscii,
    #[error("contains whitespace or a control character")]
    Whitespace,
    #[error("contains a quote, a semicolon or a comma")]
    Punctuation,
    #[error("not an origin (scheme://host)")]
    NotAnOrigin,
    #[error("not an https or wss origin")]
    Scheme,
    #[error("has a query, a fragment or user info")]
    QueryOrUserInfo,
    #[error("plain http and ws are only for localhost, 127.0.0.1 and [::1]")]
    PlainRemote,
    #[error("a *.localhost name is where other apps' documents live")]
    AppsHost,
    #[error("a remote plugin's app may not reach this machine or its private network")]
    RemoteReachesLocal,
    #[error("an entry on this machine or its private network needs an explicit port")]
    LocalWithoutPort,
    #[error("the path has a `%` without two hex digits")]
    BadEscape,
    #[error("the path has a `{0}`")]
    PathCharacter(char),
    #[error("not a host name")]
    NotAHost,
    #[error("the port is not a number from 1 to 65535, nor `*`")]
    BadPort,
    #[error("an IPv6 host other than [::1]")]
    OtherIpv6,
    #[error("not a host name (letters, digits and hyphens between dots)")]
    BadHostName,
    #[error("a wildcard must cover a name of two labels or more")]
    ShortWildcard,
}

/// One CSP origin source from a declared entry, normalised (lowercase scheme and host, no
/// trailing `/`), or why it is refused.
fn origin_source(entry: &str, place: PluginPlace) -> Result<String, OriginRefused> {
    if entry.len() > MAX_ENTRY_LEN {
        return Err(OriginRefused::TooLong);
    }
    if !entry.is_ascii() {
        return Err(OriginRefused::NotAscii);
    }
    if entry.chars().any(|c| c.is_ascii_control() || c == ' ') {
        return Err(OriginRefused::Whitespace);
    }
    if entry.contains(['\'', '"', ';', ',']) {
        return Err(OriginRefused::Punctuation);
    }
    let Some((scheme, rest)) = entry.split_once("://") else {
        return Err(OriginRefused::NotAnOrigin);
    };
    let scheme = scheme.to_ascii_lowercase();
    let secure = match scheme.as_str() {
        "https" | "wss" => true,
        "http" | "ws" => false,
        _ => return Err(OriginRefused::Scheme),
    };
    if rest.contains(['?', '#', '@', '\\']) {
        return Err(OriginRefused::QueryOrUserInfo);
    }
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, ""),
    };
    check_path(path)?;
    let (host, port) = split_port(authority)?;
    let host = host.to_ascii_lowercase();
    check_host(&host)?;
    if !secure && !LOCAL_HOSTS.contains(&host.as_str()) {
        return Err(OriginRefused::PlainRemote);
    }
    if host.ends_with(".localhost") {
        return Err(OriginRefused::AppsHost);
    }
    if on_this_network(&host) {
        match (place, port.as_deref()) {
            (PluginPlace::Remote, _) => {
                return Err(OriginRefused::RemoteReachesLocal);
            }
            (PluginPlace::Local, None | Some("*")) => {
                return Err(OriginRefused::LocalWithoutPort);
            }
            (PluginPlace::Local, Some(_)) => {}
        }
    }
    let path = if path == "/" { "" } else { path };
    Ok(match port {
        Some(port) => format!("{scheme}://{host}:{port}{path}"),
        None => format!("{scheme}://{host}{path}"),
    })
}

/// Whether `host` (lowercase, as [`check_host`] let it through) is this machine or a private
/// network: `localhost`, or a loopback, unspecified, private or link-local IPv4 address, or
/// `[::1]`.
fn on_this_network(host: &str) -> bool {
    if host == "localhost" || host == "[::1]" {
        return true;
    }
    host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| {
        ip.is_loopback() || ip.is_unspecified() || ip.is_private() || ip.is_link_local()
    })
}

/// A source expression's path: empty, or `/` and URL path characters, `%` only before two hex
/// digits, and no `*` (CSP paths have no wildcards).
fn check_path(path: &str) -> Result<(), OriginRefused> {
    let bytes = path.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte == b'%' {
            let escaped = bytes.get(at + 1..at + 3);
            if !escaped.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                return Err(OriginRefused::BadEscape);
            }
            at += 3;
            continue;
        }
        if !(byte.is_ascii_alphanumeric() || b"-._~!$&()+=:/".contains(&byte)) {
            return Err(OriginRefused::PathCharacter(char::from(byte)));
        }
        at += 1;
    }
    Ok(())
}

/// `host[:port]` or `[::1][:port]`, with the port checked: a number, or `*` for any.
fn split_port(authority: &str) -> Result<(&str, Option<String>), OriginRefused> {
    let (host, port) = match authority.find(']') {
        Some(end) if authority.starts_with('[') => {
            let (host, after) = authority.split_at(end + 1);
            match after.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None if after.is_empty() => (host, None),
                None => return Err(OriginRefused::NotAHost),
            }
        }
        _ => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let Some(port) = port else {
        return Ok((host, None));
    };
    if port == "*" {
        return Ok((host, Some(port.to_owned())));
    }
    let number = (port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit()))
        .then(|| port.parse::<u16>().ok())
        .flatten()
        .filter(|number| *number != 0);
    match number {
        Some(number) => Ok((host, Some(number.to_string()))),
        None => Err(OriginRefused::BadPort),
    }
}

/// A host name (with an optional leading `*.` over two labels or more) or `[::1]`.
fn check_host(host: &str) -> Result<(), OriginRefused> {
    if host.starts_with('[') {
        return if host == "[::1]" {
            Ok(())
        } else {
            Err(OriginRefused::OtherIpv6)
        };
    }
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host),
    };
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if !name.split('.').all(label_ok) {
        return Err(OriginRefused::BadHostName);
    }
    if wildcard && name.split('.').count() < 2 {
        return Err(OriginRefused::ShortWildcard);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{DEFAULT_CSP, MAX_DOMAINS_PER_LIST, PluginPlace, SandboxPolicy, sandbox_policy};
    use serde_json::{Value, json};

    /// The spec's template with nothing declared.
    const EMPTY_DECLARED: &str = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
        style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; \
        font-src 'self'; connect-src 'self'; frame-src 'none'; object-src 'none'; \
        base-uri 'self'; form-action 'none'";

    fn check(ui: Option<Value>, openai: Option<Value>, expected: SandboxPolicy) {
        assert_eq!(
            sandbox_policy(ui.as_ref(), openai.as_ref(), PluginPlace::Local),
            expected
        );
    }

    fn policy(csp: &str, allow: &str, granted: Value, dropped: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            csp: csp.to_owned(),
            allow: allow.to_owned(),
            granted,
            dropped: dropped.iter().map(|line| (*line).to_owned()).collect(),
        }
    }

    fn nothing_granted() -> Value {
        json!({ "csp": {}, "permissions": {} })
    }

    #[test]
    fn without_a_csp_the_strict_default_applies() {
        assert_eq!(
            DEFAULT_CSP,
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' \
             'unsafe-inline'; img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self'; \
             connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'; \
             form-action 'none'"
        );
        let default = policy(DEFAULT_CSP, "", nothing_granted(), &[]);
        check(None, None, default.clone());
        check(Some(json!({})), None, default.clone());
        check(Some(json!({ "prefersBorder": true })), None, default);
    }

    #[test]
    fn declared_lists_fill_the_spec_template() {
        let ui = json!({ "csp": {
            "connectDomains": ["https://API.example.com/", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example", "https://fonts.example"],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example"],
        }});
        check(
            Some(ui),
            None,
            policy(
                "default-src 'none'; \
                 script-src 'self' 'unsafe-inline' https://*.cdn.example https://fonts.example; \
                 style-src 'self' 'unsafe-inline' https://*.cdn.example https://fonts.example; \
                 img-src 'self' data: blob: https://*.cdn.example https://fonts.example; \
                 media-src 'self' data: blob: https://*.cdn.example https://fonts.example; \
                 font-src 'self' https://*.cdn.example https://fonts.example; \
                 connect-src 'self' https://api.example.com wss://live.example.com:8443; \
                 frame-src https://www.youtube.com; object-src 'none'; \
                 base-uri https://base.example; form-action 'none'",
                "",
                json!({ "csp": {
                    "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
                    "resourceDomains": ["https://*.cdn.example", "https://fonts.example"],
                    "frameDomains": ["https://www.youtube.com"],
                    "baseUriDomains": ["https://base.example"],
                }, "permissions": {} }),
                &[],
            ),
        );
    }

    #[test]
    fn an_empty_declaration_gets_the_template_and_grants_only_what_it_names() {
        check(
            Some(json!({ "csp": {} })),
            None,
            policy(EMPTY_DECLARED, "", nothing_granted(), &[]),
        );
        check(
            Some(json!({ "csp": { "frameDomains": [], "connectDomains": ["https://a.example"] } })),
            None,
            policy(
                &EMPTY_DECLARED
                    .replace("connect-src 'self'", "connect-src 'self' https://a.example"),
                "",
                json!({ "csp": { "connectDomains": ["https://a.example"], "frameDomains": [] },
                        "permissions": {} }),
                &[],
            ),
        );
    }

    #[test]
    fn hostile_entries_are_dropped_never_injected() {
        let ui = json!({ "csp": { "connectDomains": [
            "https://a.com; script-src *",
            "'unsafe-inline'",
            "https://x.com\nfoo",
            "javascript:",
            "http://evil.com",
            "*",
            "https://ok.example",
        ]}});
        check(
            Some(ui),
            None,
            policy(
                &EMPTY_DECLARED.replace(
                    "connect-src 'self'",
                    "connect-src 'self' https://ok.example",
                ),
                "",
                json!({ "csp": { "connectDomains": ["https://ok.example"] }, "permissions": {} }),
                &[
                    r#"ui.csp.connectDomains: "https://a.com; script-src *": contains whitespace or a control character"#,
                    r#"ui.csp.connectDomains: "'unsafe-inline'": contains a quote, a semicolon or a comma"#,
                    r#"ui.csp.connectDomains: "https://x.com\nfoo": contains whitespace or a control character"#,
                    r#"ui.csp.connectDomains: "javascript:": not an origin (scheme://host)"#,
                    r#"ui.csp.connectDomains: "http://evil.com": plain http and ws are only for localhost, 127.0.0.1 and [::1]"#,
                    r#"ui.csp.connectDomains: "*": not an origin (scheme://host)"#,
                ],
            ),
        );
    }

    /// This machine and its private network: a local plugin's app may name one port there; a
    /// remote plugin's app nothing, whatever the scheme or port.
    #[test]
    fn local_network_entries_are_for_local_plugins_and_one_port_only() {
        let entries = [
            "http://localhost:5173",
            "https://127.0.0.1:8443",
            "ws://[::1]:9000",
            "https://10.0.0.8:443",
            "https://172.20.1.1:8080",
            "https://192.168.1.1:80",
            "https://169.254.169.254:80",
            "https://0.0.0.0:3000",
            "http://localhost",
            "http://127.0.0.1:*",
            "https://192.168.1.1",
            "https://app.localhost:3000",
            "https://172.32.0.1:443",
            "https://api.example.com",
        ];
        let ui = json!({ "csp": { "connectDomains": entries } });
        let local = sandbox_policy(Some(&ui), None, PluginPlace::Local);
        assert_eq!(
            local.granted["csp"]["connectDomains"],
            json!([
                "http://localhost:5173",
                "https://127.0.0.1:8443",
                "ws://[::1]:9000",
                "https://10.0.0.8:443",
                "https://172.20.1.1:8080",
                "https://192.168.1.1:80",
                "https://169.254.169.254:80",
                "https://0.0.0.0:3000",
                "https://172.32.0.1:443",
                "https://api.example.com"
            ])
        );
        let port = "needs an explicit port";
        let lives = "a *.localhost name is where other apps' documents live";
        assert_eq!(
            local.dropped,
            [
                format!(
                    r#"ui.csp.connectDomains: "http://localhost": an entry on this machine or its private network {port}"#
                ),
                format!(
                    r#"ui.csp.connectDomains: "http://127.0.0.1:*": an entry on this machine or its private network {port}"#
                ),
                format!(
                    r#"ui.csp.connectDomains: "https://192.168.1.1": an entry on this machine or its private network {port}"#
                ),
                format!(r#"ui.csp.connectDomains: "https://app.localhost:3000": {lives}"#),
            ]
        );
        let remote = sandbox_policy(Some(&ui), None, PluginPlace::Remote);
        assert_eq!(
            remote.granted["csp"]["connectDomains"],
            json!(["https://172.32.0.1:443", "https://api.example.com"])
        );
        assert!(
            remote
                .csp
                .contains("connect-src 'self' https://172.32.0.1:443 https://api.example.com;"),
            "{}",
            remote.csp
        );
        let refused = "a remote plugin's app may not reach this machine or its private network";
        assert_eq!(
            remote.dropped[..8],
            entries[..8]
                .iter()
                .map(|entry| format!(r#"ui.csp.connectDomains: "{entry}": {refused}"#))
                .collect::<Vec<_>>()
        );
        assert_eq!(remote.dropped.len(), 12, "{:#?}", remote.dropped);
    }

    #[test]
    fn only_origins_and_paths_under_them_are_kept_normalised_in_order_and_once() {
        let ui = json!({ "csp": { "resourceDomains": [
            "'unsafe-eval'", "data:", "blob:", "https:", "https://*", "https://*.com",
            "https://a.com/path", "HTTPS://A.com/Path", "https://a.com/a*b", "https://a.com/%zz",
            "https://a.com/%7E/", "https://a.com/a<b", "https://user@a.com", "https://a.com?q",
            "https://a.com,b.com", "https://a.com:0", "https://a.com:99999", "https://a.com:",
            "https://a.com:*", "https://a.com:**", "https://[2001:db8::1]",
            "http://localhost:5173", "ws://127.0.0.1:9000", "http://[::1]:8080", "http://localhost:*",
            "http://*.localhost", "http://localhost.evil.com", "https://bücher.de",
            "https://xn--bcher-kva.de", "HTTPS://Fonts.GoogleAPIs.com",
            "https://fonts.googleapis.com/", "https://-a.com", "https://a..com", "ftp://a.com",
            " https://a.com", 7, null,
        ]}});
        let kept = "https://a.com/path https://a.com/Path https://a.com/%7E/ https://a.com:* \
                    http://localhost:5173 ws://127.0.0.1:9000 http://[::1]:8080 \
                    https://xn--bcher-kva.de https://fonts.googleapis.com";
        let label = "ui.csp.resourceDomains";
        let expected_dropped = [
            r#""'unsafe-eval'": contains a quote, a semicolon or a comma"#,
            r#""data:": not an origin (scheme://host)"#,
            r#""blob:": not an origin (scheme://host)"#,
            r#""https:": not an origin (scheme://host)"#,
            r#""https://*": not a host name (letters, digits and hyphens between dots)"#,
            r#""https://*.com": a wildcard must cover a name of two labels or more"#,
            r#""https://a.com/a*b": the path has a `*`"#,
            r#""https://a.com/%zz": the path has a `%` without two hex digits"#,
            r#""https://a.com/a<b": the path has a `<`"#,
            r#""https://user@a.com": has a query, a fragment or user info"#,
            r#""https://a.com?q": has a query, a fragment or user info"#,
            r#""https://a.com,b.com": contains a quote, a semicolon or a comma"#,
            r#""https://a.com:0": the port is not a number from 1 to 65535, nor `*`"#,
            r#""https://a.com:99999": the port is not a number from 1 to 65535, nor `*`"#,
            r#""https://a.com:": the port is not a number from 1 to 65535, nor `*`"#,
            r#""https://a.com:**": the port is not a number from 1 to 65535, nor `*`"#,
            r#""https://[2001:db8::1]": an IPv6 host other than [::1]"#,
            r#""http://localhost:*": an entry on this machine or its private network needs an explicit port"#,
            r#""http://*.localhost": a wildcard must cover a name of two labels or more"#,
            r#""http://localhost.evil.com": plain http and ws are only for localhost, 127.0.0.1 and [::1]"#,
            r#""https://bücher.de": not ASCII (an international host name is written in punycode)"#,
            r#""https://-a.com": not a host name (letters, digits and hyphens between dots)"#,
            r#""https://a..com": not a host name (letters, digits and hyphens between dots)"#,
            r#""ftp://a.com": not an https or wss origin"#,
            r#"" https://a.com": contains whitespace or a control character"#,
            "a number, not a string",
            "null, not a string",
        ]
        .map(|line| format!("{label}: {line}"));
        let got = sandbox_policy(Some(&ui), None, PluginPlace::Local);
        assert_eq!(got.dropped, expected_dropped);
        assert_eq!(
            got.csp,
            format!(
                "default-src 'none'; script-src 'self' 'unsafe-inline' {kept}; \
                 style-src 'self' 'unsafe-inline' {kept}; img-src 'self' data: blob: {kept}; \
                 media-src 'self' data: blob: {kept}; font-src 'self' {kept}; connect-src 'self'; \
                 frame-src 'none'; object-src 'none'; base-uri 'self'; form-action 'none'"
            )
        );
        assert_eq!(
            got.granted["csp"]["resourceDomains"],
            json!(kept.split(' ').collect::<Vec<_>>())
        );
    }

    #[test]
    fn lists_and_entries_are_capped() {
        let many: Vec<String> = (0..MAX_DOMAINS_PER_LIST + 6)
            .map(|index| format!("https://h{index}.example"))
            .collect();
        let long = format!("https://{}.example", "a".repeat(250));
        let ui = json!({ "csp": { "connectDomains": many, "frameDomains": [long] } });
        let got = sandbox_policy(Some(&ui), None, PluginPlace::Local);
        let kept = &many[..MAX_DOMAINS_PER_LIST];
        assert_eq!(got.granted["csp"]["connectDomains"], json!(kept));
        assert!(
            got.csp.contains(&format!(
                "connect-src 'self' {}; frame-src 'none';",
                kept.join(" ")
            )),
            "{}",
            got.csp
        );
        assert_eq!(
            got.dropped,
            [
                "ui.csp.connectDomains: 6 entries past the first 64".to_owned(),
                format!(
                    "ui.csp.frameDomains: \"https://{}\"…: longer than 255 bytes",
                    "a".repeat(72)
                ),
            ]
        );
    }

    #[test]
    fn malformed_declarations_grant_nothing() {
        check(
            Some(json!({ "csp": "https://a.com" })),
            None,
            policy(
                DEFAULT_CSP,
                "",
                nothing_granted(),
                &["ui.csp: not an object"],
            ),
        );
        check(
            Some(json!({ "csp": { "connectDomains": "https://a.com", "wasmUnsafeEval": true } })),
            None,
            policy(
                EMPTY_DECLARED,
                "",
                nothing_granted(),
                &[
                    "ui.csp.connectDomains: not a list of origins",
                    r#"ui.csp."wasmUnsafeEval": not a list formwork reads"#,
                ],
            ),
        );
        check(
            Some(json!("csp")),
            None,
            policy(DEFAULT_CSP, "", nothing_granted(), &["ui: not an object"]),
        );
    }

    #[test]
    fn openai_widget_csp_maps_onto_the_same_lists() {
        let openai = json!({
            "connect_domains": ["https://api.widget.example"],
            "resource_domains": ["https://cdn.widget.example"],
            "frame_domains": ["https://embed.example"],
            "redirect_domains": ["https://r.example"],
        });
        let expected = policy(
            "default-src 'none'; script-src 'self' 'unsafe-inline' https://cdn.widget.example; \
             style-src 'self' 'unsafe-inline' https://cdn.widget.example; \
             img-src 'self' data: blob: https://cdn.widget.example; \
             media-src 'self' data: blob: https://cdn.widget.example; \
             font-src 'self' https://cdn.widget.example; \
             connect-src 'self' https://api.widget.example; frame-src https://embed.example; \
             object-src 'none'; base-uri 'self'; form-action 'none'",
            "",
            json!({ "csp": {
                "connectDomains": ["https://api.widget.example"],
                "resourceDomains": ["https://cdn.widget.example"],
                "frameDomains": ["https://embed.example"],
            }, "permissions": {} }),
            &[r#"openai/widgetCSP."redirect_domains": not a list formwork reads"#],
        );
        check(None, Some(openai.clone()), expected.clone());
        check(
            Some(json!({ "prefersBorder": false })),
            Some(openai.clone()),
            expected,
        );
        // The camelCase names are MCP Apps', not OpenAI's.
        check(
            None,
            Some(json!({ "connectDomains": ["https://a.example"] })),
            policy(
                EMPTY_DECLARED,
                "",
                nothing_granted(),
                &[r#"openai/widgetCSP."connectDomains": not a list formwork reads"#],
            ),
        );
        // A declared `ui.csp` wins, even an empty one.
        check(
            Some(json!({ "csp": {} })),
            Some(openai),
            policy(EMPTY_DECLARED, "", nothing_granted(), &[]),
        );
    }

    #[test]
    fn permissions_become_the_allow_attribute() {
        let all = json!({ "permissions": {
            "clipboardWrite": {}, "geolocation": {}, "microphone": {}, "camera": {},
        }});
        check(
            Some(all),
            None,
            policy(
                DEFAULT_CSP,
                "camera; microphone; geolocation; clipboard-write",
                json!({ "csp": {}, "permissions": {
                    "camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {},
                }}),
                &[],
            ),
        );
        check(
            Some(json!({ "permissions": { "microphone": {}, "clipboardWrite": { "x": 1 } } })),
            None,
            policy(
                DEFAULT_CSP,
                "microphone; clipboard-write",
                json!({ "csp": {}, "permissions": { "microphone": {}, "clipboardWrite": {} } }),
                &[],
            ),
        );
        check(
            Some(json!({ "permissions": { "camera": true, "usb": {}, "display-capture": {} } })),
            None,
            policy(
                DEFAULT_CSP,
                "",
                nothing_granted(),
                &[
                    "ui.permissions.camera: not an object ({})",
                    r#"ui.permissions."usb": not a permission formwork grants"#,
                    r#"ui.permissions."display-capture": not a permission formwork grants"#,
                ],
            ),
        );
        check(
            Some(json!({ "permissions": ["camera"] })),
            None,
            policy(
                DEFAULT_CSP,
                "",
                nothing_granted(),
                &["ui.permissions: not an object"],
            ),
        );
    }
}
