//! Where the OAuth tokens of remote plugins are kept between runs, as Codex's
//! `mcp_oauth_credentials_store`: the system keyring (macOS Keychain, Windows Credential
//! Manager, the Secret Service elsewhere) or a private JSON file in the data directory.
//!
//! An entry belongs to a server name **and** its URL: pointing a name at another URL does not
//! send the old URL's tokens there. A keyring entry is one item of the service
//! [`KEYRING_SERVICE`] whose account is `<name> <url>` and whose secret is the entry's JSON. The
//! file, [`CREDENTIALS_FILE`] in the data directory, is one JSON object whose keys are
//! `<name> <url>` and whose values are the entries; it is `0600`, and every write replaces it
//! whole (a temporary `0600` file beside it, fsynced, renamed over it), so a reader never sees
//! half of one. A write holds an exclusive `flock` on [`CREDENTIALS_LOCK_FILE`] beside it and
//! reads the file again under it before changing its own entry: two processes writing at once
//! (two `formwork login`s, two refreshes) each keep what the other wrote.
//!
//! `auto` takes the keyring when it answers, as Codex does: a write the keyring refuses (a
//! locked collection, say) goes to the file instead, a sign-in the keyring does not have is
//! looked up in the file, and forgetting one forgets it in both.
//!
//! **Invariant:** no token, secret or entry text reaches a log line or an error message.

use std::fmt;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

pub use crate::oauth_choices::CredentialsStoreMode;

use super::settings::redacted;

/// The keyring service every entry is filed under.
pub const KEYRING_SERVICE: &str = "formwork MCP credentials";

/// The file's name inside the data directory.
pub const CREDENTIALS_FILE: &str = "mcp-credentials.json";

/// The lock file beside it that every write of the file holds (never removed: a lock file that
/// is removed and made again can be held by two processes at once).
pub const CREDENTIALS_LOCK_FILE: &str = "mcp-credentials.json.lock";

/// How long a write waits for another process to release the file's lock: a write holds it
/// for a read and a write of a small file, so only a stuck process holds it this long.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Why the store cannot read, keep or forget a sign-in. No message holds a token, a secret
/// or the text of an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenStoreError {
    /// The keyring refused an operation (or has no store at all).
    #[error("cannot {action} the keyring: {reason}")]
    Keyring {
        /// `open`, `read`, `write` or `delete`.
        action: &'static str,
        /// The keyring's reason, which never holds the secret.
        reason: String,
    },
    /// The keyring's entry for a server holds something formwork did not write.
    #[error("the keyring entry for `{server_name}` is not a formwork sign-in ({kind})")]
    NotASignIn {
        /// The server the entry is filed under.
        server_name: String,
        /// What kind of JSON error, without the text it may quote.
        kind: &'static str,
    },
    /// The sign-in cannot be written as JSON for the keyring.
    #[error("cannot write the sign-in as JSON")]
    SignInNotJson,
    /// The lock file beside the credentials file cannot be made or locked.
    #[error("cannot lock {}: {reason}", lock.display())]
    Lock {
        /// The lock file.
        lock: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// Another process held the lock longer than a write may wait.
    #[error(
        "cannot write {}: another process has held its lock {} for {} s",
        path.display(),
        lock.display(),
        LOCK_WAIT.as_secs()
    )]
    LockHeld {
        /// The credentials file.
        path: PathBuf,
        /// Its lock file.
        lock: PathBuf,
    },
    /// The credentials file cannot be read.
    #[error("cannot read {}: {reason}", path.display())]
    Read {
        /// The credentials file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The credentials file is not one formwork wrote; only the position is given, since
    /// serde_json's message can quote the text it stopped at.
    #[error(
        "cannot read {}: not a formwork credentials file ({kind} at line {line} column {column})",
        path.display()
    )]
    NotCredentialsFile {
        /// The credentials file.
        path: PathBuf,
        /// What kind of JSON error.
        kind: &'static str,
        /// Where it stopped.
        line: usize,
        /// See `line`.
        column: usize,
    },
    /// The entries cannot be written as JSON.
    #[error("cannot write {}: not JSON", path.display())]
    EntriesNotJson {
        /// The credentials file.
        path: PathBuf,
    },
    /// The credentials file cannot be written.
    #[error("cannot write {}: {reason}", path.display())]
    Write {
        /// The credentials file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// The blocking task that used the store did not finish.
    #[error("{action} the store failed: {reason}")]
    Task {
        /// `reading` or `writing`.
        action: &'static str,
        /// Why the task ended.
        reason: String,
    },
}

