//! The refresh-token grant: a new access token for the one about to expire or refused.

use std::sync::Arc;

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, ClientId, ClientSecret, RefreshToken, RequestTokenError, TokenResponse, TokenUrl,
};

use super::token::{check_access_token, expiry, token_error};
use super::{AuthError, Authorizer, REFRESH_AHEAD, State, expires_within};
use crate::transport::auth::fetch;
use crate::transport::auth::store::{StoredTokens, TokenStoreError};

impl Authorizer {
    pub(super) async fn refresh(&self, state: &mut State) -> Result<(), AuthError> {
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
    pub(super) async fn forget_refresh_token(
        &self,
        state: &mut State,
        tokens: &StoredTokens,
    ) -> bool {
        let newer = match &self.store {
            Some(store) => {
                let (store, spent) = (Arc::clone(store), tokens.clone());
                tokio::task::spawn_blocking(move || store.forget_refresh_token(&spent))
                    .await
                    .unwrap_or_else(|err| {
                        Err(TokenStoreError::Task {
                            action: "writing",
                            reason: err.to_string(),
                        })
                    })
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
}
