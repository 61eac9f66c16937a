//! Finding a server's authorization server: protected resource metadata (RFC 9728), then the
//! authorization server's metadata (RFC 8414, OpenID discovery), in the spec's order; for
//! 2025-03-26 servers without resource metadata, the origin's metadata or its default paths.

use serde::Deserialize;
use url::Url;

use super::challenge::Challenge;
use super::fetch::{self, FetchError};

/// What the protected resource says of itself.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    pub resource: String,
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

/// What an authorization server says of itself (the fields formwork uses).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
}

/// Where the authorization server's description came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Protected resource metadata named it, and its metadata was found (2025-06-18 and later).
    ResourceMetadata,
    /// No resource metadata: the server's origin published authorization server metadata.
    LegacyMetadata,
    /// Neither: the 2025-03-26 default endpoints at the server's origin.
    LegacyDefaults,
}

/// One step of a sign-in, and what came of it (for `formwork doctor` and `formwork login`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuthStep {
    /// What was sought: `protected resource metadata`, `authorization server metadata`,
    /// `default endpoints` or `sign-in`.
    pub step: &'static str,
    pub url: String,
    pub outcome: String,
}

const RESOURCE_METADATA: &str = "protected resource metadata";
const SERVER_METADATA: &str = "authorization server metadata";

#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    pub resource: Option<ResourceMetadata>,
    pub server: ServerMetadata,
    pub source: Source,
}

const ACCEPT_JSON: (&str, &str) = ("accept", "application/json");
/// Sent on discovery requests, as the SDKs do: some servers shape their metadata by it.
const PROTOCOL_VERSION: (&str, &str) = ("mcp-protocol-version", "2025-11-25");

/// The protected resource metadata the server at `server_url` publishes (at the place its
/// challenge names, or the well-known ones), if any: a place that fails is passed over.
pub(crate) async fn resource_metadata(
    server_url: &str,
    challenge: &Challenge,
    steps: &mut Vec<AuthStep>,
) -> Option<ResourceMetadata> {
    let server = Url::parse(server_url).ok()?;
    for url in resource_metadata_urls(&server, challenge, steps) {
        if let Ok(Some(found)) =
            fetch_document::<ResourceMetadata>(&url, RESOURCE_METADATA, steps).await
        {
            return Some(found);
        }
    }
    None
}

/// Where the resource metadata may be, in order: the challenge's URL, the path's well-known
/// URL, the root one. Metadata names the authorization server, so it must come over TLS (read
/// in the clear, anyone on the way could name their own), and a remote server's challenge may
/// not send formwork into this machine or a private network: such a place is left out, with a
/// step that says why.
fn resource_metadata_urls(
    server: &Url,
    challenge: &Challenge,
    steps: &mut Vec<AuthStep>,
) -> Vec<String> {
    let mut readable = candidate_resource_metadata_urls(server, challenge);
    readable.retain(|url| {
        let secure = Url::parse(url)
            .map_err(DiscoveryError::Root)
            .and_then(|url| check_secure(&url).and_then(|()| check_reach(server, &url)));
        if let Err(reason) = &secure {
            steps.push(AuthStep {
                step: RESOURCE_METADATA,
                url: url.clone(),
                outcome: format!("not read: {reason}"),
            });
        }
        secure.is_ok()
    });
    readable
}

fn candidate_resource_metadata_urls(server: &Url, challenge: &Challenge) -> Vec<String> {
    let mut candidates = Vec::new();
    // RFC 9728 names an absolute URL; a relative one is taken from the server's URL.
    if let Some(advertised) = challenge
        .resource_metadata
        .as_deref()
        .and_then(|url| server.join(url).ok())
    {
        candidates.push(advertised.to_string());
    }
    let origin = server.origin().ascii_serialization();
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    candidates.dedup();
    candidates
}

