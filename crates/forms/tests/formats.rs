//! `format` checks: everything accepted here is also accepted by ajv-formats (full mode), the TS SDK's
//! validator; some things ajv accepts are refused here on purpose (noted below).

#![allow(clippy::unwrap_used)]

use formwork_forms::parse_schema;
use serde_json::json;

/// Checks every text in `valid` passes and every text in `invalid` fails a string field with `format`.
fn check(format: &str, valid: &[&str], invalid: &[&str]) {
    let form = parse_schema(
        &json!({"type": "object", "properties": {"f": {"type": "string", "format": format}}}),
    )
    .unwrap();
    for text in valid {
        assert!(
            form.validate_field("f", &json!(text)).is_ok(),
            "{format}: {text:?} should be valid"
        );
    }
    for text in invalid {
        let errors = form.validate_field("f", &json!(text)).unwrap_err();
        assert_eq!(errors.len(), 1, "{format}: {text:?}");
    }
}

#[test]
fn email() {
    check(
        "email",
        &[
            "ada@example.com",
            "a.b+tag@sub.example.co",
            "x!#$%&'*+/=?^_`{|}~-@a-b.c0",
            "A@EXAMPLE.COM",
        ],
        &[
            "ada",
            "ada@",
            "@example.com",
            "ada@localhost", // ajv needs a dot in the domain too
            "ada@example.",
            "ada@-example.com",
            "ada@example-.com",
            ".ada@example.com",
            "ada.@example.com",
            "a..b@example.com",
            "ada@exa_mple.com",
            "a@b@example.com",
            "\"quoted\"@example.com", // valid RFC 5321, refused by ajv too
            "ädä@example.com",        // ajv refuses non-ASCII as well
            "ada@bücher.de",
            "ada@example.com ",
        ],
    );
}

#[test]
fn uri() {
    check(
        "uri",
        &[
            "https://example.com",
            "https://example.com/a/b?c=d&e#f",
            "http://user:pw@host:8080/p",
            "http://[::1]:80/",
            "http://[v1.fe]/",
            "http://192.168.0.1/",
            "file:///etc/hosts",
            "mailto:ada@example.com",
            "urn:isbn:0451450523",
            "a:b",
            "x:/",
            "https://example.com/%20space",
            "HTTPS://EXAMPLE.COM",
        ],
        &[
            "example.com",
            "/relative/path",
            "//example.com",
            "",
            "1http://example.com",
            "https://exa mple.com",
            "https://example.com/<>",
            "https://example.com/%zz",
            "https://[::g]/",
            "https://host:80a/",
            "mailto:",
            "a:?q",
            "https://bücher.de/", // IRIs are not URIs
            "http://[::1/",
        ],
    );
}

#[test]
fn date() {
    check(
        "date",
        &["2026-01-31", "2024-02-29", "2000-02-29", "0001-12-31"],
        &[
            "2026-1-31",
            "2026-02-29",
            "1900-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-04-31",
            "2026-01-00",
            "26-01-31",
            "2026-01-31T00:00:00Z",
            "２０２６-01-31",
        ],
    );
}

#[test]
fn date_time() {
    check(
        "date-time",
        &[
            "2026-01-31T09:30:00Z",
            "2026-01-31t09:30:00z",
            "2026-01-31 09:30:00Z",
            "2026-01-31T09:30:00.123456+05:30",
            "2026-01-31T23:59:59-00:00",
        ],
        &[
            "2026-01-31T09:30:00", // a time zone is required
            "2026-01-31T24:00:00Z",
            "2026-01-31T09:60:00Z",
            "2026-01-31T23:59:60Z", // leap seconds: ajv may accept, forms refuse
            "2026-01-31T09:30:00+0530", // ajv accepts; forms want RFC 3339's colon
            "2026-01-31T09:30:00+24:00",
            "2026-01-31T09:30Z",
            "2026-01-31T09:30:00.Z",
            "2026-02-30T09:30:00Z",
            "2026-01-31",
            "2026-01-31T09:30:00Z ",
        ],
    );
}