/// What is kept of one sign-in.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredTokens {
    /// The server's name in the config.
    pub server_name: String,
    /// The server's URL when it signed in.
    pub url: String,
    /// The authorization server's issuer and token endpoint the tokens came from.
    pub issuer: String,
    /// See `issuer`.
    pub token_endpoint: String,
    /// The client the tokens were issued to (registered, pre-registered or a metadata URL).
    pub client_id: String,
    /// Its secret, when it has one (a dynamically registered confidential client).
    pub client_secret: Option<String>,
    /// How the client sends its secret to the token endpoint (`client_secret_basic` or
    /// `client_secret_post`), as at sign-in; refreshing does the same. Absent: Basic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth: Option<String>,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when one was issued.
    pub refresh_token: Option<String>,
    /// Unix seconds.
    pub expires_at: Option<u64>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The RFC 8707 resource the token was issued for.
    pub resource: Option<String>,
}

impl fmt::Debug for StoredTokens {
    /// Everything but the tokens and the secret, which show only whether they are there.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("server_name", &self.server_name)
            .field("url", &self.url)
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(self.client_secret.as_ref()))
            .field("token_endpoint_auth", &self.token_endpoint_auth)
            .field("access_token", &redacted(Some(&self.access_token)))
            .field("refresh_token", &redacted(self.refresh_token.as_ref()))
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .finish()
    }
}

/// The token store in force: the keyring or the file, decided on first use (for `auto`, asking
/// the keyring is a call over D-Bus or the platform's API: it happens where the store is used,
/// which the host does on a blocking thread, not where it is made).
#[derive(Debug)]
pub struct TokenStore {
    mode: CredentialsStoreMode,
    file: PathBuf,
    backend: std::sync::OnceLock<TokenPlace>,
    /// One lock per entry, held while a connection of this process refreshes its tokens.
    renewing: std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// Where tokens are kept: the store in force, and where one sign-in went (under `auto`, the
/// file when the keyring refused it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenPlace {
    Keyring,
    File(PathBuf),
}

impl fmt::Display for TokenPlace {
    /// `keyring` or `file <path>`, for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenPlace::Keyring => f.write_str("keyring"),
            TokenPlace::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

impl TokenStore {
    /// The store `mode` names, with its file in `data_dir`. For [`CredentialsStoreMode::Auto`]
    /// the first use asks the keyring once (reading an entry that does not exist) and takes the
    /// file when the keyring cannot answer.
    pub fn new(mode: CredentialsStoreMode, data_dir: &Path) -> TokenStore {
        TokenStore {
            mode,
            file: data_dir.join(CREDENTIALS_FILE),
            backend: std::sync::OnceLock::new(),
            renewing: std::sync::Mutex::default(),
        }
    }

    /// The lock a refresh of the tokens of `server_name` at `url` holds: connections that
    /// share the store (one per session) must not spend the same refresh token at once, since
    /// a server that rotates refresh tokens takes each only once. The one that waited reads
    /// the store again and takes the renewed tokens.
    pub(crate) fn renewal_lock(&self, server_name: &str, url: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self
            .renewing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(locks.entry(entry_key(server_name, url)).or_default())
    }

    /// The store in force: for `auto`, decided on the first call.
    pub fn place(&self) -> &TokenPlace {
        self.backend.get_or_init(|| match self.mode {
            CredentialsStoreMode::Keyring => TokenPlace::Keyring,
            CredentialsStoreMode::File => TokenPlace::File(self.file.clone()),
            CredentialsStoreMode::Auto => match keyring_probe() {
                Ok(()) => TokenPlace::Keyring,
                Err(reason) => {
                    tracing::debug!(%reason, "no usable keyring; OAuth tokens go to the file");
                    TokenPlace::File(self.file.clone())
                }
            },
        })
    }