/// Why discovery found no authorization server to sign in at, or refused the one it found.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DiscoveryError {
    #[error("`{url}` is not a URL: {source}")]
    ServerNotAUrl {
        url: String,
        source: url::ParseError,
    },
    /// The server's origin, as a URL of its own, does not parse.
    #[error("{0}")]
    Root(url::ParseError),
    #[error("{0} is not https; formwork signs in only over https (or plain http to localhost)")]
    NotSecure(String),
    #[error(
        "{url} is on {kind}, and the server {server} is not on this machine or a private network: a remote server's metadata may not send formwork there"
    )]
    Reach {
        url: String,
        kind: &'static str,
        server: String,
    },
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} answered `{content_type}`, not JSON")]
    NotJson { url: String, content_type: String },
    #[error("the metadata at {url} is malformed: {source}")]
    Malformed {
        url: String,
        source: serde_json::Error,
    },
    #[error(
        "the protected resource metadata is for `{resource}`, not for {server}; formwork does not sign in to it"
    )]
    OtherResource { resource: String, server: String },
    #[error("the protected resource metadata of {0} names no authorization server")]
    NoAuthorizationServer(String),
    #[error("the authorization server `{issuer}` is not a URL: {source}")]
    AuthorizationServerNotAUrl {
        issuer: String,
        source: url::ParseError,
    },
    #[error("no metadata was found for the authorization server {0}")]
    NoMetadata(String),
    #[error("the metadata at {url} is for the issuer `{found}`, not `{issuer}`")]
    OtherIssuer {
        url: String,
        found: String,
        issuer: String,
    },
    #[error(
        "the metadata at {url} names the issuer `{issuer}`, which is not on the server's origin ({origin}); without resource metadata the server's origin is its authorization server"
    )]
    IssuerOffOrigin {
        url: String,
        issuer: String,
        origin: String,
    },
    #[error("the issuer `{issuer}` is not a URL: {source}")]
    IssuerNotAUrl {
        issuer: String,
        source: url::ParseError,
    },
    #[error("the {key} `{endpoint}` is not a URL: {source}")]
    EndpointNotAUrl {
        key: &'static str,
        endpoint: String,
        source: url::ParseError,
    },
    #[error(
        "the authorization server {issuer} names a {key} on another origin ({endpoint}); formwork sends credentials only to the issuer's origin"
    )]
    EndpointOffOrigin {
        issuer: String,
        key: &'static str,
        endpoint: String,
    },
}

/// Runs discovery for the MCP server at `server_url`, starting from its challenge, or from its
/// resource metadata when that is `known` already.
pub(crate) async fn discover(
    server_url: &str,
    challenge: &Challenge,
    known: Option<ResourceMetadata>,
    steps: &mut Vec<AuthStep>,
) -> Result<Discovered, DiscoveryError> {
    let server = Url::parse(server_url).map_err(|source| DiscoveryError::ServerNotAUrl {
        url: server_url.to_owned(),
        source,
    })?;
    check_secure(&server)?;
    let mut resource = known;
    if resource.is_none() {
        for url in resource_metadata_urls(&server, challenge, steps) {
            if let Some(found) =
                fetch_document::<ResourceMetadata>(&url, RESOURCE_METADATA, steps).await?
            {
                resource = Some(found);
                break;
            }
        }
    }

    let Some(resource) = resource else {
        return legacy(&server, steps).await;
    };
    check_resource(&server, &resource.resource)?;
    let Some(issuer) = resource.authorization_servers.first() else {
        return Err(DiscoveryError::NoAuthorizationServer(server_url.to_owned()));
    };
    let issuer_url =
        Url::parse(issuer).map_err(|source| DiscoveryError::AuthorizationServerNotAUrl {
            issuer: issuer.clone(),
            source,
        })?;
    check_secure(&issuer_url)?;
    check_reach(&server, &issuer_url)?;
    for url in server_metadata_urls(&issuer_url) {
        let Some(metadata) = fetch_document::<ServerMetadata>(&url, SERVER_METADATA, steps).await?
        else {
            continue;
        };
        // RFC 8414 §3.3: the metadata must be the issuer's own, or anyone could stand in.
        if metadata.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(DiscoveryError::OtherIssuer {
                url,
                found: metadata.issuer,
                issuer: issuer.clone(),
            });
        }
        check_endpoints(&server, &metadata)?;
        return Ok(Discovered {
            resource: Some(resource),
            server: metadata,
            source: Source::ResourceMetadata,
        });
    }
    Err(DiscoveryError::NoMetadata(issuer.clone()))
}

