//! `--store` of `serve`, `chat`, `call` and `demo`: where sessions are kept, a SQLite file's
//! path or a `postgres://USER@HOST:PORT/DATABASE` URL (password from the URL, `PGPASSWORD` or
//! `.pgpass`). The flag wins over `[store] url` in the config.

use std::fmt;
use std::path::Path;

use clap::Args;
use formwork_host::config::Config;
use formwork_host::store::{Store, StoreUrl};

/// `--store`.
#[derive(Args, Clone, Default)]
pub struct StoreArgs {
    /// Where sessions are kept: a SQLite file, or postgres://USER@HOST:PORT/DATABASE (the
    /// password from PGPASSWORD or ~/.pgpass; no TLS yet). Overrides `[store] url`.
    // Parsed here rather than by clap, whose error would repeat the value, password and all.
    #[arg(long, value_name = "URL_OR_PATH")]
    pub store: Option<String>,
}

/// Shows the URL without its password (or that it does not parse), never the text as given.
impl fmt::Debug for StoreArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self
            .store
            .as_deref()
            .map(|text| match StoreUrl::parse(text) {
                Ok(url) => url.to_string(),
                Err(_) => "<invalid>".to_owned(),
            });
        f.debug_struct("StoreArgs").field("store", &shown).finish()
    }
}

impl StoreArgs {
    /// The store named by the flag, else by the config; `None` when neither names one.
    pub fn named(&self, config: &Config) -> anyhow::Result<Option<StoreUrl>> {
        match &self.store {
            Some(text) => Ok(Some(StoreUrl::parse(text)?)),
            None => Ok(config.store.url.clone()),
        }
    }

    /// The store named by the flag or the config, else `formwork.db` in `data_dir`.
    pub fn url(&self, config: &Config, data_dir: &Path) -> anyhow::Result<StoreUrl> {
        Ok(self
            .named(config)?
            .unwrap_or_else(|| StoreUrl::Sqlite(Store::path_in(data_dir))))
    }
}

/// Opens the store at `url` with the lease `[store] lease_seconds` sets.
pub async fn connect(url: &StoreUrl, data_dir: &Path, config: &Config) -> anyhow::Result<Store> {
    let lease = config.store.lease.unwrap_or(Store::DEFAULT_LEASE);
    Ok(Store::connect_with_lease(url, data_dir, lease).await?)
}

#[cfg(test)]
mod tests {
    use super::StoreArgs;

    #[test]
    fn debug_shows_no_password() {
        let shown = |text: &str| {
            format!(
                "{:?}",
                StoreArgs {
                    store: Some(text.to_owned())
                }
            )
        };
        assert_eq!(
            shown("postgres://ada:s3cret@db/formwork"),
            r#"StoreArgs { store: Some("postgres://ada@db:5432/formwork") }"#
        );
        assert_eq!(
            shown("postgres://ada:s3cret@db/formwork?sslmode=require"),
            r#"StoreArgs { store: Some("<invalid>") }"#
        );
    }
}