    /// The file behind the keyring: for `auto` when the keyring answers.
    fn file_behind(&self) -> Option<&Path> {
        let keyring = matches!(self.place(), TokenPlace::Keyring);
        (keyring && self.mode == CredentialsStoreMode::Auto).then_some(self.file.as_path())
    }

    /// The tokens of `server_name` at `url`, if any are kept.
    pub fn load(
        &self,
        server_name: &str,
        url: &str,
    ) -> Result<Option<StoredTokens>, TokenStoreError> {
        let key = entry_key(server_name, url);
        let tokens = match self.place() {
            TokenPlace::Keyring => match (load_keyring(&key, server_name), self.file_behind()) {
                (Ok(Some(tokens)), _) => tokens,
                (Ok(None), None) => return Ok(None),
                (Err(err), None) => return Err(err),
                (Ok(None), Some(file)) => match read_file(file)?.shift_remove(&key) {
                    Some(tokens) => tokens,
                    None => return Ok(None),
                },
                (Err(err), Some(file)) => match read_file(file)?.shift_remove(&key) {
                    Some(tokens) => tokens,
                    None => return Err(err),
                },
            },
            TokenPlace::File(path) => match read_file(path)?.shift_remove(&key) {
                Some(tokens) => tokens,
                None => return Ok(None),
            },
        };
        // An entry is only ever written under its own name and URL; anything else is not it.
        Ok((tokens.server_name == server_name && tokens.url == url).then_some(tokens))
    }

    /// Keeps `tokens` for their server name and URL, replacing what was kept for them; where
    /// they went.
    pub fn save(&self, tokens: &StoredTokens) -> Result<TokenPlace, TokenStoreError> {
        let key = entry_key(&tokens.server_name, &tokens.url);
        match self.place() {
            TokenPlace::Keyring => {
                let text =
                    serde_json::to_string(tokens).map_err(|_| TokenStoreError::SignInNotJson)?;
                let written = keyring_entry(&key)?
                    .set_password(&text)
                    .map_err(|err| keyring_error("write", &err));
                match (written, self.file_behind()) {
                    (Err(err), Some(file)) => {
                        tracing::warn!(target: "formwork::auth", %err, file = %file.display(), "the keyring refused the sign-in; it is kept in the file");
                        save_file(file, key, tokens)?;
                        Ok(TokenPlace::File(file.to_owned()))
                    }
                    (Ok(()), Some(file)) => {
                        // An older sign-in of the same server in the file would be read if the
                        // keyring ever lost this one. The keyring has the sign-in either way.
                        let _ = remove_from_file(file, &key);
                        Ok(TokenPlace::Keyring)
                    }
                    (written, None) => written.map(|()| TokenPlace::Keyring),
                }
            }
            TokenPlace::File(path) => {
                save_file(path, key, tokens)?;
                Ok(TokenPlace::File(path.clone()))
            }
        }
    }

    /// The authorization server refused the refresh token of `tokens` (spent or revoked): their
    /// entry is kept without it, so that it is never sent again. When the entry holds another
    /// refresh token by now (another process refreshed meanwhile, and the refused one was the
    /// old half of a rotation), it is left as it is and returned, to be used instead; nothing
    /// is written for an entry that is gone.
    pub fn forget_refresh_token(
        &self,
        tokens: &StoredTokens,
    ) -> Result<Option<StoredTokens>, TokenStoreError> {
        let key = entry_key(&tokens.server_name, &tokens.url);
        let mut spent = tokens.clone();
        spent.refresh_token = None;
        let mut newer = None;
        let mut forget = |entries: &mut IndexMap<String, StoredTokens>| match entries.get(&key) {
            Some(kept) if kept.refresh_token == tokens.refresh_token => {
                entries.insert(key.clone(), spent.clone());
                true
            }
            Some(kept) => {
                newer = Some(kept.clone());
                false
            }
            None => false,
        };
        match self.place() {
            TokenPlace::File(path) => {
                update_file(path, &mut forget)?;
            }
            // A keyring has no lock to hold across the look and the write; its entries are
            // one per sign-in, so no other server's is at stake.
            TokenPlace::Keyring => {
                let mut entries = IndexMap::new();
                if let Some(kept) = self.load(&tokens.server_name, &tokens.url)? {
                    entries.insert(key.clone(), kept);
                }
                if forget(&mut entries) {
                    self.save(&spent)?;
                }
            }
        }
        Ok(newer)
    }

