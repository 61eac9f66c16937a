//! One server's authorization: the token its requests carry, and what happens when the server
//! refuses one (401: refresh, else sign in; 403 `insufficient_scope`: sign in again with more
//! scopes, a bounded number of times).
//!
//! The `oauth2` crate builds the authorization URL (PKCE S256, `state`) and makes the token
//! requests (code exchange, refresh, client credentials, client authentication); `jsonwebtoken`
//! signs `private_key_jwt` assertions. Discovery and dynamic client registration, which neither
//! crate offers, are here and in `discovery.rs`.

mod authorization_code;
mod client_credentials;
mod cross_app_access;
mod refresh;
mod token;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::agent::SignInAgent;
use super::challenge::{Challenge, split_scopes};
use super::discovery::{self, AuthStep, Discovered, ResourceMetadata};
use super::fetch;
use super::settings::{AuthSettings, Grant};
use super::store::{StoredTokens, TokenPlace, TokenStore, TokenStoreError};
use token::unix_now;

/// A token this close to its expiry is refreshed before it is sent.
const REFRESH_AHEAD: Duration = Duration::from_secs(30);
/// How long a failed sign-in answers the same challenge without trying again.
const FAILURE_HOLD: Duration = Duration::from_secs(5);
/// Sign-ins for more scopes (403 `insufficient_scope`) on one connection for one set of scopes
/// the server asks for, at most.
const MAX_STEP_UPS: u32 = 2;
const OFFLINE_ACCESS: &str = "offline_access";

/// Why a request could not be authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// The server needs a person to sign in, and nobody can here (a terminal command, say).
    /// `configured`: whether `server` names a server of the config, which `formwork login` needs.
    SignInNeeded {
        server: String,
        url: String,
        configured: bool,
    },
    /// The authorization failed at some step; the text says which and why.
    Failed(String),
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::SignInNeeded {
                server,
                configured: true,
                ..
            } => write!(
                f,
                "{server} needs you to sign in: run `formwork login {server}`"
            ),
            AuthError::SignInNeeded { url, .. } => write!(
                f,
                "{url} needs you to sign in, which formwork does for a configured server: \
                 add it as [mcp_servers.NAME] and run `formwork login NAME`"
            ),
            AuthError::Failed(reason) => f.write_str(reason),
        }
    }
}

impl std::error::Error for AuthError {}

/// The token of one MCP server, for every request of one connection to it.
pub struct Authorizer {
    server_name: String,
    server_url: String,
    /// Whether the config names the server (`formwork login` can sign in to it then).
    configured: bool,
    settings: AuthSettings,
    store: Option<Arc<TokenStore>>,
    agent: Option<Arc<dyn SignInAgent>>,
    state: tokio::sync::Mutex<State>,
    /// The header of the current token, its generation and expiry, read without waiting: a
    /// sign-in in progress holds `state` (for as long as a person takes) and must not hold up the
    /// connection's other messages that carry a good token (a form's answer, say).
    current: std::sync::Mutex<Option<Current>>,
    /// The newest generation a server answered without refusing it: a token that worked once
    /// and is refused later may be refreshed again; one refused at once may not.
    accepted: AtomicU64,
    /// Told `true` when a sign-in starts waiting for the person and `false` when it stops (the
    /// connection's request clocks stop meanwhile); one that answers `false` is gone and dropped.
    waiting_hooks: std::sync::Mutex<Vec<WaitingHook>>,
}

type WaitingHook = Box<dyn Fn(bool) -> bool + Send + Sync>;

/// While alive, a sign-in waits for the person: every hook heard `true`, and hears `false` when
/// it is dropped.
struct WaitingForPerson<'a>(&'a Authorizer);

impl<'a> WaitingForPerson<'a> {
    fn start(authorizer: &'a Authorizer) -> Self {
        authorizer.tell_waiting(true);
        WaitingForPerson(authorizer)
    }
}

impl Drop for WaitingForPerson<'_> {
    fn drop(&mut self) {
        self.0.tell_waiting(false);
    }
}

#[derive(Clone)]
struct Current {
    generation: u64,
    header: String,
    expires_at: Option<u64>,
}

