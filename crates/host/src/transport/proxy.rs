//! Which HTTP proxy a request goes through, read from the environment as curl reads it.
//!
//! `https_proxy` (or `HTTPS_PROXY`) serves `https://` URLs, `http_proxy` (or `HTTP_PROXY`) serves
//! `http://` URLs, `all_proxy` (or `ALL_PROXY`) serves both when the first is unset, and
//! `no_proxy` (or `NO_PROXY`) lists the hosts reached directly. The lower-case variable wins
//! where both are set; an empty one counts as unset. Under CGI (`REQUEST_METHOD` set) `HTTP_PROXY`
//! is not read: the server sets it from a request's `Proxy:` header (the "httpoxy" hole, which is
//! why curl never reads it). The decision is pure
//! ([`ProxyConfig::from_env`] takes the lookup), so tests never touch the process environment.

use std::net::IpAddr;

use base64::Engine as _;

/// The proxy variables of one environment.
#[derive(Debug)]
pub(crate) struct ProxyConfig {
    https: Option<Setting>,
    http: Option<Setting>,
    all: Option<Setting>,
    no_proxy: Vec<Exception>,
}

/// A proxy variable that is set, and its value.
#[derive(Debug)]
struct Setting {
    variable: &'static str,
    value: String,
}

/// Why the proxy a variable names cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProxyError {
    #[error("{variable} names a {scheme}:// proxy; formwork speaks to proxies over http:// only")]
    NotHttp {
        variable: &'static str,
        scheme: String,
    },
    #[error("{variable} is not a usable proxy URL: {why}")]
    Unusable {
        variable: &'static str,
        why: &'static str,
    },
}

/// An HTTP proxy to go through.
#[derive(Debug)]
pub(crate) struct Proxy {
    /// Host name or IP address (an IPv6 one without brackets).
    pub host: String,
    pub port: u16,
    /// `Proxy-Authorization` value (`Basic …`), when the URL has credentials.
    pub authorization: Option<String>,
    /// The proxy's URL without its credentials, to name it in messages.
    pub shown: String,
}

impl ProxyConfig {
    /// Reads the variables through `lookup` (a name to its value, `None` when unset).
    pub(crate) fn from_env(lookup: impl Fn(&str) -> Option<String>) -> ProxyConfig {
        let get = |names: &[&'static str]| {
            names.iter().find_map(|&variable| {
                lookup(variable)
                    .filter(|value| !value.trim().is_empty())
                    .map(|value| Setting {
                        variable,
                        value: value.trim().to_owned(),
                    })
            })
        };
        let no_proxy = get(&["no_proxy", "NO_PROXY"]).map_or_else(Vec::new, |setting| {
            // As in curl, `*` means every host only as the whole value; in a list it is no entry.
            if setting.value == "*" {
                return vec![Exception {
                    pattern: Pattern::Everything,
                    port: None,
                }];
            }
            setting
                .value
                .split([',', ' '])
                .filter_map(Exception::parse)
                .collect()
        });
        ProxyConfig {
            https: get(&["https_proxy", "HTTPS_PROXY"]),
            http: if lookup("REQUEST_METHOD").is_some() {
                get(&["http_proxy"])
            } else {
                get(&["http_proxy", "HTTP_PROXY"])
            },
            all: get(&["all_proxy", "ALL_PROXY"]),
            no_proxy,
        }
    }

    /// The variables of this process.
    pub(crate) fn from_process() -> ProxyConfig {
        ProxyConfig::from_env(|name| std::env::var(name).ok())
    }