    /// Forgets the tokens of `server_name` at `url`.
    ///
    /// Where they were (the keyring when the file behind it had some too); none when nowhere.
    pub fn delete(
        &self,
        server_name: &str,
        url: &str,
    ) -> Result<Option<TokenPlace>, TokenStoreError> {
        let key = entry_key(server_name, url);
        match self.place() {
            TokenPlace::Keyring => {
                let in_keyring = match keyring_entry(&key)?.delete_credential() {
                    Ok(()) => true,
                    Err(keyring::Error::NoEntry) => false,
                    Err(err) => return Err(keyring_error("delete", &err)),
                };
                let in_file = match self.file_behind() {
                    Some(file) => remove_from_file(file, &key)?.then(|| file.to_owned()),
                    None => None,
                };
                Ok(match (in_keyring, in_file) {
                    (true, _) => Some(TokenPlace::Keyring),
                    (false, file) => file.map(TokenPlace::File),
                })
            }
            TokenPlace::File(path) => {
                Ok(remove_from_file(path, &key)?.then(|| TokenPlace::File(path.clone())))
            }
        }
    }
}

/// The keyring's entry `key` of the server `server_name`, if it has one.
fn load_keyring(key: &str, server_name: &str) -> Result<Option<StoredTokens>, TokenStoreError> {
    let text = match keyring_entry(key)?.get_password() {
        Ok(text) => text,
        Err(keyring::Error::NoEntry) => return Ok(None),
        Err(err) => return Err(keyring_error("read", &err)),
    };
    serde_json::from_str::<StoredTokens>(&text)
        .map(Some)
        .map_err(|err| TokenStoreError::NotASignIn {
            server_name: server_name.to_owned(),
            kind: json_error_kind(&err),
        })
}

fn save_file(path: &Path, key: String, tokens: &StoredTokens) -> Result<(), TokenStoreError> {
    update_file(path, |entries| {
        entries.insert(key, tokens.clone());
        true
    })
    .map(|_| ())
}

/// Removes the entry `key` from the file; whether it was there.
fn remove_from_file(path: &Path, key: &str) -> Result<bool, TokenStoreError> {
    if !path.exists() {
        // Nothing to remove: no lock (nor directory) is made for nothing.
        return Ok(false);
    }
    update_file(path, |entries| entries.shift_remove(key).is_some())
}

/// Changes the file's entries under its lock: they are read again once the lock is held, and
/// written back when `change` says it changed them (which is returned). Another process's
/// write between our read and ours would otherwise be lost.
fn update_file(
    path: &Path,
    change: impl FnOnce(&mut IndexMap<String, StoredTokens>) -> bool,
) -> Result<bool, TokenStoreError> {
    let _lock = lock_file(path)?;
    let mut entries = read_file(path)?;
    let changed = change(&mut entries);
    if changed {
        write_file(path, &entries)?;
    }
    Ok(changed)
}

/// Takes the exclusive lock of the credentials file `path` (on [`CREDENTIALS_LOCK_FILE`]
/// beside it), waiting [`LOCK_WAIT`] at most; held until the returned value is dropped. The
/// kernel releases it when the process ends, however it ends.
fn lock_file(path: &Path) -> Result<Flock<File>, TokenStoreError> {
    let dir = parent_dir(path);
    let lock = dir.join(CREDENTIALS_LOCK_FILE);
    let failed = |err: std::io::Error| TokenStoreError::Lock {
        lock: lock.clone(),
        reason: err.to_string(),
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(failed)?;
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock)
        .map_err(failed)?;
    let started = Instant::now();
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => return Ok(locked),
            Err((unlocked, Errno::EWOULDBLOCK)) if started.elapsed() < LOCK_WAIT => {
                file = unlocked;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err((_, Errno::EWOULDBLOCK)) => {
                return Err(TokenStoreError::LockHeld {
                    path: path.to_owned(),
                    lock,
                });
            }
            Err((_, errno)) => return Err(failed(errno.into())),
        }
    }
}