/// A 2025-03-26 server: the authorization server is its origin.
async fn legacy(server: &Url, steps: &mut Vec<AuthStep>) -> Result<Discovered, DiscoveryError> {
    let origin = server.origin().ascii_serialization();
    let root = Url::parse(&origin).map_err(DiscoveryError::Root)?;
    for url in server_metadata_urls(&root) {
        // The issuer need not equal the origin: servers of that era published metadata whose
        // issuer has a path (`<origin>/oauth`) at the root well-known URL. It must be on the
        // origin, though, or the endpoints' check below would only compare the metadata with
        // itself.
        if let Some(metadata) =
            fetch_document::<ServerMetadata>(&url, SERVER_METADATA, steps).await?
        {
            let on_origin =
                Url::parse(&metadata.issuer).is_ok_and(|issuer| issuer.origin() == server.origin());
            if !on_origin {
                return Err(DiscoveryError::IssuerOffOrigin {
                    url,
                    issuer: metadata.issuer,
                    origin,
                });
            }
            check_endpoints(server, &metadata)?;
            return Ok(Discovered {
                resource: None,
                server: metadata,
                source: Source::LegacyMetadata,
            });
        }
    }
    steps.push(AuthStep {
        step: "default endpoints",
        url: format!("{origin}/authorize"),
        outcome:
            "no metadata anywhere: using the default endpoints /authorize, /token and /register"
                .to_owned(),
    });
    Ok(Discovered {
        resource: None,
        server: ServerMetadata {
            issuer: origin.clone(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            scopes_supported: Vec::new(),
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
        },
        source: Source::LegacyDefaults,
    })
}

/// The metadata URLs of an issuer, in the spec's order: with a path, RFC 8414's inserted form,
/// OpenID's inserted form, then OpenID's appended form; without one, the two root documents.
fn server_metadata_urls(issuer: &Url) -> Vec<String> {
    let origin = issuer.origin().ascii_serialization();
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// GETs one metadata document: `Some` for a 200 with a JSON object of the right shape, `None`
/// for an answer that says it is not there (4xx), an error for anything that breaks discovery.
async fn fetch_document<T: serde::de::DeserializeOwned>(
    url: &str,
    kind: &'static str,
    steps: &mut Vec<AuthStep>,
) -> Result<Option<T>, DiscoveryError> {
    let mut step = |outcome: String| {
        steps.push(AuthStep {
            step: kind,
            url: url.to_owned(),
            outcome,
        })
    };
    let fetched = match fetch::get(url, &[ACCEPT_JSON, PROTOCOL_VERSION]).await {
        Ok(fetched) => fetched,
        Err(err) => {
            step(err.to_string());
            return Err(err.into());
        }
    };
    if fetched.status != 200 {
        step(format!("HTTP {}", fetched.status));
        if (400..500).contains(&fetched.status) {
            return Ok(None);
        }
        return Err(DiscoveryError::Status {
            url: url.to_owned(),
            status: fetched.status,
        });
    }
    if !fetched.is_json() {
        let err = DiscoveryError::NotJson {
            url: url.to_owned(),
            content_type: fetched.content_type,
        };
        step(err.to_string());
        return Err(err);
    }
    match serde_json::from_slice::<T>(&fetched.body) {
        Ok(document) => {
            step("found".to_owned());
            Ok(Some(document))
        }
        Err(source) => {
            let err = DiscoveryError::Malformed {
                url: url.to_owned(),
                source,
            };
            step(err.to_string());
            Err(err)
        }
    }
}

/// The resource metadata must describe the server asked (RFC 9728 §3.3): same origin, and the
/// server's path at or under the resource's path. Else a token would be asked for someone else.
fn check_resource(server: &Url, resource: &str) -> Result<(), DiscoveryError> {
    let mismatch = || DiscoveryError::OtherResource {
        resource: resource.to_owned(),
        server: server.to_string(),
    };
    let resource_url = Url::parse(resource).map_err(|_| mismatch())?;
    if resource_url.origin() != server.origin() {
        return Err(mismatch());
    }
    let prefix = resource_url.path().trim_end_matches('/');
    let path = server.path();
    let under = path == prefix
        || path.trim_end_matches('/') == prefix
        || path.starts_with(&format!("{prefix}/"));
    if !under {
        return Err(mismatch());
    }
    Ok(())
}

/// Tokens and client secrets go only to the issuer's own origin, and only over https (plain
/// http only on this machine); no endpoint of a remote server's authorization server is on
/// this machine or a private network.
fn check_endpoints(server: &Url, metadata: &ServerMetadata) -> Result<(), DiscoveryError> {
    let issuer = Url::parse(&metadata.issuer).map_err(|source| DiscoveryError::IssuerNotAUrl {
        issuer: metadata.issuer.clone(),
        source,
    })?;
    check_secure(&issuer)?;
    check_reach(server, &issuer)?;
    let endpoints = [
        ("token_endpoint", Some(&metadata.token_endpoint)),
        (
            "registration_endpoint",
            metadata.registration_endpoint.as_ref(),
        ),
    ];
    for (key, endpoint) in endpoints {
        let Some(endpoint) = endpoint else { continue };
        let url = Url::parse(endpoint).map_err(|source| DiscoveryError::EndpointNotAUrl {
            key,
            endpoint: endpoint.clone(),
            source,
        })?;
        if url.origin() != issuer.origin() {
            return Err(DiscoveryError::EndpointOffOrigin {
                issuer: metadata.issuer.clone(),
                key,
                endpoint: endpoint.clone(),
            });
        }
    }
    if let Some(endpoint) = &metadata.authorization_endpoint {
        let url = Url::parse(endpoint).map_err(|source| DiscoveryError::EndpointNotAUrl {
            key: "authorization_endpoint",
            endpoint: endpoint.clone(),
            source,
        })?;
        check_secure(&url)?;
        check_reach(server, &url)?;
    }
    Ok(())
}

/// https, or http to this machine (development servers).
pub(crate) fn check_secure(url: &Url) -> Result<(), DiscoveryError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        _ => Err(DiscoveryError::NotSecure(url.to_string())),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A URL that the metadata of the MCP server at `server` names may be on this machine or a
/// private network only when the server is too: a remote server must not turn formwork into
/// its probe of the person's machine and network. The host is judged as written (an IP
/// address, or a `localhost` name); a name that DNS resolves to a private address is not.
fn check_reach(server: &Url, url: &Url) -> Result<(), DiscoveryError> {
    let Some(kind) = local_host_kind(url) else {
        return Ok(());
    };
    if local_host_kind(server).is_some() {
        return Ok(());
    }
    Err(DiscoveryError::Reach {
        url: url.to_string(),
        kind,
        server: server.to_string(),
    })
}

/// What kind of local host `url` names, as its host is written: `None` for any other.
fn local_host_kind(url: &Url) -> Option<&'static str> {
    match url.host()? {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (name == "localhost" || name.ends_with(".localhost"))
                .then_some("this machine (localhost)")
        }
        url::Host::Ipv4(ip) => ipv4_kind(ip),
        url::Host::Ipv6(ip) => match ip.to_ipv4_mapped() {
            Some(mapped) => ipv4_kind(mapped),
            None if ip.is_loopback() => Some("this machine (a loopback address)"),
            None if ip.is_unspecified() => Some("this machine (the unspecified address)"),
            None if ip.is_unique_local() => Some("a private network"),
            None if ip.is_unicast_link_local() => Some("a link-local network"),
            None => None,
        },
    }
}