    /// The proxy for a request to `host:port` (`host` as the URL names it, an IPv6 address
    /// without brackets); `None`: straight to it. A proxy URL that formwork cannot use is an
    /// error, never a reason to go direct.
    pub(crate) fn proxy_for(
        &self,
        secure: bool,
        host: &str,
        port: u16,
    ) -> Result<Option<Proxy>, ProxyError> {
        let setting = if secure { &self.https } else { &self.http };
        let Some(setting) = setting.as_ref().or(self.all.as_ref()) else {
            return Ok(None);
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let address = host.parse::<IpAddr>().ok();
        if self
            .no_proxy
            .iter()
            .any(|exception| exception.matches(&host, address, port))
        {
            return Ok(None);
        }
        Proxy::parse(setting).map(Some)
    }
}

impl Proxy {
    /// `[http://][user[:password]@]host[:port]`; the port defaults to 1080, as with curl. A
    /// path after the authority is ignored.
    fn parse(setting: &Setting) -> Result<Proxy, ProxyError> {
        let Setting { variable, value } = setting;
        let rest = match value.split_once("://") {
            None => value.as_str(),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(ProxyError::NotHttp {
                    variable,
                    scheme: scheme.to_owned(),
                });
            }
        };
        let bad = |why| ProxyError::Unusable { variable, why };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let (credentials, address) = match authority.rsplit_once('@') {
            Some((credentials, address)) => (Some(credentials), address),
            None => (None, authority),
        };
        let (host, port) = if let Some(bracketed) = address.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or_else(|| bad("an unclosed `[`"))?;
            host.parse::<std::net::Ipv6Addr>()
                .map_err(|_| bad("not an IPv6 address in brackets"))?;
            (host, after.strip_prefix(':'))
        } else {
            match address.split_once(':') {
                Some((_, port)) if port.contains(':') => {
                    return Err(bad("an IPv6 address must be in brackets"));
                }
                Some((host, port)) => (host, Some(port)),
                None => (address, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            None => DEFAULT_PORT,
            Some(port) => port.parse::<u16>().map_err(|_| bad("a bad port"))?,
        };
        let authorization = credentials.map(|credentials| {
            let (user, password) = credentials.split_once(':').unwrap_or((credentials, ""));
            let mut pair = decode(user);
            pair.push(b':');
            pair.extend(decode(password));
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        let shown = if address.starts_with('[') {
            format!("http://[{host}]:{port}")
        } else {
            format!("http://{host}:{port}")
        };
        Ok(Proxy {
            host: host.to_owned(),
            port,
            authorization,
            shown,
        })
    }
}

/// curl's port for a proxy URL that names none.
const DEFAULT_PORT: u16 = 1080;

fn decode(text: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(text).collect()
}

/// One entry of `NO_PROXY`.
#[derive(Debug)]
struct Exception {
    pattern: Pattern,
    /// Only requests to this port, when the entry names one (`host:port`).
    port: Option<u16>,
}

#[derive(Debug)]
enum Pattern {
    /// `*`: no request goes through a proxy.
    Everything,
    /// A host name (lower case, without leading or trailing dot): it and its subdomains.
    Name(String),
    /// An address, or a range in CIDR notation: addresses in it.
    Network(IpAddr, u8),
}

impl Exception {
    /// An entry, or `None` for an empty or unreadable one (skipped, as curl does).
    fn parse(entry: &str) -> Option<Exception> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        if entry == "*" {
            return None;
        }
        // `[v6]`, `[v6]:port`, `[v6/len]`; else one colon separates a port, and more than one
        // is a bare IPv6 address or range (which has no room for a port).
        let (host, port) = if let Some(bracketed) = entry.strip_prefix('[') {
            let (host, after) = bracketed.split_once(']')?;
            match after {
                "" => (host, None),
                after => (host, Some(after.strip_prefix(':')?)),
            }
        } else if entry.matches(':').count() == 1 {
            let (host, port) = entry.split_once(':')?;
            (host, Some(port))
        } else {
            (entry, None)
        };
        let port = match port {
            None => None,
            Some(port) => Some(port.parse::<u16>().ok()?),
        };
        let pattern = if let Some((address, length)) = host.split_once('/') {
            let address = address.parse::<IpAddr>().ok()?;
            let length = length.parse::<u8>().ok()?;
            let bits = if address.is_ipv4() { 32 } else { 128 };
            if length > bits {
                return None;
            }
            Pattern::Network(address, length)
        } else if let Ok(address) = host.parse::<IpAddr>() {
            Pattern::Network(address, if address.is_ipv4() { 32 } else { 128 })
        } else {
            let name = host
                .strip_prefix('.')
                .unwrap_or(host)
                .trim_end_matches('.')
                .to_ascii_lowercase();
            if name.is_empty() {
                return None;
            }
            Pattern::Name(name)
        };
        Some(Exception { pattern, port })
    }

    /// `host` is lower case, without a trailing dot; `address` is it as an IP address, if it
    /// is one.
    fn matches(&self, host: &str, address: Option<IpAddr>, port: u16) -> bool {
        if self.port.is_some_and(|only| only != port) {
            return false;
        }
        match (&self.pattern, address) {
            (Pattern::Everything, _) => true,
            (Pattern::Name(name), None) => {
                host == name
                    || host
                        .strip_suffix(name.as_str())
                        .is_some_and(|front| front.ends_with('.'))
            }
            (Pattern::Network(network, length), Some(address)) => {
                in_network(address, *network, *length)
            }
            (Pattern::Name(_), Some(_)) | (Pattern::Network(..), None) => false,
        }
    }
}

/// Whether the first `length` bits of `address` are those of `network` (same family only).
fn in_network(address: IpAddr, network: IpAddr, length: u8) -> bool {
    let (address, network, bits) = match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(a.to_bits()), u128::from(n.to_bits()), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (a.to_bits(), n.to_bits(), 128),
        _ => return false,
    };
    let unmatched = bits - u32::from(length);
    // A shift by all 128 bits (`::/0`) gives `None` for both: every address matches.
    address.checked_shr(unmatched) == network.checked_shr(unmatched)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> ProxyConfig {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        ProxyConfig::from_env(|name| vars.get(name).cloned())
    }

    /// The proxy's `shown` URL for `url` (`direct` when none), or the error.
    fn route(vars: &[(&str, &str)], url: &str) -> String {
        let url = url::Url::parse(url).unwrap();
        let host = match url.host().unwrap() {
            url::Host::Ipv6(address) => address.to_string(),
            host => host.to_string(),
        };
        match config(vars).proxy_for(
            url.scheme() == "https",
            &host,
            url.port_or_known_default().unwrap(),
        ) {
            Ok(Some(proxy)) => proxy.shown,
            Ok(None) => "direct".to_owned(),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn each_scheme_reads_its_own_variable_then_all_proxy() {
        let both = [
            ("https_proxy", "http://secure:1"),
            ("http_proxy", "http://plain:2"),
            ("all_proxy", "http://all:3"),
        ];
        assert_eq!(route(&both, "https://a.test/mcp"), "http://secure:1");
        assert_eq!(route(&both, "http://a.test/mcp"), "http://plain:2");
        let all = [("ALL_PROXY", "http://all:3")];
        assert_eq!(route(&all, "https://a.test/mcp"), "http://all:3");
        assert_eq!(route(&all, "http://a.test/mcp"), "http://all:3");
        assert_eq!(route(&[], "https://a.test/mcp"), "direct");
        // An https proxy variable does not serve http URLs, nor the reverse.
        assert_eq!(
            route(&[("HTTPS_PROXY", "http://secure:1")], "http://a.test/"),
            "direct"
        );
        assert_eq!(
            route(&[("http_proxy", "http://plain:2")], "https://a.test/"),
            "direct"
        );
    }

    #[test]
    fn lower_case_wins_and_upper_case_http_proxy_is_ignored_under_cgi() {
        let vars = [
            ("https_proxy", "http://lower:1"),
            ("HTTPS_PROXY", "http://upper:1"),
            ("all_proxy", "http://lower-all:3"),
            ("ALL_PROXY", "http://upper-all:3"),
        ];
        assert_eq!(route(&vars, "https://a.test/"), "http://lower:1");
        assert_eq!(route(&vars, "http://a.test/"), "http://lower-all:3");
        assert_eq!(
            route(&[("HTTPS_PROXY", "http://upper:1")], "https://a.test/"),
            "http://upper:1"
        );
        assert_eq!(
            route(&[("HTTP_PROXY", "http://upper:2")], "http://a.test/"),
            "http://upper:2"
        );
        assert_eq!(
            route(
                &[
                    ("http_proxy", "http://lower:2"),
                    ("HTTP_PROXY", "http://upper:2")
                ],
                "http://a.test/"
            ),
            "http://lower:2"
        );
        // httpoxy: under CGI, HTTP_PROXY may come from a request's `Proxy:` header.
        let cgi = [("REQUEST_METHOD", "GET"), ("HTTP_PROXY", "http://evil:1")];
        assert_eq!(route(&cgi, "http://a.test/"), "direct");
        assert_eq!(
            route(
                &[("REQUEST_METHOD", "GET"), ("http_proxy", "http://plain:2")],
                "http://a.test/"
            ),
            "http://plain:2"
        );
        // An empty variable is unset: the upper-case one, then all_proxy, apply.
        assert_eq!(
            route(
                &[("https_proxy", ""), ("HTTPS_PROXY", "http://upper:1")],
                "https://a.test/"
            ),
            "http://upper:1"
        );
        assert_eq!(
            route(
                &[("http_proxy", " "), ("all_proxy", "http://all:3")],
                "http://a.test/"
            ),
            "http://all:3"
        );
        let no_proxy = [
            ("https_proxy", "http://p:1"),
            ("no_proxy", "lower.test"),
            ("NO_PROXY", "upper.test"),
        ];
        assert_eq!(route(&no_proxy, "https://lower.test/"), "direct");
        assert_eq!(route(&no_proxy, "https://upper.test/"), "http://p:1");
    }

    /// Whether a request to `url` bypasses the proxy under `NO_PROXY=no_proxy`.
    fn bypasses(no_proxy: &str, url: &str) -> bool {
        route(
            &[
                ("https_proxy", "http://p:1"),
                ("http_proxy", "http://p:1"),
                ("NO_PROXY", no_proxy),
            ],
            url,
        ) == "direct"
    }

    #[test]
    fn no_proxy_names_match_the_host_and_its_subdomains() {
        for entry in [
            "example.com",
            ".example.com",
            "EXAMPLE.com.",
            "other, example.com",
        ] {
            assert!(bypasses(entry, "https://example.com/"), "{entry}");
            assert!(bypasses(entry, "https://a.b.Example.COM/"), "{entry}");
            assert!(bypasses(entry, "https://example.com.:8443/"), "{entry}");
            assert!(!bypasses(entry, "https://badexample.com/"), "{entry}");
            assert!(!bypasses(entry, "https://example.com.evil/"), "{entry}");
        }
        assert!(bypasses("*", "https://anything.test/"));
        assert!(bypasses(" * ", "https://anything.test/"));
        assert!(!bypasses("a.test,*", "http://10.1.2.3/"), "`*` in a list");
        assert!(bypasses("a.test,*", "http://a.test/"));
        assert!(!bypasses("", "https://example.com/"));
        assert!(
            !bypasses("*.example.com", "https://a.example.com/"),
            "no globs"
        );
        // A name never matches an address, nor an address a name (nothing is resolved).
        assert!(!bypasses("localhost", "http://127.0.0.1/"));
        assert!(!bypasses("127.0.0.1", "http://localhost/"));
    }

    #[test]
    fn no_proxy_addresses_and_ranges_match_addresses() {
        assert!(bypasses("127.0.0.1", "http://127.0.0.1:8080/"));
        assert!(!bypasses("127.0.0.1", "http://127.0.0.2/"));
        assert!(bypasses("10.0.0.0/8", "https://10.200.3.4/"));
        assert!(!bypasses("10.0.0.0/8", "https://11.0.0.1/"));
        assert!(bypasses("192.168.1.0/24", "http://192.168.1.255/"));
        assert!(!bypasses("192.168.1.0/24", "http://192.168.2.1/"));
        assert!(bypasses("0.0.0.0/0", "http://8.8.8.8/"));
        assert!(!bypasses("0.0.0.0/0", "http://[::1]/"), "families differ");
        assert!(bypasses("::1", "http://[::1]:3000/"));
        assert!(bypasses("[::1]", "http://[::1]/"));
        assert!(bypasses("fd00::/8", "https://[fd12:3456::1]/"));
        assert!(!bypasses("fd00::/8", "https://[fe80::1]/"));
        assert!(bypasses("::/0", "https://[2001:db8::1]/"));
        assert!(bypasses("2001:db8::1/128", "https://[2001:db8::1]/"));
        assert!(!bypasses("2001:db8::1/128", "https://[2001:db8::2]/"));
        // Unreadable entries are skipped, not taken as names.
        assert!(!bypasses("10.0.0.0/33", "https://10.0.0.1/"));
        assert!(!bypasses("[::1", "http://[::1]/"));
    }

    #[test]
    fn no_proxy_ports_limit_an_entry_to_that_port() {
        assert!(bypasses("example.com:8443", "https://example.com:8443/"));
        assert!(!bypasses("example.com:8443", "https://example.com/"));
        assert!(bypasses("example.com:443", "https://a.example.com/"));
        assert!(bypasses("127.0.0.1:80", "http://127.0.0.1/"));
        assert!(!bypasses("127.0.0.1:80", "http://127.0.0.1:81/"));
        assert!(bypasses("[::1]:80", "http://[::1]/"));
        assert!(!bypasses("[::1]:80", "http://[::1]:81/"));
        assert!(bypasses("10.0.0.0/8:80", "http://10.0.0.1/"));
        assert!(!bypasses("example.com:http", "http://example.com/"));
    }

    fn proxy(value: &str) -> Result<Proxy, ProxyError> {
        config(&[("https_proxy", value)])
            .proxy_for(true, "a.test", 443)
            .map(Option::unwrap)
    }

    #[test]
    fn proxy_urls_as_curl_reads_them() {
        let plain = proxy("proxy.test").unwrap();
        assert_eq!(
            (
                plain.host.as_str(),
                plain.port,
                plain.authorization,
                plain.shown.as_str()
            ),
            ("proxy.test", 1080, None, "http://proxy.test:1080")
        );
        let full = proxy("HTTP://user:p%40ss%3Aword@proxy.test:80/ignored").unwrap();
        assert_eq!((full.host.as_str(), full.port), ("proxy.test", 80));
        assert_eq!(
            full.authorization.as_deref(),
            // base64 of `user:p@ss:word`
            Some("Basic dXNlcjpwQHNzOndvcmQ=")
        );
        assert_eq!(full.shown, "http://proxy.test:80", "no credentials shown");
        assert_eq!(
            proxy("user@proxy.test:3128")
                .unwrap()
                .authorization
                .as_deref(),
            Some("Basic dXNlcjo=")
        );
        let v6 = proxy("http://[::1]:3128").unwrap();
        assert_eq!(
            (v6.host.as_str(), v6.shown.as_str()),
            ("::1", "http://[::1]:3128")
        );
        assert_eq!(
            proxy("https://proxy.test:443").unwrap_err().to_string(),
            "https_proxy names a https:// proxy; formwork speaks to proxies over http:// only"
        );
        assert_eq!(
            proxy("socks5h://proxy.test").unwrap_err().to_string(),
            "https_proxy names a socks5h:// proxy; formwork speaks to proxies over http:// only"
        );
        assert_eq!(
            proxy("http://proxy.test:99999").unwrap_err().to_string(),
            "https_proxy is not a usable proxy URL: a bad port"
        );
        assert_eq!(
            proxy("http://::1:3128").unwrap_err().to_string(),
            "https_proxy is not a usable proxy URL: an IPv6 address must be in brackets"
        );
        assert_eq!(
            proxy("http://:3128").unwrap_err().to_string(),
            "https_proxy is not a usable proxy URL: no host"
        );
        // A host that bypasses the proxy never reads its URL.
        assert_eq!(
            route(
                &[("https_proxy", "socks5://p"), ("no_proxy", "a.test")],
                "https://a.test/"
            ),
            "direct"
        );
    }
}
