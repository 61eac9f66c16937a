//! The PostgreSQL engine: a database shared by the hosts (replicas) that name it.
//!
//! - **Committed before answered.** Each write runs in its own transaction on a pooled
//!   connection and returns once `COMMIT` returned; with `synchronous_commit = on` (forced per
//!   connection, whatever the server's default) that commit is on the server's disk, so nothing
//!   reaches a plugin before its commit, as on SQLite. A write once started is carried out even
//!   if the caller stops waiting (it runs on a task of its own).
//! - **No sweep at open.** Unlike SQLite, opening cancels nothing: other hosts may be serving
//!   the same database, and their pending forms are alive. Who may end what a dead host left
//!   needs leases, which this engine does not have yet; until then such rows stay pending.
//! - **No lock file, no files.** Uploads stay in the local data directory given at connect.
//! - **Plain TCP.** The connection has no TLS yet: use it on a trusted network or a local host.

mod credentials;
pub(crate) mod listen;
pub(crate) mod schema;
pub(crate) mod sql;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Transaction};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_postgres::NoTls;
use tokio_postgres::config::Config;
use tokio_util::sync::CancellationToken;

use super::error::StoreError;
use super::records::Stats;
use crate::store_url::PgUrl;
use listen::StoreNotice;

/// Connections a store keeps open at most.
const POOL_SIZE: usize = super::WRITES_AT_ONCE;

/// How long a running call's lease lasts unless [`Store::connect_with_lease`] says otherwise;
/// the store renews its calls' leases three times as often.
///
/// [`Store::connect_with_lease`]: crate::store::Store::connect_with_lease
pub(crate) const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// How long a new connection may take, so an unreachable server fails the start instead of
/// hanging it for the system's TCP timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An open PostgreSQL database: its connection pool.
#[derive(Debug)]
pub(crate) struct Postgres {
    pool: Pool,
    /// One permit per connection, taken by a write before it asks the pool: many writes may
    /// queue at once (a thousand forms arriving together), and each waits in this small future
    /// rather than in the pool's much larger one.
    writers: Arc<tokio::sync::Semaphore>,
    /// The URL without its password, for messages.
    shown: String,
    /// How to connect, for the listening connection (boxed: it is large, and read once).
    config: Box<Config>,
    /// This store's mark on the entries it writes (`transcript.origin`), random per open.
    origin: String,
    /// Cancelled at close: the listening connection ends.
    closed: CancellationToken,
    /// How long a running call's lease lasts.
    lease: Duration,
}

impl Postgres {
    /// Connects to `url` and migrates its database.
    pub(crate) async fn connect(url: &PgUrl, lease: Duration) -> Result<Postgres, StoreError> {
        // Renewed three times per lease: a shorter one would be renewed without pause.
        let lease = lease.max(Duration::from_millis(300));
        let shown = url.to_string();
        let origin = crate::instance::random_mark();
        let mut config = Config::new();
        config
            .user(&url.user)
            .host(&url.host)
            .port(url.port)
            .dbname(&url.database)
            .application_name("formwork")
            .connect_timeout(CONNECT_TIMEOUT)
            .options(format!(
                "-c synchronous_commit=on -c formwork.origin={origin} -c formwork.lease_ms={}",
                lease.as_millis()
            ));
        if let Some(password) = credentials::password(url, |name| std::env::var(name).ok()) {
            config.password(password);
        }
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|error| StoreError::Pool(error.to_string()))?;
        let mut client = pool.get().await.map_err(|error| match error {
            PoolError::Backend(source) => StoreError::Connect {
                database: shown.clone(),
                source,
            },
            other => pool_error(other),
        })?;
        schema::migrate(&mut client, &shown).await?;
        let postgres = Postgres {
            pool,
            writers: Arc::new(tokio::sync::Semaphore::new(POOL_SIZE)),
            shown,
            config: Box::new(config),
            origin,
            closed: CancellationToken::new(),
            lease,
        };
        postgres.renew_leases_while_open(lease);
        Ok(postgres)
    }

    /// Renews the leases of this store's running calls three times per `lease` until the store
    /// closes: while this process lives, no other replica takes its calls over.
    fn renew_leases_while_open(&self, lease: Duration) {
        let pool = self.pool.clone();
        let closed = self.closed.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(lease / 3);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = closed.cancelled() => return,
                }
                let renewed = async {
                    let mut client = pool.get().await.map_err(pool_error)?;
                    let tx = client.transaction().await?;
                    sql::renew_leases(&tx).await?;
                    tx.commit().await?;
                    Ok::<_, StoreError>(())
                };
                if let Err(err) = renewed.await {
                    tracing::warn!(target: "formwork::store", %err, "the leases of running calls were not renewed");
                }
            }
        });
    }

    /// This store's mark on what it writes.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// How long a running call's lease lasts.
    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }

    /// The notices of what other hosts commit, from now until the store closes (`listen.rs`).
    pub(crate) async fn follow(&self) -> Result<mpsc::UnboundedReceiver<StoreNotice>, StoreError> {
        listen::follow(
            (*self.config).clone(),
            self.origin.clone(),
            self.closed.clone(),
        )
        .await
    }

    /// The database's URL without its password.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Closes the pool: later calls fail with [`StoreError::Closed`].
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.pool.close();
    }

    /// Runs `op` in a transaction of its own and returns once it committed.
    pub(crate) async fn write<T, F>(&self, stats: &Arc<Stats>, op: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'a> FnOnce(&'a Transaction<'a>) -> BoxFuture<'a, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let pool = self.pool.clone();
        let writers = Arc::clone(&self.writers);
        let stats = Arc::clone(stats);
        let task = tokio::spawn(async move {
            let _turn = writers.acquire().await.map_err(|_| StoreError::Closed)?;
            // Boxed: only the writes that hold a permit need room for the transaction.
            Box::pin(async move {
                let mut client = pool.get().await.map_err(pool_error)?;
                let tx = client.transaction().await?;
                let result = op(&tx).await;
                let result = match result {
                    Ok(value) => tx.commit().await.map(|()| value).map_err(StoreError::from),
                    // Dropping the transaction rolls it back.
                    Err(error) => Err(error),
                };
                stats.record(1, result.is_ok());
                result
            })
            .await
        });
        task.await.map_err(|_| StoreError::Closed)?
    }

    /// Runs `op` on a consistent, read-only snapshot.
    pub(crate) async fn read<T, F>(&self, op: F) -> Result<T, StoreError>
    where
        F: for<'a> FnOnce(&'a Transaction<'a>) -> BoxFuture<'a, Result<T, StoreError>>,
    {
        let mut client = self.pool.get().await.map_err(pool_error)?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let value = op(&tx).await?;
        tx.commit().await?;
        Ok(value)
    }
}

fn pool_error(error: PoolError) -> StoreError {
    match error {
        PoolError::Closed => StoreError::Closed,
        PoolError::Backend(source) => StoreError::Postgres(source),
        other => StoreError::Pool(other.to_string()),
    }
}
