//! The string formats `email`, `uri`, `date` and `date-time`.
//!
//! Each check accepts a subset of what ajv-formats (full mode, the TS SDK's setting) accepts, so any
//! content forms produce also passes the server's Ajv check. Where the two differ, forms are stricter:
//! `date-time` needs a `T`, `t` or space separator and an offset written `Z` or `±hh:mm`, and leap
//! seconds are refused; `email` and `uri` must be ASCII.

use std::net::Ipv6Addr;

use crate::field::StringFormat;

/// Whether `text` is valid for `format`.
pub(crate) fn is_valid(format: StringFormat, text: &str) -> bool {
    match format {
        StringFormat::Email => is_email(text),
        StringFormat::Uri => is_uri(text),
        StringFormat::Date => is_date(text),
        StringFormat::DateTime => is_date_time(text),
    }
}

/// The validation message for a value that breaks `format`.
pub(crate) fn describe(format: StringFormat) -> &'static str {
    match format {
        StringFormat::Email => "must be an email address like name@example.com",
        StringFormat::Uri => "must be an absolute URI like https://example.com/page",
        StringFormat::Date => "must be a date like 2026-01-31",
        StringFormat::DateTime => "must be a date-time with a time zone, like 2026-01-31T09:30:00Z",
    }
}

/// `YYYY-MM-DD` with a real month and day (leap years included).
pub(crate) fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&b[0..4]), digits(&b[5..7]), digits(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
}

/// `YYYY-MM-DD` + `T`/`t`/space + `hh:mm:ss[.fraction]` + `Z`/`z`/`±hh:mm`.
pub(crate) fn is_date_time(text: &str) -> bool {
    let b = text.as_bytes();
    if b.len() < 20 || !matches!(b[10], b'T' | b't' | b' ') {
        return false;
    }
    is_date(&text[..10]) && is_time_with_zone(&b[11..])
}

fn is_time_with_zone(b: &[u8]) -> bool {
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let (Some(hour), Some(minute), Some(second)) =
        (digits(&b[0..2]), digits(&b[3..5]), digits(&b[6..8]))
    else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    let mut rest = &b[8..];
    if rest.first() == Some(&b'.') {
        let fraction = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if fraction == 0 {
            return false;
        }
        rest = &rest[1 + fraction..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            matches!((digits(&[*h1, *h2]), digits(&[*m1, *m2])), (Some(h), Some(m)) if h <= 23 && m <= 59)
        }
        _ => false,
    }
}

fn digits(b: &[u8]) -> Option<u32> {
    b.iter().try_fold(0u32, |acc, c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// `local@domain`: dot-separated atoms of RFC 5322 atext, then at least two DNS labels.
pub(crate) fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    let atext = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+/=?^_`{|}~-".contains(&c);
    let local_ok = local
        .split('.')
        .all(|atom| !atom.is_empty() && atom.bytes().all(atext));
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |label: &&str| {
        let b = label.as_bytes();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                first.is_ascii_alphanumeric()
                    && last.is_ascii_alphanumeric()
                    && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
            }
            _ => false,
        }
    };
    local_ok && labels.len() >= 2 && labels.iter().all(label_ok)
}

/// An RFC 3986 absolute URI (`scheme ":" hier-part ["?" query] ["#" fragment]`) with a non-empty
/// hier-part, which is what ajv-formats' `uri` demands.
pub(crate) fn is_uri(text: &str) -> bool {
    if !text.is_ascii() {
        return false;
    }
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut scheme_chars = scheme.bytes();
    let scheme_ok = scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return false;
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (hier, query) = match rest.split_once('?') {
        Some((hier, query)) => (hier, Some(query)),
        None => (rest, None),
    };
    let tail_ok = |part: Option<&str>| {
        part.is_none_or(|part| encoded_all(part, |c| is_pchar(c) || c == b'/' || c == b'?'))
    };
    !hier.is_empty() && hier_part_ok(hier) && tail_ok(query) && tail_ok(fragment)
}

fn hier_part_ok(hier: &str) -> bool {
    if let Some(after) = hier.strip_prefix("//") {
        let (authority, path) = match after.find('/') {
            Some(idx) => after.split_at(idx),
            None => (after, ""),
        };
        return authority_ok(authority) && segments_ok(path);
    }
    // path-absolute ("/" [segment-nz ...]) or path-rootless (segment-nz ...): the first segment
    // after an optional leading slash is non-empty unless the path is just "/".
    let path = hier.strip_prefix('/').unwrap_or(hier);
    if path.is_empty() {
        return hier == "/";
    }
    let mut parts = path.split('/');
    parts
        .next()
        .is_some_and(|first| !first.is_empty() && encoded_all(first, is_pchar))
        && parts.all(|segment| encoded_all(segment, is_pchar))
}

/// `*( "/" segment )`: empty, or starting with a slash.
fn segments_ok(path: &str) -> bool {
    path.is_empty()
        || (path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|segment| encoded_all(segment, is_pchar)))
}

fn authority_ok(authority: &str) -> bool {
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    if userinfo.is_some_and(|info| {
        !encoded_all(info, |c| is_unreserved(c) || is_sub_delim(c) || c == b':')
    }) {
        return false;
    }
    let (host, port) = if host_port.starts_with('[') {
        match host_port.find(']') {
            Some(end) => (&host_port[..=end], &host_port[end + 1..]),
            None => return false,
        }
    } else {
        match host_port.find(':') {
            Some(idx) => host_port.split_at(idx),
            None => (host_port, ""),
        }
    };
    let port_ok =
        port.is_empty() || (port.starts_with(':') && port[1..].bytes().all(|c| c.is_ascii_digit()));
    port_ok && host_ok(host)
}

fn host_ok(host: &str) -> bool {
    match host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
    {
        Some(literal) => literal.parse::<Ipv6Addr>().is_ok() || ip_future_ok(literal),
        None => encoded_all(host, |c| is_unreserved(c) || is_sub_delim(c)),
    }
}

/// `"v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )`.
fn ip_future_ok(literal: &str) -> bool {
    let Some(rest) = literal.strip_prefix(['v', 'V']) else {
        return false;
    };
    let Some((version, tail)) = rest.split_once('.') else {
        return false;
    };
    !version.is_empty()
        && version.bytes().all(|c| c.is_ascii_hexdigit())
        && !tail.is_empty()
        && tail
            .bytes()
            .all(|c| is_unreserved(c) || is_sub_delim(c) || c == b':')
}

/// Whether every byte of `text` passes `allowed`, or is part of a `%XX` escape.
fn encoded_all(text: &str, allowed: impl Fn(u8) -> bool) -> bool {
    let b = text.as_bytes();
    let mut idx = 0;
    while idx < b.len() {
        if b[idx] == b'%' {
            if !(b.get(idx + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(idx + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            idx += 3;
        } else if allowed(b[idx]) {
            idx += 1;
        } else {
            return false;
        }
    }
    true
}

fn is_unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

fn is_sub_delim(c: u8) -> bool {
    matches!(
        c,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

fn is_pchar(c: u8) -> bool {
    is_unreserved(c) || is_sub_delim(c) || matches!(c, b':' | b'@')
}
