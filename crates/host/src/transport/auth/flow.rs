//! One server's authorization: the token its requests carry, and what happens when the server
//! refuses one (401: refresh, else sign in; 403 `insufficient_scope`: sign in again with more
//! scopes, a bounded number of times).
//!
//! The `oauth2` crate builds the authorization URL (PKCE S256, `state`) and makes the token
//! requests (code exchange, refresh, client credentials, client authentication); `jsonwebtoken`
//! signs `private_key_jwt` assertions. Discovery and dynamic client registration, which neither
//! crate offers, are here and in `discovery.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::agent::SignInAgent;
use super::challenge::{Challenge, split_scopes};
use super::discovery::{self, AuthStep, Discovered, ResourceMetadata, Source};
use super::fetch;
use super::settings::{AuthSettings, Grant};
use super::store::{StoredTokens, TokenPlace, TokenStore};

/// A token this close to its expiry is refreshed before it is sent.
const REFRESH_AHEAD: Duration = Duration::from_secs(30);
/// How long a failed sign-in answers the same challenge without trying again.
const FAILURE_HOLD: Duration = Duration::from_secs(5);
/// Sign-ins for more scopes (403 `insufficient_scope`) on one connection for one set of scopes
/// the server asks for, at most.
const MAX_STEP_UPS: u32 = 2;
const OFFLINE_ACCESS: &str = "offline_access";
/// How long a client assertion (`private_key_jwt`) is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);
const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
/// The two grants of cross-app access, and the token types of its exchange.
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

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
    kept_in: Option<Result<TokenPlace, String>>,
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
    /// the server gives an unauthenticated request, which carries `headers` (the server's
    /// configured ones, as every MCP request does). Where the tokens were kept; none without
    /// a store.
    pub async fn sign_in(
        &self,
        headers: &[(String, String)],
    ) -> Result<Option<TokenPlace>, AuthError> {
        let (challenge, asked) = self.probe(headers).await?;
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

    /// The challenge of an `initialize` sent without a token, and whether it was refused (401).
    async fn probe(&self, configured: &[(String, String)]) -> Result<(Challenge, bool), AuthError> {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "formwork", "version": env!("CARGO_PKG_VERSION")}},
        })
        .to_string();
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
        let fetched = fetch::exchange("POST", &self.server_url, &headers, body.as_bytes())
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
            .unwrap_or_else(|err| Err(format!("reading the store failed: {err}")));
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
                .unwrap_or_else(|err| Err(format!("writing the store failed: {err}")));
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

    async fn refresh(&self, state: &mut State) -> Result<(), AuthError> {
        let Some(tokens) = state.tokens.clone() else {
            return Err(self.failed("there is no token to refresh"));
        };
        let Some(refresh) = tokens.refresh_token.clone() else {
            return Err(self.failed("the token cannot be refreshed (no refresh token)"));
        };
        // Another connection or process may have refreshed it already; where the server
        // rotates refresh tokens, ours is spent then, and theirs is the one to use. The
        // connections of this process refresh one at a time.
        let renewal = self
            .store
            .as_ref()
            .map(|store| store.renewal_lock(&self.server_name, &self.server_url));
        let _renewing = match &renewal {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        if let Some(stored) = self.stored_tokens().await
            && stored.access_token != tokens.access_token
            && !expires_within(&stored, REFRESH_AHEAD)
        {
            state.tokens = Some(stored);
            state.generation += 1;
            state.refreshed = Some(state.generation);
            self.publish(state);
            return Ok(());
        }
        let token_url = TokenUrl::new(tokens.token_endpoint.clone())
            .map_err(|err| self.failed(format!("the token endpoint is not a URL: {err}")))?;
        let mut client =
            BasicClient::new(ClientId::new(tokens.client_id.clone())).set_token_uri(token_url);
        client = match &tokens.client_secret {
            Some(secret) => {
                let in_body = tokens.token_endpoint_auth.as_deref() == Some("client_secret_post");
                client
                    .set_client_secret(ClientSecret::new(secret.clone()))
                    .set_auth_type(if in_body {
                        AuthType::RequestBody
                    } else {
                        AuthType::BasicAuth
                    })
            }
            None => client.set_auth_type(AuthType::RequestBody),
        };
        let refresh = RefreshToken::new(refresh);
        let mut request = client.exchange_refresh_token(&refresh);
        if let Some(resource) = &tokens.resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        let answer = match request.request_async(&fetch::oauth_client).await {
            Ok(answer) => answer,
            Err(err) => {
                if matches!(err, RequestTokenError::ServerResponse(_))
                    && self.forget_refresh_token(state, &tokens).await
                {
                    return Ok(());
                }
                return Err(self.failed(token_error(&tokens.token_endpoint, err)));
            }
        };
        check_access_token(answer.access_token().secret())
            .map_err(|reason| self.failed(format!("its refresh: {reason}")))?;
        let mut renewed = tokens.clone();
        renewed.access_token = answer.access_token().secret().clone();
        if let Some(refresh) = answer.refresh_token() {
            renewed.refresh_token = Some(refresh.secret().clone());
        }
        renewed.expires_at = answer.expires_in().map(expiry);
        self.keep(state, renewed).await;
        state.refreshed = Some(state.generation);
        Ok(())
    }

    /// The server will not take the refresh token of `tokens` again (`invalid_grant`, most
    /// likely): it is forgotten, so that no later request asks once more. Whether another
    /// process had refreshed meanwhile: its tokens, from the store, are the current ones then.
    async fn forget_refresh_token(&self, state: &mut State, tokens: &StoredTokens) -> bool {
        let newer = match &self.store {
            Some(store) => {
                let (store, spent) = (Arc::clone(store), tokens.clone());
                tokio::task::spawn_blocking(move || store.forget_refresh_token(&spent))
                    .await
                    .unwrap_or_else(|err| Err(format!("writing the store failed: {err}")))
                    .unwrap_or_else(|err| {
                        tracing::warn!(target: "formwork::auth", server = %self.server_name, %err, "the refused refresh token could not be forgotten in the store");
                        None
                    })
            }
            None => None,
        };
        match newer.filter(|newer| self.check_pinned_issuer(&newer.issuer).is_ok()) {
            Some(newer) => {
                state.tokens = Some(newer);
                state.generation += 1;
                state.refreshed = Some(state.generation);
                self.publish(state);
                true
            }
            None => {
                let mut spent = tokens.clone();
                spent.refresh_token = None;
                state.tokens = Some(spent);
                state.generation += 1;
                self.publish(state);
                false
            }
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

    async fn authorization_code(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        // PKCE is required; discovered metadata must say S256 is offered (the 2025-03-26
        // default endpoints have no metadata to say it).
        if discovered.source != Source::LegacyDefaults
            && !server
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|methods| methods.iter().any(|m| m == "S256"))
        {
            return Err(self.failed(format!(
                "its authorization server {} does not offer PKCE with S256 (code_challenge_methods_supported); formwork does not sign in without it",
                server.issuer
            )));
        }
        let Some(agent) = &self.agent else {
            return Err(AuthError::SignInNeeded {
                server: self.server_name.clone(),
                url: self.server_url.clone(),
                configured: self.configured,
            });
        };
        let authorization_endpoint = server.authorization_endpoint.clone().ok_or_else(|| {
            self.failed(format!(
                "its authorization server {} has no authorization_endpoint",
                server.issuer
            ))
        })?;
        let pending = agent.start().await.map_err(|err| self.failed(err))?;
        let redirect_uri = pending.redirect_uri();
        let client = self.client_for(discovered, &redirect_uri).await?;

        let auth_url = AuthUrl::new(authorization_endpoint).map_err(|err| {
            self.failed(format!("the authorization endpoint is not a URL: {err}"))
        })?;
        let token_url = TokenUrl::new(server.token_endpoint.clone())
            .map_err(|err| self.failed(format!("the token endpoint is not a URL: {err}")))?;
        let redirect = RedirectUrl::new(redirect_uri.clone())
            .map_err(|err| self.failed(format!("the redirect URI is not a URL: {err}")))?;
        let mut oauth = BasicClient::new(ClientId::new(client.id.clone()))
            .set_auth_uri(auth_url)
            .set_token_uri(token_url)
            .set_redirect_uri(redirect)
            .set_auth_type(client.auth_type.clone());
        if let Some(secret) = &client.secret {
            oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
        }
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = oauth
            .authorize_url(CsrfToken::new_random)
            .set_pkce_challenge(challenge)
            .add_scopes(scopes.iter().cloned().map(Scope::new));
        if let Some(resource) = &resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        let (url, state) = request.url();
        let code = {
            let _waiting = WaitingForPerson::start(self);
            pending
                .complete(url.to_string(), state.secret().clone())
                .await
        }
        .map_err(|err| self.failed(err))?;
        let mut exchange = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier);
        if let Some(resource) = &resource {
            exchange = exchange.add_extra_param("resource", resource.clone());
        }
        let answer = exchange
            .request_async(&fetch::oauth_client)
            .await
            .map_err(|err| self.failed(token_error(&server.token_endpoint, err)))?;
        self.stored(discovered, &client, &answer, scopes, resource)
    }

    async fn client_credentials(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        let Some(client_id) = self.settings.client_id.clone() else {
            return Err(self.failed("the client-credentials grant needs `oauth.client_id`"));
        };
        let token_url = TokenUrl::new(server.token_endpoint.clone())
            .map_err(|err| self.failed(format!("the token endpoint is not a URL: {err}")))?;
        let mut oauth = BasicClient::new(ClientId::new(client_id.clone())).set_token_uri(token_url);
        let mut assertion = None;
        let client = if let Some(pem) = &self.settings.private_key_pem {
            assertion = Some(self.client_assertion(&client_id, pem, &server.issuer)?);
            Client {
                id: client_id,
                secret: None,
                auth_type: AuthType::RequestBody,
            }
        } else {
            let secret = self.settings.client_secret.clone();
            let auth_type = client_auth_type(
                server.token_endpoint_auth_methods_supported.as_deref(),
                None,
                secret.is_some(),
            );
            if let Some(secret) = &secret {
                oauth = oauth.set_client_secret(ClientSecret::new(secret.clone()));
            }
            Client {
                id: client_id,
                secret,
                auth_type,
            }
        };
        oauth = oauth.set_auth_type(client.auth_type.clone());
        let mut request = oauth
            .exchange_client_credentials()
            .add_scopes(scopes.iter().cloned().map(Scope::new));
        if let Some(assertion) = assertion {
            request = request
                .add_extra_param("client_assertion_type", ASSERTION_TYPE)
                .add_extra_param("client_assertion", assertion);
        }
        if let Some(resource) = &resource {
            request = request.add_extra_param("resource", resource.clone());
        }
        let answer = request
            .request_async(&fetch::oauth_client)
            .await
            .map_err(|err| self.failed(token_error(&server.token_endpoint, err)))?;
        self.stored(discovered, &client, &answer, scopes, resource)
    }

    /// Enterprise-managed authorization (SEP-990): the identity provider trades the person's
    /// ID token for an ID-JAG naming this authorization server and resource (RFC 8693 token
    /// exchange), and the authorization server takes that as a JWT bearer grant (RFC 7523).
    /// The `oauth2` crate has neither grant, so both requests are written here.
    async fn cross_app_access(
        &self,
        discovered: &Discovered,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let server = &discovered.server;
        let (Some(idp), Some(client_id)) =
            (&self.settings.identity_provider, &self.settings.client_id)
        else {
            return Err(self.failed(
                "the cross-app access grant needs `oauth.client_id` and the identity provider's keys",
            ));
        };
        // The ID-JAG names the resource it is for; without the server's resource metadata
        // there is none to name.
        let Some(resource) = resource else {
            return Err(self.failed(
                "the cross-app access grant needs the server's protected resource metadata, and it publishes none",
            ));
        };
        let idp_endpoint = url::Url::parse(&idp.token_endpoint).map_err(|err| {
            self.failed(format!(
                "the identity provider's token endpoint `{}` is not a URL: {err}",
                idp.token_endpoint
            ))
        })?;
        discovery::check_secure(&idp_endpoint).map_err(|reason| self.failed(reason))?;
        let scope = scopes.join(" ");

        let exchange = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", TOKEN_EXCHANGE_GRANT)
                .append_pair("requested_token_type", ID_JAG_TOKEN_TYPE)
                .append_pair("audience", &server.issuer)
                .append_pair("resource", &resource)
                .append_pair("subject_token", &idp.id_token)
                .append_pair("subject_token_type", ID_TOKEN_TYPE)
                .append_pair("client_id", &idp.client_id);
            if let Some(secret) = &idp.client_secret {
                form.append_pair("client_secret", secret);
            }
            if !scope.is_empty() {
                form.append_pair("scope", &scope);
            }
            form.finish()
        };
        let answer = self.token_post(&idp.token_endpoint, None, exchange).await?;
        let issued_type = answer.get("issued_token_type").and_then(Value::as_str);
        let grant = answer
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|grant| !grant.is_empty() && issued_type == Some(ID_JAG_TOKEN_TYPE))
            .ok_or_else(|| {
                self.failed(format!(
                    "the identity provider's token endpoint {} answered no ID-JAG (issued_token_type {})",
                    idp.token_endpoint,
                    issued_type.unwrap_or("missing")
                ))
            })?;

        let secret = self.settings.client_secret.clone();
        let client = Client {
            id: client_id.clone(),
            auth_type: client_auth_type(
                server.token_endpoint_auth_methods_supported.as_deref(),
                None,
                secret.is_some(),
            ),
            secret,
        };
        let (bearer, basic) = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", JWT_BEARER_GRANT)
                .append_pair("assertion", grant)
                .append_pair("resource", &resource);
            if !scope.is_empty() {
                form.append_pair("scope", &scope);
            }
            let basic = match (&client.auth_type, &client.secret) {
                (AuthType::BasicAuth, Some(secret)) => Some(basic_credentials(&client.id, secret)),
                (_, secret) => {
                    form.append_pair("client_id", &client.id);
                    if let Some(secret) = secret {
                        form.append_pair("client_secret", secret);
                    }
                    None
                }
            };
            (form.finish(), basic)
        };
        let answer = self
            .token_post(&server.token_endpoint, basic.as_deref(), bearer)
            .await?;
        let tokens = oauth2::basic::BasicTokenResponse::deserialize(&answer).map_err(|_| {
            self.failed(format!(
                "the token endpoint {} answered something that is not a token response: {}",
                server.token_endpoint,
                token_value_fault(&answer)
            ))
        })?;
        self.stored(discovered, &client, &tokens, scopes, Some(resource))
    }

    /// A token request of a grant the `oauth2` crate lacks: the form `body` POSTed to
    /// `endpoint` (with `Authorization: <basic>` when given), its JSON answer, or why not.
    /// The answer is never quoted: it may carry a token.
    async fn token_post(
        &self,
        endpoint: &str,
        basic: Option<&str>,
        body: String,
    ) -> Result<Value, AuthError> {
        let mut headers = vec![
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ];
        if let Some(basic) = basic {
            headers.push(("authorization", basic));
        }
        let fetched = fetch::exchange("POST", endpoint, &headers, body.as_bytes())
            .await
            .map_err(|err| self.failed(format!("the token request to {endpoint} failed: {err}")))?;
        let answer = serde_json::from_slice::<Value>(&fetched.body)
            .ok()
            .filter(|_| fetched.is_json());
        if (200..300).contains(&fetched.status) {
            return answer.filter(Value::is_object).ok_or_else(|| {
                self.failed(format!(
                    "the token endpoint {endpoint} answered something that is not a token response: {}",
                    if fetched.is_json() {
                        token_answer_fault(&fetched.body)
                    } else {
                        format!("HTTP {} with `{}`", fetched.status, fetched.content_type)
                    }
                ))
            });
        }
        let error = answer.as_ref().and_then(|answer| {
            let code = answer.get("error")?.as_str()?;
            Some(
                match answer.get("error_description").and_then(Value::as_str) {
                    Some(description) => format!("{code} ({description})"),
                    None => code.to_owned(),
                },
            )
        });
        Err(self.failed(match error {
            Some(error) => format!("the token endpoint {endpoint} refused: {error}"),
            None => format!(
                "the token endpoint {endpoint} refused: HTTP {}",
                fetched.status
            ),
        }))
    }

    /// An RFC 7523 client assertion: signed by the configured key, for the issuer.
    fn client_assertion(
        &self,
        client_id: &str,
        pem: &str,
        issuer: &str,
    ) -> Result<String, AuthError> {
        use jsonwebtoken::{Algorithm, EncodingKey, Header};
        let name = self
            .settings
            .signing_algorithm
            .as_deref()
            .unwrap_or("ES256");
        let algorithm: Algorithm = name
            .parse()
            .map_err(|_| self.failed(format!("`{name}` is not a JWT signing algorithm")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => EncodingKey::from_rsa_pem(pem.as_bytes()),
            _ => {
                return Err(
                    self.failed(format!("`{name}` needs a shared secret, not a private key"))
                );
            }
        }
        .map_err(|err| self.failed(format!("the private key does not suit {name}: {err}")))?;
        let now = unix_now();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": issuer,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME.as_secs(),
            "jti": CsrfToken::new_random().secret(),
        });
        jsonwebtoken::encode(&Header::new(algorithm), &claims, &key)
            .map_err(|err| self.failed(format!("signing the client assertion failed: {err}")))
    }

    /// The client to sign in as, in the spec's order: pre-registered, a client ID metadata
    /// document where the server accepts one, else dynamic registration.
    async fn client_for(
        &self,
        discovered: &Discovered,
        redirect_uri: &str,
    ) -> Result<Client, AuthError> {
        let server = &discovered.server;
        let methods = server.token_endpoint_auth_methods_supported.as_deref();
        if let Some(id) = &self.settings.client_id {
            let secret = self.settings.client_secret.clone();
            return Ok(Client {
                id: id.clone(),
                auth_type: client_auth_type(methods, None, secret.is_some()),
                secret,
            });
        }
        if let Some(document) = &self.settings.client_metadata_url
            && server.client_id_metadata_document_supported
        {
            return Ok(Client {
                id: document.clone(),
                secret: None,
                auth_type: AuthType::RequestBody,
            });
        }
        let Some(endpoint) = &server.registration_endpoint else {
            return Err(self.failed(format!(
                "its authorization server {} offers no client registration: set `oauth.client_id` for {}",
                server.issuer, self.server_name
            )));
        };
        self.register(endpoint, methods, redirect_uri).await
    }

    /// RFC 7591 dynamic client registration.
    async fn register(
        &self,
        endpoint: &str,
        methods: Option<&[String]>,
        redirect_uri: &str,
    ) -> Result<Client, AuthError> {
        let offers =
            |method: &str| methods.is_none_or(|methods| methods.iter().any(|m| m == method));
        let wanted = ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|method| offers(method))
            .unwrap_or("none");
        let body = json!({
            "client_name": "formwork",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": wanted,
        })
        .to_string();
        let fetched = fetch::exchange(
            "POST",
            endpoint,
            &[
                ("content-type", "application/json"),
                ("accept", "application/json"),
            ],
            body.as_bytes(),
        )
        .await
        .map_err(|err| self.failed(format!("registering with {endpoint} failed: {err}")))?;
        if !(200..300).contains(&fetched.status) {
            return Err(self.failed(format!(
                "registering with {endpoint} failed: HTTP {} ({})",
                fetched.status,
                snippet(&fetched.body)
            )));
        }
        // A successful answer holds the client's secret, if it has one: never quoted.
        if !fetched.is_json() {
            return Err(self.failed(format!(
                "registering with {endpoint} failed: it answered HTTP {} with `{}`, not JSON",
                fetched.status, fetched.content_type
            )));
        }
        let answer: Value = serde_json::from_slice(&fetched.body).map_err(|err| {
            self.failed(format!(
                "the registration answer of {endpoint} is not JSON: {err}"
            ))
        })?;
        let id = answer
            .get("client_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                self.failed(format!(
                    "the registration answer of {endpoint} has no client_id"
                ))
            })?;
        let secret = answer
            .get("client_secret")
            .and_then(Value::as_str)
            .filter(|secret| !secret.is_empty())
            .map(str::to_owned);
        let returned = answer
            .get("token_endpoint_auth_method")
            .and_then(Value::as_str);
        Ok(Client {
            id: id.to_owned(),
            auth_type: client_auth_type(methods, returned, secret.is_some()),
            secret,
        })
    }

    fn stored(
        &self,
        discovered: &Discovered,
        client: &Client,
        answer: &oauth2::basic::BasicTokenResponse,
        scopes: &[String],
        resource: Option<String>,
    ) -> Result<StoredTokens, AuthError> {
        let access_token = answer.access_token().secret();
        check_access_token(access_token).map_err(|reason| self.failed(reason))?;
        let granted = answer
            .scopes()
            .map(|granted| granted.iter().map(|scope| scope.to_string()).collect())
            .unwrap_or_else(|| scopes.to_vec());
        Ok(StoredTokens {
            server_name: self.server_name.clone(),
            url: self.server_url.clone(),
            issuer: discovered.server.issuer.clone(),
            token_endpoint: discovered.server.token_endpoint.clone(),
            client_id: client.id.clone(),
            client_secret: client.secret.clone(),
            token_endpoint_auth: client.secret.as_ref().map(|_| {
                match client.auth_type {
                    AuthType::RequestBody => "client_secret_post",
                    _ => "client_secret_basic",
                }
                .to_owned()
            }),
            access_token: access_token.clone(),
            refresh_token: answer.refresh_token().map(|token| token.secret().clone()),
            expires_at: answer.expires_in().map(expiry),
            scopes: granted,
            resource,
        })
    }

    fn failed(&self, reason: impl std::fmt::Display) -> AuthError {
        AuthError::Failed(format!(
            "signing in to {} failed: {reason}",
            self.server_name
        ))
    }
}