/// The directory of the credentials file `path`.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// The account of a keyring entry and the key of a file entry. A server name has no spaces,
/// so the two parts cannot be confused.
fn entry_key(server_name: &str, url: &str) -> String {
    format!("{server_name} {url}")
}

/// Whether the keyring can answer: the platform store opens, and reading an entry that does
/// not exist says so (rather than failing).
fn keyring_probe() -> Result<(), TokenStoreError> {
    match keyring_entry("formwork probe")?.get_password() {
        Ok(_) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(err) => Err(keyring_error("read", &err)),
    }
}

fn keyring_entry(account: &str) -> Result<keyring::Entry, TokenStoreError> {
    keyring::Entry::new(KEYRING_SERVICE, account).map_err(|err| keyring_error("open", &err))
}

/// A keyring failure in words. The error's own text never holds the secret: only
/// `BadEncoding` and `BadDataFormat` carry the stored bytes, and they are named, not shown.
fn keyring_error(action: &'static str, err: &keyring::Error) -> TokenStoreError {
    let reason = match err {
        keyring::Error::BadEncoding(_) | keyring::Error::BadDataFormat(..) => {
            "the stored entry is not text formwork wrote".to_owned()
        }
        keyring::Error::NoDefaultStore => match keyring::Entry::store_status() {
            Err(cause) if !matches!(cause, keyring::Error::NoDefaultStore) => cause.to_string(),
            _ => err.to_string(),
        },
        other => other.to_string(),
    };
    TokenStoreError::Keyring { action, reason }
}

/// The file's entries; none when it does not exist.
fn read_file(path: &Path) -> Result<IndexMap<String, StoredTokens>, TokenStoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(IndexMap::new()),
        Err(err) => {
            return Err(TokenStoreError::Read {
                path: path.to_owned(),
                reason: err.to_string(),
            });
        }
    };
    serde_json::from_str(&text).map_err(|err| TokenStoreError::NotCredentialsFile {
        path: path.to_owned(),
        kind: json_error_kind(&err),
        line: err.line(),
        column: err.column(),
    })
}

/// Replaces the file with `entries`: a `0600` temporary file created exclusively beside it,
/// fsynced and renamed over it, then the directory fsynced. The caller holds the lock, which
/// made the directory (`0700`) if it was missing.
fn write_file(
    path: &Path,
    entries: &IndexMap<String, StoredTokens>,
) -> Result<(), TokenStoreError> {
    let failed = |err: std::io::Error| TokenStoreError::Write {
        path: path.to_owned(),
        reason: err.to_string(),
    };
    let dir = parent_dir(path);
    let text =
        serde_json::to_string_pretty(entries).map_err(|_| TokenStoreError::EntriesNotJson {
            path: path.to_owned(),
        })?;
    let (temp, file) = create_temp(dir).map_err(failed)?;
    let written = fill(file, &text).and_then(|()| std::fs::rename(&temp, path));
    if let Err(err) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(failed(err));
    }
    File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(failed)
}

fn fill(mut file: File, text: &str) -> std::io::Result<()> {
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")?;
    file.sync_all()
}

/// A new `0600` file beside the credentials file, created exclusively (so nothing already
/// there is followed or overwritten), under a name no other writer uses at the same time.
fn create_temp(dir: &Path) -> std::io::Result<(PathBuf, File)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let mut attempt = 0;
    loop {
        let temp = dir.join(format!(
            ".{CREDENTIALS_FILE}.{}.{nanos}.{attempt}.tmp",
            std::process::id()
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 16 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// What kind of JSON error, without the text it may quote.
fn json_error_kind(err: &serde_json::Error) -> &'static str {
    match err.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax => "not valid JSON",
        serde_json::error::Category::Data => "unexpected fields or values",
        serde_json::error::Category::Eof => "cut short",
    }
}
