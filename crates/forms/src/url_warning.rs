//! Warnings about where a URL-mode link leads, worked out once here so that every UI shows the same.
//!
//! A plugin may send any absolute `http`/`https` URL. Some are legitimate yet deserve a plain word
//! before the person clicks: a link in clear text, or one that points into the person's own machine
//! or network, where a local service (another local server, a router's admin page) would receive the
//! visit. The host is judged as the `url` crate parsed it, so an address written as one integer, in
//! hex or in octal (`http://2130706433/`, `http://0x7f.1/`) is judged as the address it opens.
//! A host name other than `localhost` is not looked up: what it resolves to is not known here.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// One warning about a URL-mode link. Serialised as `{"code": "...", "message": "..."}`; the code
/// is stable, the message is the sentence to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum UrlWarning {
    /// The scheme is `http`: the page and what is typed into it travel unencrypted.
    PlainHttp,
    /// The host is this computer: `localhost`, a `*.localhost` name, 127.0.0.0/8, 0.0.0.0/8, `::1`
    /// or `::` (and their IPv4-mapped IPv6 forms).
    Loopback,
    /// The host is an address on a private, shared or link-local network: 10.0.0.0/8,
    /// 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, 169.254.0.0/16, `fc00::/7`, `fe80::/10`
    /// (and their IPv4-mapped IPv6 forms).
    PrivateAddress,
}

impl UrlWarning {
    /// The stable code: `plain_http`, `loopback` or `private_address`.
    pub fn code(self) -> &'static str {
        match self {
            UrlWarning::PlainHttp => "plain_http",
            UrlWarning::Loopback => "loopback",
            UrlWarning::PrivateAddress => "private_address",
        }
    }

    /// The sentence to show the person.
    pub fn message(self) -> &'static str {
        match self {
            UrlWarning::PlainHttp => {
                "The link uses plain http: what you see and type there is not encrypted."
            }
            UrlWarning::Loopback => {
                "The link leads to this computer (a loopback address), not to a site on the internet."
            }
            UrlWarning::PrivateAddress => {
                "The link leads to an address on a private or local network, not to a site on the internet."
            }
        }
    }
}

impl Serialize for UrlWarning {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("code", self.code())?;
        map.serialize_entry("message", self.message())?;
        map.end()
    }
}

/// The warnings for a parsed `http`/`https` URL, scheme first, then the host.
pub(crate) fn warnings(url: &url::Url) -> Vec<UrlWarning> {
    let mut warnings = Vec::new();
    if url.scheme() == "http" {
        warnings.push(UrlWarning::PlainHttp);
    }
    let place = match url.host() {
        Some(url::Host::Domain(name)) => domain_place(name),
        Some(url::Host::Ipv4(address)) => ipv4_place(address),
        Some(url::Host::Ipv6(address)) => ipv6_place(address),
        None => None,
    };
    warnings.extend(place);
    warnings
}

/// Names that lead to this computer: `localhost` and its subdomains, and the loopback names
/// that hosts files give (Debian's `localhost.localdomain`, `ip6-localhost`, `ip6-loopback`).
const LOOPBACK_NAMES: &[&str] = &["localhost.localdomain", "ip6-localhost", "ip6-loopback"];

fn domain_place(name: &str) -> Option<UrlWarning> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let loopback = name == "localhost"
        || name.ends_with(".localhost")
        || LOOPBACK_NAMES.contains(&name.as_str());
    loopback.then_some(UrlWarning::Loopback)
}

fn ipv4_place(address: Ipv4Addr) -> Option<UrlWarning> {
    let [a, b, ..] = address.octets();
    if a == 127 || a == 0 {
        return Some(UrlWarning::Loopback);
    }
    let private = a == 10
        || (a == 172 && (16..=31).contains(&b))
        || (a == 192 && b == 168)
        || (a == 100 && (64..=127).contains(&b))
        || (a == 169 && b == 254);
    private.then_some(UrlWarning::PrivateAddress)
}