#[derive(Default)]
struct State {
    loaded: bool,
    tokens: Option<StoredTokens>,
    /// Bumped with every new token, so that a refusal of an older one is not acted on twice.
    generation: u64,
    /// The token of this generation came from a refresh, or from a whole sign-in: a 401 to it
    /// is not answered by doing the same again.
    refreshed: Option<u64>,
    signed_in: Option<u64>,
    /// The scopes asked for in the last sign-in, and how many step-ups each set of scopes a
    /// server asked for (sorted, space-separated) brought about.
    requested: Vec<String>,
    step_ups: std::collections::HashMap<String, u32>,
    /// What the last discovery tried (for `formwork doctor` and `formwork login`).
    steps: Vec<AuthStep>,
    /// The last sign-in failed on this challenge: the same challenge gets the same answer for
    /// a moment, not another round of discovery or another card (a connection's opening
    /// requests all meet it); a later request tries again.
    failed: Option<(Challenge, AuthError, Instant)>,
    /// Where the last tokens were stored, or why they could not be (they last for this run
    /// only); none before any were kept or without a store.
    kept_in: Option<Result<TokenPlace, TokenStoreError>>,
}

impl Authorizer {
    pub fn new(
        server_name: impl Into<String>,
        server_url: impl Into<String>,
        settings: AuthSettings,
        store: Option<Arc<TokenStore>>,
        agent: Option<Arc<dyn SignInAgent>>,
    ) -> Authorizer {
        Authorizer {
            server_name: server_name.into(),
            server_url: server_url.into(),
            configured: true,
            settings,
            store,
            agent,
            state: tokio::sync::Mutex::new(State::default()),
            current: std::sync::Mutex::new(None),
            accepted: AtomicU64::new(0),
            waiting_hooks: std::sync::Mutex::default(),
        }
    }

    /// The authorizer of a server the config does not name (`--url`): one that needs a person to
    /// sign in says how to name it first.
    pub fn unconfigured(self) -> Authorizer {
        Authorizer {
            configured: false,
            ..self
        }
    }

    /// Calls `hook(true)` whenever a sign-in starts waiting for the person, and `hook(false)`
    /// when it stops; a hook that returns `false` is dropped.
    pub(crate) fn on_waiting_for_person(
        &self,
        hook: impl Fn(bool) -> bool + Send + Sync + 'static,
    ) {
        if let Ok(mut hooks) = self.waiting_hooks.lock() {
            hooks.push(Box::new(hook));
        }
    }

    fn tell_waiting(&self, waiting: bool) {
        if let Ok(mut hooks) = self.waiting_hooks.lock() {
            hooks.retain(|hook| hook(waiting));
        }
    }

    /// A request that carried the token of `generation` was not refused.
    pub(crate) fn accepted(&self, generation: u64) {
        self.accepted.fetch_max(generation, Ordering::Relaxed);
    }

    /// The `Authorization` value for the next request and its generation, refreshing a token
    /// about to expire first. `None` before any sign-in: the server's 401 starts one.
    pub(crate) async fn bearer(&self) -> Option<(u64, String)> {
        let current = self.current.lock().ok().and_then(|current| current.clone());
        if let Some(current) = current
            && current
                .expires_at
                .is_none_or(|at| at > unix_now() + REFRESH_AHEAD.as_secs())
        {
            return Some((current.generation, current.header));
        }
        let mut state = self.state.lock().await;
        self.load(&mut state).await;
        let tokens = state.tokens.as_ref()?;
        if expires_within(tokens, REFRESH_AHEAD)
            && tokens.refresh_token.is_some()
            && let Err(err) = self.refresh(&mut state).await
        {
            tracing::info!(target: "formwork::auth", server = %self.server_name, %err, "refreshing the token before it expires failed");
        }
        let tokens = state.tokens.as_ref()?;
        Some((state.generation, format!("Bearer {}", tokens.access_token)))
    }