/// A registered client and how it authenticates at the token endpoint.
struct Client {
    id: String,
    secret: Option<String>,
    auth_type: AuthType,
}

/// The token endpoint authentication: the method registration returned if the server offers
/// it; with no list, Basic when there is a secret (RFC 8414's default); else Basic, then the
/// body, by what the server lists. Without a secret the client ID goes in the body (`none`).
fn client_auth_type(
    methods: Option<&[String]>,
    returned: Option<&str>,
    has_secret: bool,
) -> AuthType {
    let by_name = |method: &str| match method {
        "client_secret_post" | "none" => Some(AuthType::RequestBody),
        "client_secret_basic" => Some(AuthType::BasicAuth),
        _ => None,
    };
    if !has_secret {
        return AuthType::RequestBody;
    }
    if let Some(returned) = returned
        && methods.is_none_or(|methods| methods.iter().any(|m| m == returned))
        && let Some(auth_type) = by_name(returned)
    {
        return auth_type;
    }
    match methods {
        None => AuthType::BasicAuth,
        Some(methods) if methods.iter().any(|m| m == "client_secret_basic") => AuthType::BasicAuth,
        Some(methods) if methods.iter().any(|m| m == "client_secret_post") => AuthType::RequestBody,
        Some(_) => AuthType::BasicAuth,
    }
}

