//! Where the store lives, as the person names it (`--store`, `[store] url`): a SQLite file's
//! path, or a PostgreSQL URL (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`). A bottom
//! module, so that both `config/` and `store/` may use it.
//!
//! **Invariant:** a password never leaves this type as text except to the connection itself;
//! `Display` and `Debug` leave it out, so logs and error messages cannot carry it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use percent_encoding::percent_decode_str;

/// The port PostgreSQL listens on unless the URL names another.
pub const DEFAULT_PG_PORT: u16 = 5432;

/// A store location: `--store` on the command line or `[store] url` in the config.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// A SQLite database file.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

/// A parsed `postgres://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct PgUrl {
    /// The role to connect as.
    pub user: String,
    /// The password in the URL, if any (else `PGPASSWORD` or a `.pgpass` file supply one).
    pub(crate) password: Option<String>,
    /// The server's host name or address.
    pub host: String,
    /// The server's port.
    pub port: u16,
    /// The database's name.
    pub database: String,
}

/// Why a store location does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreUrlError {
    /// Empty text.
    #[error("the store location is empty: give a SQLite file's path or a postgres:// URL")]
    Empty,
    /// A URL of a scheme the store does not speak.
    #[error("the store URL scheme {0:?} is not supported: use postgres:// or a file path")]
    Scheme(String),
    /// A `postgres://` URL that is not well formed or lacks a part.
    #[error("the store URL {shown} is invalid: {reason}")]
    Postgres {
        /// The URL as typed, without its password.
        shown: String,
        /// What is wrong.
        reason: &'static str,
    },
}

impl StoreUrl {
    /// Parses a path or a `postgres://`/`postgresql://` URL.
    pub fn parse(text: &str) -> Result<StoreUrl, StoreUrlError> {
        if text.is_empty() {
            return Err(StoreUrlError::Empty);
        }
        match text.split_once("://") {
            Some((scheme, _)) if scheme == "postgres" || scheme == "postgresql" => {
                PgUrl::parse(text).map(StoreUrl::Postgres)
            }
            Some((scheme, _)) if is_scheme(scheme) => Err(StoreUrlError::Scheme(scheme.to_owned())),
            _ => Ok(StoreUrl::Sqlite(PathBuf::from(text))),
        }
    }
}

/// Whether `text` looks like a URL scheme rather than part of a path (`./a://b` is a path).
fn is_scheme(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

impl PgUrl {
    fn parse(text: &str) -> Result<PgUrl, StoreUrlError> {
        let invalid = |reason| StoreUrlError::Postgres {
            shown: redact(text),
            reason,
        };
        let url = url::Url::parse(text).map_err(|_| invalid("not a URL"))?;
        if url.query().is_some() || url.fragment().is_some() {
            return Err(invalid(
                "query parameters are not supported (TLS and other options are not yet either)",
            ));
        }
        let decode = |part: &str| {
            percent_decode_str(part)
                .decode_utf8()
                .map(|text| text.into_owned())
                .map_err(|_| invalid("a part is not UTF-8 once percent-decoded"))
        };
        let user = decode(url.username())?;
        if user.is_empty() {
            return Err(invalid("it names no user (postgres://USER@HOST/DATABASE)"));
        }
        let password = url.password().map(decode).transpose()?;
        let host = match url.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(host) => host.to_string(),
            None => return Err(invalid("it names no host")),
        };
        if host.is_empty() {
            return Err(invalid("it names no host"));
        }
        let database = decode(url.path().trim_start_matches('/'))?;
        if database.is_empty() || database.contains('/') {
            return Err(invalid(
                "it names no database, or more than one path segment",
            ));
        }
        Ok(PgUrl {
            user,
            password,
            host,
            port: url.port().unwrap_or(DEFAULT_PG_PORT),
            database,
        })
    }
}

/// `text` with whatever sits between `://` and `@` after the first `:` left out.
fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let Some((userinfo, after)) = rest.rsplit_once('@') else {
        return text.to_owned();
    };
    let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
    format!("{scheme}://{user}@{after}")
}

impl FromStr for StoreUrl {
    type Err = StoreUrlError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        StoreUrl::parse(text)
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite(path) => write!(f, "{}", path.display()),
            StoreUrl::Postgres(url) => url.fmt(f),
        }
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            StoreUrl::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

impl fmt::Display for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "postgres://{}@{host}:{}/{}",
            self.user, self.port, self.database
        )
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}