fn ipv6_place(address: Ipv6Addr) -> Option<UrlWarning> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return ipv4_place(v4);
    }
    if address.is_loopback() || address.is_unspecified() {
        return Some(UrlWarning::Loopback);
    }
    let first = address.segments()[0];
    let private = (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80;
    private.then_some(UrlWarning::PrivateAddress)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use UrlWarning::{Loopback, PlainHttp, PrivateAddress};

    fn of(url: &str) -> Vec<UrlWarning> {
        warnings(&url::Url::parse(url).unwrap())
    }

    #[test]
    fn scheme() {
        assert_eq!(of("https://example.com/"), []);
        assert_eq!(of("http://example.com/"), [PlainHttp]);
        assert_eq!(of("HTTP://example.com/"), [PlainHttp]);
    }

    #[test]
    fn loopback_names_and_addresses() {
        for url in [
            "https://localhost/",
            "https://LOCALHOST:8080/",
            "https://localhost./",
            "https://app.localhost/",
            "https://a.b.localhost/",
            "https://localhost.localdomain/",
            "https://ip6-localhost/",
            "https://IP6-LOOPBACK:9/",
            "https://127.0.0.1/",
            "https://127.255.0.9/",
            "https://0.0.0.0/",
            "https://[::1]/",
            "https://[::]/",
            "https://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(of(url), [Loopback], "{url}");
        }
        assert_eq!(of("http://127.0.0.1:4000/"), [PlainHttp, Loopback]);
    }

    #[test]
    fn private_networks() {
        for url in [
            "https://10.0.0.1/",
            "https://10.255.255.255/",
            "https://172.16.0.1/",
            "https://172.31.255.1/",
            "https://192.168.1.1/",
            "https://100.64.0.1/",
            "https://100.127.0.1/",
            "https://169.254.169.254/",
            "https://[fc00::1]/",
            "https://[fd12:3456::1]/",
            "https://[fe80::1]/",
            "https://[febf::1]/",
            "https://[::ffff:192.168.0.1]/",
            "https://[::ffff:a9fe:a9fe]/",
        ] {
            assert_eq!(of(url), [PrivateAddress], "{url}");
        }
    }

    #[test]
    fn public_hosts_are_quiet() {
        for url in [
            "https://example.com/",
            "https://localhost.example/",
            "https://notlocalhost/",
            "https://8.8.8.8/",
            "https://172.15.0.1/",
            "https://172.32.0.1/",
            "https://192.169.0.1/",
            "https://100.63.0.1/",
            "https://100.128.0.1/",
            "https://169.255.0.1/",
            "https://[2001:db8::1]/",
            "https://[fec0::1]/",
            "https://[::ffff:8.8.8.8]/",
        ] {
            assert_eq!(of(url), [], "{url}");
        }
    }

    /// The `url` crate reads these as IPv4 addresses; they are judged as the address they open.
    #[test]
    fn numeric_forms_of_addresses() {
        assert_eq!(of("http://2130706433/"), [PlainHttp, Loopback]);
        assert_eq!(of("https://0x7f.1/"), [Loopback]);
        assert_eq!(of("https://0177.0.0.1/"), [Loopback]);
        assert_eq!(of("https://127.1/"), [Loopback]);
        assert_eq!(of("https://0/"), [Loopback]);
        assert_eq!(of("https://0xa000001/"), [PrivateAddress]);
        assert_eq!(of("https://3232235777/"), [PrivateAddress]);
        assert_eq!(of("https://0xc0.0250.1.1/"), [PrivateAddress]);
    }

    #[test]
    fn wire_form() {
        let json = serde_json::to_value([PlainHttp, Loopback, PrivateAddress]).unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                {"code": "plain_http", "message": "The link uses plain http: what you see and type there is not encrypted."},
                {"code": "loopback", "message": "The link leads to this computer (a loopback address), not to a site on the internet."},
                {"code": "private_address", "message": "The link leads to an address on a private or local network, not to a site on the internet."},
            ])
        );
        let back: Vec<UrlWarning> = serde_json::from_value(json).unwrap();
        assert_eq!(back, [PlainHttp, Loopback, PrivateAddress]);
    }
}