fn ipv4_kind(ip: std::net::Ipv4Addr) -> Option<&'static str> {
    if ip.is_loopback() {
        Some("this machine (a loopback address)")
    } else if ip.octets()[0] == 0 {
        // 0.0.0.0/8 reaches this machine on Linux.
        Some("this machine (the unspecified address)")
    } else if ip.is_private() {
        Some("a private network")
    } else if ip.is_link_local() {
        Some("a link-local network")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn url(text: &str) -> Url {
        Url::parse(text).unwrap()
    }

    #[test]
    fn metadata_urls_follow_the_spec_order() {
        assert_eq!(
            server_metadata_urls(&url("https://as.example/tenant1/")),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls(&url("https://as.example")),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    /// Resource metadata named in the clear (not loopback) is not read: whoever is on the way
    /// could name their own authorization server. A relative name is taken from the server's
    /// URL.
    #[tokio::test]
    async fn resource_metadata_named_over_plain_http_is_not_read() {
        let challenge = Challenge {
            resource_metadata: Some("http://metadata.example/prm".into()),
            ..Challenge::default()
        };
        let mut steps = Vec::new();
        // Nothing listens on port 1: the well-known URLs after it fail at once.
        let found = resource_metadata("http://127.0.0.1:1/mcp", &challenge, &mut steps).await;
        assert!(found.is_none());
        assert_eq!(steps[0].url, "http://metadata.example/prm");
        assert_eq!(
            steps[0].outcome,
            "not read: http://metadata.example/prm is not https; formwork signs in only over https (or plain http to localhost)"
        );
        assert_eq!(steps.len(), 3, "{steps:?}");
        let relative = Challenge {
            resource_metadata: Some("/prm".into()),
            ..Challenge::default()
        };
        assert_eq!(
            candidate_resource_metadata_urls(&url("https://mcp.example/mcp"), &relative)[0],
            "https://mcp.example/prm"
        );
    }

    /// The same holds on the way every 401 takes (`discover`), not only for `formwork login`'s
    /// look without a challenge.
    #[tokio::test]
    async fn discovery_after_a_401_does_not_read_resource_metadata_named_over_plain_http() {
        let challenge = Challenge {
            resource_metadata: Some("http://metadata.example/prm".into()),
            ..Challenge::default()
        };
        let mut steps = Vec::new();
        let discovered = discover("http://127.0.0.1:1/mcp", &challenge, None, &mut steps).await;
        assert!(discovered.is_err());
        assert_eq!(steps[0].url, "http://metadata.example/prm");
        assert_eq!(
            steps[0].outcome,
            "not read: http://metadata.example/prm is not https; formwork signs in only over https (or plain http to localhost)"
        );
        assert!(
            steps[1..]
                .iter()
                .all(|step| step.url.starts_with("http://127.0.0.1:1/")),
            "{steps:?}"
        );
    }

    #[test]
    fn the_resource_must_cover_the_server() {
        let server = url("https://mcp.example/mcp");
        assert!(check_resource(&server, "https://mcp.example/mcp").is_ok());
        assert!(check_resource(&server, "https://mcp.example/").is_ok());
        assert!(check_resource(&server, "https://mcp.example").is_ok());
        assert!(check_resource(&server, "https://mcp.example/mc").is_err());
        assert!(check_resource(&server, "https://mcp.example/mcp/v2").is_err());
        assert_eq!(
            check_resource(&server, "https://evil.example.com/mcp")
                .unwrap_err()
                .to_string(),
            "the protected resource metadata is for `https://evil.example.com/mcp`, not for https://mcp.example/mcp; formwork does not sign in to it"
        );
    }

    #[test]
    fn credentials_go_only_to_the_issuers_origin_over_https() {
        let metadata = |token: &str| ServerMetadata {
            issuer: "https://as.example".into(),
            authorization_endpoint: Some("https://login.example/authorize".into()),
            token_endpoint: token.into(),
            registration_endpoint: None,
            scopes_supported: Vec::new(),
            code_challenge_methods_supported: None,
            token_endpoint_auth_methods_supported: None,
            client_id_metadata_document_supported: false,
        };
        let server = url("https://mcp.example/mcp");
        assert!(check_endpoints(&server, &metadata("https://as.example/token")).is_ok());
        assert_eq!(
            check_endpoints(&server, &metadata("https://collector.example/token"))
                .unwrap_err()
                .to_string(),
            "the authorization server https://as.example names a token_endpoint on another origin (https://collector.example/token); formwork sends credentials only to the issuer's origin"
        );
        assert!(check_secure(&url("http://127.0.0.1:9/x")).is_ok());
        assert!(check_secure(&url("http://localhost/x")).is_ok());
        assert!(check_secure(&url("http://as.example/x")).is_err());
    }

    /// Which URLs a server's metadata may send formwork to: anywhere from a server on this
    /// machine or a private network; from any other, nowhere local, judged by the host as
    /// written.
    #[test]
    fn a_remote_servers_metadata_may_not_point_into_local_networks() {
        let check = |server: &str, target: &str, expected: Result<(), &str>| {
            assert_eq!(
                check_reach(&url(server), &url(target)).map_err(|err| err.to_string()),
                expected.map_err(|kind| format!(
                    "{} is on {kind}, and the server {} is not on this machine or a private network: a remote server's metadata may not send formwork there",
                    url(target),
                    url(server)
                )),
                "{server} -> {target}"
            );
        };
        let remote = "https://mcp.example/mcp";
        let this_machine = "this machine (a loopback address)";
        check(remote, "https://as.example/", Ok(()));
        check(remote, "https://8.8.8.8/", Ok(()));
        check(remote, "https://172.32.0.1/", Ok(()));
        check(remote, "https://[2001:db8::1]/", Ok(()));
        check(remote, "https://localhost.example/", Ok(()));
        check(remote, "http://127.0.0.1:9/token", Err(this_machine));
        check(remote, "http://127.255.0.3/", Err(this_machine));
        check(remote, "https://0x7f.1/", Err(this_machine));
        check(remote, "http://[::1]:8080/", Err(this_machine));
        check(remote, "https://[::ffff:127.0.0.1]/", Err(this_machine));
        check(remote, "http://LOCALHOST/", Err("this machine (localhost)"));
        check(
            remote,
            "https://auth.localhost./",
            Err("this machine (localhost)"),
        );
        check(
            remote,
            "https://0.0.0.0/",
            Err("this machine (the unspecified address)"),
        );
        check(
            remote,
            "https://[::]/",
            Err("this machine (the unspecified address)"),
        );
        check(remote, "https://10.1.2.3/", Err("a private network"));
        check(remote, "https://172.16.0.1/", Err("a private network"));
        check(remote, "https://172.31.255.255/", Err("a private network"));
        check(remote, "https://192.168.1.1/", Err("a private network"));
        check(remote, "https://[fd12::1]/", Err("a private network"));
        check(
            remote,
            "https://169.254.169.254/latest",
            Err("a link-local network"),
        );
        check(remote, "https://[fe80::1]/", Err("a link-local network"));
        // A server on this machine or a private network may use an authorization server there.
        for local in [
            "http://127.0.0.1:3000/mcp",
            "http://localhost:3000/mcp",
            "https://10.0.0.5/mcp",
            "https://[fd00::5]/mcp",
        ] {
            check(local, "http://127.0.0.1:9/token", Ok(()));
            check(local, "https://192.168.1.1/", Ok(()));
        }
    }

    /// The rule holds for each URL a remote server's metadata names: the resource metadata its
    /// challenge points at, the authorization servers of its resource metadata, and the
    /// authorization server's endpoints.
    #[tokio::test]
    async fn a_remote_servers_metadata_pointing_at_loopback_is_not_fetched() {
        let server = url("https://mcp.example/mcp");
        let challenge = Challenge {
            resource_metadata: Some("http://127.0.0.1:9/prm".into()),
            ..Challenge::default()
        };
        let mut steps = Vec::new();
        assert_eq!(
            resource_metadata_urls(&server, &challenge, &mut steps),
            [
                "https://mcp.example/.well-known/oauth-protected-resource/mcp",
                "https://mcp.example/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            steps,
            [AuthStep {
                step: RESOURCE_METADATA,
                url: "http://127.0.0.1:9/prm".into(),
                outcome: "not read: http://127.0.0.1:9/prm is on this machine (a loopback address), and the server https://mcp.example/mcp is not on this machine or a private network: a remote server's metadata may not send formwork there".into(),
            }]
        );

        // A listener that counts who connects: nobody may.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let local = format!("http://{}", listener.local_addr().unwrap());
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(socket);
            }
        });
        let known = ResourceMetadata {
            resource: "https://mcp.example/mcp".into(),
            authorization_servers: vec![local.clone()],
            scopes_supported: Vec::new(),
        };
        let mut steps = Vec::new();
        let discovered = discover(
            server.as_str(),
            &Challenge::default(),
            Some(known),
            &mut steps,
        )
        .await;
        assert_eq!(
            discovered.unwrap_err().to_string(),
            format!(
                "{local}/ is on this machine (a loopback address), and the server https://mcp.example/mcp is not on this machine or a private network: a remote server's metadata may not send formwork there"
            )
        );
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);

        let metadata = |endpoint: &str, key: &str| {
            let mut metadata = ServerMetadata {
                issuer: "https://as.example".into(),
                authorization_endpoint: Some("https://as.example/authorize".into()),
                token_endpoint: "https://as.example/token".into(),
                registration_endpoint: None,
                scopes_supported: Vec::new(),
                code_challenge_methods_supported: None,
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: false,
            };
            match key {
                "issuer" => metadata.issuer = endpoint.into(),
                "authorization_endpoint" => metadata.authorization_endpoint = Some(endpoint.into()),
                _ => unreachable!(),
            }
            metadata
        };
        assert_eq!(
            check_endpoints(&server, &metadata("https://192.168.0.1", "issuer"))
                .unwrap_err()
                .to_string(),
            "https://192.168.0.1/ is on a private network, and the server https://mcp.example/mcp is not on this machine or a private network: a remote server's metadata may not send formwork there"
        );
        assert_eq!(
            check_endpoints(
                &server,
                &metadata("http://localhost:8080/authorize", "authorization_endpoint")
            )
            .unwrap_err()
            .to_string(),
            "http://localhost:8080/authorize is on this machine (localhost), and the server https://mcp.example/mcp is not on this machine or a private network: a remote server's metadata may not send formwork there"
        );
    }
}