fn token_error<E: std::error::Error + 'static>(
    endpoint: &str,
    err: RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match err {
        RequestTokenError::ServerResponse(answer) => {
            let mut text = format!("the token endpoint {endpoint} refused: {}", answer.error());
            if let Some(description) = answer.error_description() {
                text.push_str(&format!(" ({description})"));
            }
            text
        }
        RequestTokenError::Request(err) => format!("the token request to {endpoint} failed: {err}"),
        RequestTokenError::Parse(_, body) => format!(
            "the token endpoint {endpoint} answered something that is not a token response: {}",
            token_answer_fault(&body)
        ),
        RequestTokenError::Other(reason) => {
            format!(
                "the token endpoint {endpoint} answered something that is not a token response: {reason}"
            )
        }
    }
}

/// What is wrong with a token endpoint's answer, naming fields but never quoting the body: a
/// malformed answer may still carry a token.
fn token_answer_fault(body: &[u8]) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(answer) => token_value_fault(&answer),
        Err(_) => format!("{} bytes that are not JSON", body.len()),
    }
}

/// [`token_answer_fault`] of an answer already read as JSON.
fn token_value_fault(answer: &Value) -> String {
    let Some(fields) = answer.as_object() else {
        return "JSON that is not an object".to_owned();
    };
    let mut faults = Vec::new();
    for required in ["access_token", "token_type"] {
        match fields.get(required) {
            None => faults.push(format!("`{required}` is missing")),
            Some(Value::String(_)) => {}
            Some(_) => faults.push(format!("`{required}` is not a string")),
        }
    }
    if let Some(lifetime) = fields.get("expires_in")
        && !lifetime.is_u64()
    {
        faults.push("`expires_in` is not a whole number of seconds".to_owned());
    }
    if faults.is_empty() {
        let names: Vec<&str> = fields.keys().map(String::as_str).collect();
        faults.push(format!("its fields ({}) do not make one", names.join(", ")));
    }
    faults.join("; ")
}

