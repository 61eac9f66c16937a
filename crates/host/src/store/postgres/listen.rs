//! What the other hosts of the database commit, as it is committed: `LISTEN formwork_events` on a
//! connection of its own.
//!
//! The schema's triggers notify every transcript entry (`<origin> <seq> <session>`) and every
//! session created or deleted (`<origin> created|deleted <session>`) in the writing transaction,
//! so a notice arrives only once its rows are committed, in commit order. Notices are lost only
//! while the listening connection is down: once it is back, [`StoreNotice::Resync`] says to
//! compare what the host holds with the store.

use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::config::Config;
use tokio_postgres::{AsyncMessage, Client, NoTls};
use tokio_util::sync::CancellationToken;

use crate::store::error::StoreError;

/// The channel the schema's triggers notify.
const CHANNEL: &str = "formwork_events";

/// The first wait before connecting again after the listening connection was lost; it doubles
/// up to [`LONGEST_RETRY`].
const FIRST_RETRY: Duration = Duration::from_millis(100);
const LONGEST_RETRY: Duration = Duration::from_secs(5);

/// What another host sharing the database committed ([`crate::store::Store::follow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreNotice {
    /// The session has a new transcript entry at `seq` (and all entries before it).
    Appended {
        /// The session.
        session: String,
        /// The entry's place in the session's transcript.
        seq: u64,
    },
    /// A session was created.
    Created {
        /// The session.
        session: String,
    },
    /// A session was deleted, with everything of it.
    Deleted {
        /// The session.
        session: String,
    },
    /// The listening connection was lost and is back: notices in between are lost, so what
    /// the host holds must be compared with the store ([`crate::store::Store::session_heads`]).
    Resync,
}

impl StoreNotice {
    /// The notice of a notification's payload, unless `own` (this store's mark) wrote it or it
    /// is not one of formwork's.
    fn parse(payload: &str, own: &str) -> Option<StoreNotice> {
        let mut parts = payload.splitn(3, ' ');
        let (origin, what, session) = (parts.next()?, parts.next()?, parts.next()?);
        if origin == own {
            return None;
        }
        let session = session.to_owned();
        Some(match what {
            "created" => StoreNotice::Created { session },
            "deleted" => StoreNotice::Deleted { session },
            seq => StoreNotice::Appended {
                session,
                seq: seq.parse().ok()?,
            },
        })
    }
}

/// Starts listening (returning once `LISTEN` is in force, so nothing committed after this
/// returns is missed) and keeps listening until the receiver is dropped or `closed` is
/// cancelled, connecting again whenever the connection is lost.
pub(crate) async fn follow(
    mut config: Config,
    origin: String,
    closed: CancellationToken,
) -> Result<mpsc::UnboundedReceiver<StoreNotice>, StoreError> {
    config.application_name(format!("formwork-listen-{origin}"));
    let (sender, receiver) = mpsc::unbounded_channel();
    let first = listen(&config, &origin, &sender).await?;
    tokio::spawn(async move {
        let (mut _client, mut driver) = first;
        loop {
            tokio::select! {
                _ = &mut driver => {}
                () = sender.closed() => return,
                () = closed.cancelled() => return,
            }
            let mut wait = FIRST_RETRY;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = sender.closed() => return,
                    () = closed.cancelled() => return,
                }
                match listen(&config, &origin, &sender).await {
                    Ok(again) => {
                        (_client, driver) = again;
                        break;
                    }
                    Err(err) => {
                        tracing::warn!(target: "formwork::store", %err, "listening to the store again failed; retrying");
                        wait = (wait * 2).min(LONGEST_RETRY);
                    }
                }
            }
            if sender.send(StoreNotice::Resync).is_err() {
                return;
            }
        }
    });
    Ok(receiver)
}

/// Connects, drives the connection on a task that forwards notices, and listens.
async fn listen(
    config: &Config,
    origin: &str,
    sender: &mpsc::UnboundedSender<StoreNotice>,
) -> Result<(Client, JoinHandle<()>), StoreError> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let sender = sender.clone();
    let own = origin.to_owned();
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(notification)) => {
                    let notice = StoreNotice::parse(notification.payload(), &own);
                    if let Some(notice) = notice
                        && sender.send(notice).is_err()
                    {
                        return;
                    }
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!(target: "formwork::store", %err, "the store's listening connection was lost");
                    return;
                }
            }
        }
    });
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    Ok((client, driver))
}

#[cfg(test)]
mod tests {
    use super::StoreNotice;

    #[test]
    fn notices_of_other_hosts_are_read_and_own_ones_left_out() {
        let appended = StoreNotice::parse("0a1b2c3d 12 s1 with spaces", "ffffffff");
        assert_eq!(
            appended,
            Some(StoreNotice::Appended {
                session: "s1 with spaces".to_owned(),
                seq: 12
            })
        );
        assert_eq!(
            StoreNotice::parse("0a1b2c3d created s2", "ffffffff"),
            Some(StoreNotice::Created {
                session: "s2".to_owned()
            })
        );
        assert_eq!(
            StoreNotice::parse("- deleted s3", "ffffffff"),
            Some(StoreNotice::Deleted {
                session: "s3".to_owned()
            })
        );
        assert_eq!(StoreNotice::parse("ffffffff 3 s1", "ffffffff"), None);
        assert_eq!(StoreNotice::parse("0a1b2c3d twelve s1", "ffffffff"), None);
        assert_eq!(StoreNotice::parse("0a1b2c3d 12", "ffffffff"), None);
    }
}