    /// A request that carried the token of `generation` (or none) was refused with `status` and
    /// `www_authenticate`. `Ok` means: send it again, with [`Authorizer::bearer`]'s new token.
    pub(crate) async fn refused(
        &self,
        status: u16,
        www_authenticate: Option<&str>,
        generation: Option<u64>,
    ) -> Result<(), AuthError> {
        let challenge = Challenge::parse(www_authenticate);
        let mut state = self.state.lock().await;
        self.load(&mut state).await;
        if state.tokens.is_some() && generation != Some(state.generation) {
            // A newer token came while this request was out.
            return Ok(());
        }
        if state.tokens.is_none() {
            // Another process may have signed in since (`formwork login`).
            state.loaded = false;
            self.load(&mut state).await;
            if state.tokens.is_some() {
                return Ok(());
            }
        }
        if let Some((failed_on, err, when)) = &state.failed
            && *failed_on == challenge
            && when.elapsed() < FAILURE_HOLD
        {
            return Err(err.clone());
        }
        if status == 403 {
            let wanted = challenge.scopes();
            let mut asked = wanted.clone();
            asked.sort();
            let granted = wanted.iter().all(|scope| state.requested.contains(scope));
            let step_ups = state.step_ups.entry(asked.join(" ")).or_default();
            if granted || *step_ups >= MAX_STEP_UPS {
                return Err(AuthError::Failed(format!(
                    "{} refuses the request for want of scope (it asks for `{}`) even after signing in with the scopes it named",
                    self.server_name,
                    challenge.scope.as_deref().unwrap_or_default()
                )));
            }
            *step_ups += 1;
            let mut scopes = state.requested.clone();
            for scope in wanted {
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            return self
                .sign_in_locked(&mut state, &challenge, Some(scopes), None)
                .await;
        }
        if state.tokens.is_some() {
            let current = Some(state.generation);
            let worked = self.accepted.load(Ordering::Relaxed) >= state.generation;
            if (worked || (state.refreshed != current && state.signed_in != current))
                && state
                    .tokens
                    .as_ref()
                    .is_some_and(|t| t.refresh_token.is_some())
                && self.refresh(&mut state).await.is_ok()
            {
                return Ok(());
            }
            if state.signed_in == current && !worked {
                return Err(AuthError::Failed(format!(
                    "{} refused the token it had just issued (HTTP 401)",
                    self.server_name
                )));
            }
        }
        self.sign_in_locked(&mut state, &challenge, None, None)
            .await
    }

    /// Signs in from scratch (`formwork login`), whatever is stored, starting from the challenge
    /// the server gives `probe`, a request sent without a token, which carries `headers` (the
    /// server's configured ones, as every MCP request does). The caller writes `probe`: the
    /// transport knows no MCP message. Where the tokens were kept; none without a store.
    pub async fn sign_in(
        &self,
        probe: &[u8],
        headers: &[(String, String)],
    ) -> Result<Option<TokenPlace>, AuthError> {
        let (challenge, asked) = self.probe(probe, headers).await?;
        let mut state = self.state.lock().await;
        state.loaded = true;
        let mut known = None;
        if !asked {
            // No 401 to go by: only a server that publishes resource metadata asks for a
            // sign-in somewhere (for some calls); the 2025-03-26 guesses would lead nowhere.
            let mut steps = Vec::new();
            let found =
                discovery::resource_metadata(&self.server_url, &challenge, &mut steps).await;
            let Some(found) = found else {
                state.steps = steps;
                return Err(self.failed(
                    "it answered `initialize` without asking for a sign-in, and publishes no protected resource metadata: there is nothing to sign in to",
                ));
            };
            // Discovery goes on from it: the document is not fetched again.
            known = Some((found, steps));
        }
        self.sign_in_locked(&mut state, &challenge, None, known)
            .await?;
        // A sign-in of its own (`formwork login`) is for later runs: tokens that could not be
        // kept are a failure, not a success that the next run does not see.
        match (state.kept_in.take(), &self.store) {
            (Some(Err(err)), Some(store)) => Err(self.failed(format!(
                "the tokens could not be kept in the {}: {err}",
                store.place()
            ))),
            (kept_in, _) => Ok(kept_in.and_then(Result::ok)),
        }
    }

    /// The challenge of `body` sent without a token, and whether it was refused (401).
    async fn probe(
        &self,
        body: &[u8],
        configured: &[(String, String)],
    ) -> Result<(Challenge, bool), AuthError> {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        headers.extend(
            configured
                .iter()
                .filter(|(name, _)| {
                    !name.eq_ignore_ascii_case("content-type")
                        && !name.eq_ignore_ascii_case("accept")
                })
                .map(|(name, value)| (name.as_str(), value.as_str())),
        );
        let fetched = fetch::exchange("POST", &self.server_url, &headers, body)
            .await
            .map_err(|err| self.failed(err))?;
        Ok(match fetched.status {
            401 => (Challenge::parse(fetched.www_authenticate.as_deref()), true),
            _ => (Challenge::default(), false),
        })
    }

    /// Whether the last sign-in stopped because nobody here can sign in (a person must, in a
    /// session or with `formwork login`).
    pub async fn needs_sign_in(&self) -> bool {
        matches!(
            self.state.lock().await.failed,
            Some((_, AuthError::SignInNeeded { .. }, _))
        )
    }

    /// What the last sign-in tried, in order: discovery, then the sign-in itself.
    pub async fn steps(&self) -> Vec<AuthStep> {
        self.state.lock().await.steps.clone()
    }

    async fn load(&self, state: &mut State) {
        if state.loaded {
            return;
        }
        state.loaded = true;
        if let Some(tokens) = self.stored_tokens().await {
            state.requested = tokens.scopes.clone();
            state.tokens = Some(tokens);
            state.generation += 1;
            self.publish(state);
        }
    }

    /// This server's sign-in as the store has it now.
    async fn stored_tokens(&self) -> Option<StoredTokens> {
        let store = Arc::clone(self.store.as_ref()?);
        let (name, url) = (self.server_name.clone(), self.server_url.clone());
        // A keyring answers over D-Bus or the platform's API, and may take a moment: never on
        // the runtime's thread.
        let loaded = tokio::task::spawn_blocking(move || store.load(&name, &url))
            .await
            .unwrap_or_else(|err| {
                Err(TokenStoreError::Task {
                    action: "reading",
                    reason: err.to_string(),
                })
            });
        let stored = loaded.unwrap_or_else(|err| {
            tracing::warn!(target: "formwork::auth", server = %self.server_name, %err, "the stored sign-in could not be read");
            None
        })?;
        // Refreshing them would send the client's credentials to their issuer: with
        // `oauth.issuer` set, only that issuer's tokens are used.
        if let Err(err) = self.check_pinned_issuer(&stored.issuer) {
            tracing::info!(target: "formwork::auth", server = %self.server_name, %err, "the stored sign-in is not used");
            return None;
        }
        Some(stored)
    }

    /// With `oauth.issuer` set, an authorization server with another issuer is refused: the
    /// client's secret or key belongs to the configured one.
    fn check_pinned_issuer(&self, issuer: &str) -> Result<(), AuthError> {
        match &self.settings.issuer {
            Some(pinned) if !same_issuer(pinned, issuer) => Err(self.failed(format!(
                "its authorization server is `{issuer}`, but `oauth.issuer` is `{pinned}`; formwork signs in, and sends the client's credentials, only at the configured issuer"
            ))),
            _ => Ok(()),
        }
    }

    async fn keep(&self, state: &mut State, tokens: StoredTokens) {
        if let Some(store) = &self.store {
            let (store, kept) = (Arc::clone(store), tokens.clone());
            let saved = tokio::task::spawn_blocking(move || store.save(&kept))
                .await
                .unwrap_or_else(|err| {
                    Err(TokenStoreError::Task {
                        action: "writing",
                        reason: err.to_string(),
                    })
                });
            if let Err(err) = &saved {
                tracing::warn!(target: "formwork::auth", server = %self.server_name, %err, "the sign-in could not be stored; it lasts for this run only");
            }
            state.kept_in = Some(saved);
        }
        state.tokens = Some(tokens);
        state.generation += 1;
        self.publish(state);
    }

    /// Makes the current token what [`Authorizer::bearer`] reads without waiting.
    fn publish(&self, state: &State) {
        let current = state.tokens.as_ref().map(|tokens| Current {
            generation: state.generation,
            header: format!("Bearer {}", tokens.access_token),
            expires_at: tokens.expires_at,
        });
        if let Ok(mut slot) = self.current.lock() {
            *slot = current;
        }
    }

    async fn sign_in_locked(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scopes: Option<Vec<String>>,
        known: Option<(ResourceMetadata, Vec<AuthStep>)>,
    ) -> Result<(), AuthError> {
        let signed_in = self.sign_in_once(state, challenge, scopes, known).await;
        state.failed = signed_in
            .as_ref()
            .err()
            .map(|err| (challenge.clone(), err.clone(), Instant::now()));
        signed_in
    }

    async fn sign_in_once(
        &self,
        state: &mut State,
        challenge: &Challenge,
        scopes: Option<Vec<String>>,
        known: Option<(ResourceMetadata, Vec<AuthStep>)>,
    ) -> Result<(), AuthError> {
        let (known, mut steps) = known.map_or((None, Vec::new()), |(resource, steps)| {
            (Some(resource), steps)
        });
        let discovered = discovery::discover(&self.server_url, challenge, known, &mut steps).await;
        state.steps = steps;
        let discovered = discovered.map_err(|reason| {
            self.failed(format!("finding its authorization server failed: {reason}"))
        })?;
        let scopes = scopes.unwrap_or_else(|| self.initial_scopes(challenge, &discovered));
        let resource = self
            .settings
            .resource
            .clone()
            .or_else(|| discovered.resource.as_ref().map(|r| r.resource.clone()));
        let tokens = match (
            self.check_pinned_issuer(&discovered.server.issuer),
            self.settings.grant,
        ) {
            (Err(err), _) => Err(err),
            (Ok(()), Grant::ClientCredentials) => {
                self.client_credentials(&discovered, &scopes, resource)
                    .await
            }
            (Ok(()), Grant::AuthorizationCode) => {
                self.authorization_code(&discovered, &scopes, resource)
                    .await
            }
            (Ok(()), Grant::CrossAppAccess) => {
                self.cross_app_access(&discovered, &scopes, resource).await
            }
        };
        state.steps.push(AuthStep {
            step: "sign-in",
            url: discovered.server.issuer.clone(),
            outcome: match &tokens {
                Ok(tokens) if tokens.scopes.is_empty() => "signed in".to_owned(),
                Ok(tokens) => format!("signed in with the scopes {}", tokens.scopes.join(" ")),
                Err(err) => err.to_string(),
            },
        });
        let tokens = tokens?;
        state.requested = scopes;
        self.keep(state, tokens).await;
        state.signed_in = Some(state.generation);
        Ok(())
    }

    /// The configured scopes; else the challenge's; else all the resource supports; else none.
    /// `offline_access` is added where the authorization server offers it, for a refresh token.
    fn initial_scopes(&self, challenge: &Challenge, discovered: &Discovered) -> Vec<String> {
        if !self.settings.scopes.is_empty() {
            return self.settings.scopes.clone();
        }
        let mut scopes = challenge.scopes();
        if scopes.is_empty()
            && let Some(resource) = &discovered.resource
        {
            scopes = split_scopes(&resource.scopes_supported.join(" "));
        }
        if discovered
            .server
            .scopes_supported
            .iter()
            .any(|s| s == OFFLINE_ACCESS)
            && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
            && self.settings.grant == Grant::AuthorizationCode
        {
            scopes.push(OFFLINE_ACCESS.to_owned());
        }
        scopes
    }
    fn failed(&self, reason: impl std::fmt::Display) -> AuthError {
        AuthError::Failed(format!(
            "signing in to {} failed: {reason}",
            self.server_name
        ))
    }
}

/// Whether two issuers are the same URL, written either way (host case, default port, one
/// trailing slash).
fn same_issuer(one: &str, other: &str) -> bool {
    let normal = |issuer: &str| match url::Url::parse(issuer) {
        Ok(url) => url.as_str().trim_end_matches('/').to_owned(),
        Err(_) => issuer.trim_end_matches('/').to_owned(),
    };
    normal(one) == normal(other)
}

fn expires_within(tokens: &StoredTokens, margin: Duration) -> bool {
    tokens
        .expires_at
        .is_some_and(|at| at <= unix_now().saturating_add(margin.as_secs()))
}