/// `Basic <credentials>` of RFC 6749 §2.3.1: the client ID and secret form-encoded, then
/// joined and base64-encoded.
fn basic_credentials(client_id: &str, secret: &str) -> String {
    use base64::Engine;
    let encode =
        |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(client_id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
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

fn snippet(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(200).collect()
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

fn expiry(lifetime: Duration) -> u64 {
    unix_now().saturating_add(lifetime.as_secs())
}

fn expires_within(tokens: &StoredTokens, margin: Duration) -> bool {
    tokens
        .expires_at
        .is_some_and(|at| at <= unix_now().saturating_add(margin.as_secs()))
}

/// An access token rides in an `Authorization` header: it must be RFC 6750's `b64token`
/// (`A-Z a-z 0-9 - . _ ~ + /`, then `=` only), or the authorization server could write headers,
/// or a whole request, into every request to the MCP server. Never quoted: it is a secret.
fn check_access_token(token: &str) -> Result<(), String> {
    let body = token.trim_end_matches('=');
    let b64token = !body.is_empty()
        && body
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"-._~+/".contains(&byte));
    if b64token {
        Ok(())
    } else {
        Err(
            "the token answer's `access_token` is not a bearer token: RFC 6750 allows only \
             letters, digits, `-._~+/` and a trailing `=`"
                .to_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_expiry_past_any_clock_is_the_end_of_time_not_a_panic() {
        assert_eq!(expiry(Duration::from_secs(u64::MAX)), u64::MAX);
    }

    #[test]
    fn only_rfc_6750_tokens_are_access_tokens() {
        for token in ["abc", "a-b.c_d~e+f/g==", "eyJhbGciOi.eyJzdWIi.sig"] {
            assert_eq!(check_access_token(token), Ok(()), "{token}");
        }
        for token in ["", "==", "a b", "a\r\nX: y", "a=b", "tok\u{e9}"] {
            assert!(check_access_token(token).is_err(), "{token:?}");
        }
    }

    #[test]
    fn client_authentication_follows_registration_then_the_servers_list() {
        let list = |methods: &[&str]| methods.iter().map(|m| m.to_string()).collect::<Vec<_>>();
        let basic = list(&["client_secret_basic"]);
        let post = list(&["client_secret_post"]);
        let both = list(&["client_secret_post", "client_secret_basic"]);
        assert!(matches!(
            client_auth_type(Some(&basic), Some("client_secret_basic"), true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(Some(&post), Some("client_secret_post"), true),
            AuthType::RequestBody
        ));
        assert!(matches!(
            client_auth_type(Some(&both), Some("client_secret_post"), true),
            AuthType::RequestBody
        ));
        assert!(matches!(
            client_auth_type(Some(&both), None, true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(None, None, true),
            AuthType::BasicAuth
        ));
        assert!(matches!(
            client_auth_type(Some(&basic), None, false),
            AuthType::RequestBody
        ));
    }
}
