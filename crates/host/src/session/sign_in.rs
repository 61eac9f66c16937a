//! Signing in to a server from the workbench: the authorization URL becomes a "Sign in to
//! NAME" link card of the session (the host's own card, past the elicitation policy: no plugin
//! asks it), the redirect comes back to a one-shot listener on 127.0.0.1, and the request that
//! met the server's 401 goes on.

use std::sync::{Arc, Weak};
use std::time::Duration;

use formwork_forms::{Decline, ElicitationRequest, ParseOptions, RequestText};
use serde_json::json;
use tokio::sync::{oneshot, watch};

use super::wire::Event;
use crate::auth::agent::{Loopback, PendingRedirect, SignInAgent, SignInError};
use crate::future::BoxFuture;
use crate::responder::{FormAction, FormReply};

use super::cards::{Card, CardAnswer};
use super::{CommandError, EndReason, Session};

/// How long a sign-in card waits for the browser to come back.
const SIGN_IN_WAIT: Duration = Duration::from_secs(600);

/// The sign-ins of one session's connection to `server`.
pub(super) struct SessionSignIn {
    pub session: Weak<Session>,
    pub server: String,
    /// `mcp_oauth_callback_port`; a free port when absent.
    pub port: Option<u16>,
}

impl SignInAgent for SessionSignIn {
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>> {
        let session = self.session.clone();
        let server = self.server.clone();
        let port = self.port;
        Box::pin(async move {
            let loopback = Loopback::bind(port).await?;
            let pending: Box<dyn PendingRedirect> = Box::new(CardRedirect {
                session,
                server,
                loopback,
            });
            Ok(pending)
        })
    }
}

struct CardRedirect {
    session: Weak<Session>,
    server: String,
    loopback: Loopback,
}

impl PendingRedirect for CardRedirect {
    fn redirect_uri(&self) -> String {
        self.loopback.redirect_uri()
    }

    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>> {
        Box::pin(async move {
            let session = self.session.upgrade().ok_or("the session is gone")?;
            let (done, completed) = watch::channel(false);
            let (card, answered) = session
                .ask_sign_in(&self.server, &authorization_url, completed)
                .map_err(|err| err.to_string())?;
            // However the sign-in ends, its card does not stay open.
            let open_card = EndOnDrop {
                session: Arc::clone(&session),
                card,
            };
            let redirect = self.loopback.wait(&state, SIGN_IN_WAIT);
            tokio::pin!(redirect, answered);
            let mut accepted = false;
            loop {
                tokio::select! {
                    code = &mut redirect => {
                        let _ = done.send(true);
                        // The browser came back with this sign-in's `state`: the person
                        // opened the link, whether or not the page's word of it has arrived
                        // yet (the authorization server may redirect at once).
                        if code.is_ok() && !accepted {
                            session.answered(&open_card.card, CardAnswer::Form(Box::new(FormReply::accept_url())));
                        }
                        return code;
                    }
                    action = &mut answered, if !accepted => match action {
                        Ok(FormAction::Accept) => accepted = true,
                        Ok(FormAction::Decline) => return Err("the person declined to sign in".into()),
                        _ => return Err("the sign-in was cancelled".into()),
                    },
                }
            }
        })
    }
}

impl Session {
    /// Connects to `server` in the background, so that its 401 brings the sign-in card; emits
    /// `signed_in` when the connection is up, else a `sign-in-failed` diagnostic.
    pub(super) fn sign_in(self: &Arc<Self>, server: &str) -> Result<(), CommandError> {
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| CommandError::NoSession(self.id.clone()))?;
        let target = host.target(server)?;
        let session = Arc::clone(self);
        let server = server.to_owned();
        tokio::spawn(async move {
            match session.connection(&server, &target).await {
                Ok(_) => session.emit(Event::SignedIn { server }),
                Err(err) => session.plugin_diagnostic("sign-in-failed", format!("{server}: {err}")),
            }
        });
        Ok(())
    }

    /// Shows the sign-in card; the person's action (opening the link accepts it) comes back on
    /// the receiver. The card completes when `completed` turns true.
    fn ask_sign_in(
        self: &Arc<Self>,
        server: &str,
        authorization_url: &str,
        mut completed: watch::Receiver<bool>,
    ) -> Result<(String, oneshot::Receiver<FormAction>), SignInCardError> {
        let params = json!({
            "mode": "url",
            "message": format!("Sign in to {server}. It asks for your authorization before its tools can run; the call goes on once you have signed in."),
            "url": authorization_url,
        });
        let (body, text) = RequestText::read(&params, ParseOptions::default())
            .map_err(SignInCardError::Unreadable)?;
        if !matches!(body, ElicitationRequest::Url(_)) {
            return Err(SignInCardError::NotALink);
        }
        let (action_tx, action) = oneshot::channel();
        let form_id = self.new_id("f");
        let call_id = {
            let state = self.lock();
            state.only_app_call().cloned().or_else(|| {
                let turn = state.turn.as_ref()?;
                (turn.calls.len() == 1)
                    .then(|| turn.calls.keys().next().cloned())
                    .flatten()
            })
        };
        let sent = crate::persist::Sent::Form {
            params: Arc::clone(text.params()),
            asked_as: None,
        };
        let (card, answer) = Card::form(form_id.clone(), call_id, server.to_owned(), body, text);
        self.push_card(card, Some(sent));
        let session = Arc::downgrade(self);
        let card = form_id.clone();
        tokio::spawn(async move {
            let action = answer.await.action;
            let _ = action_tx.send(action);
            if action == FormAction::Accept
                && completed.wait_for(|done| *done).await.is_ok()
                && let Some(session) = session.upgrade()
            {
                session.emit(Event::FormCompleted { form_id });
            }
        });
        Ok((card, action))
    }
}

/// Why a sign-in link cannot become a card.
#[derive(Debug, thiserror::Error)]
enum SignInCardError {
    #[error("the sign-in link cannot be shown: {0}")]
    Unreadable(Decline),
    #[error("the sign-in link cannot be shown")]
    NotALink,
}

/// Ends the sign-in card, if it is still open, when the sign-in is over.
struct EndOnDrop {
    session: Arc<Session>,
    card: String,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.session.end_card(&self.card, EndReason::CallEnded);
    }
}
