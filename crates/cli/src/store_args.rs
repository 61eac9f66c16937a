//! `--store` of `serve`, `chat`, `call` and `demo`: where sessions are kept, a SQLite file's
//! path or a `postgres://USER@HOST:PORT/DATABASE` URL (password from the URL, `PGPASSWORD` or
//! `.pgpass`). The flag wins over `[store] url` in the config.

use std::path::Path;

use clap::Args;
use formwork_host::config::Config;
use formwork_host::store::{Store, StoreUrl};

/// `--store`.
#[derive(Args, Debug, Clone, Default)]
pub struct StoreArgs {
    /// Where sessions are kept: a SQLite file, or postgres://USER@HOST:PORT/DATABASE (the
    /// password from PGPASSWORD or ~/.pgpass; no TLS yet). Overrides `[store] url`.
    // Parsed here rather than by clap, whose error would repeat the value, password and all.
    #[arg(long, value_name = "URL_OR_PATH")]
    pub store: Option<String>,
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
