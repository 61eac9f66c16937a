//! The sealed `requestState` of a 2026-07-28 round: the answers of earlier rounds and the keys of
//! the questions in flight, encrypted and authenticated with XChaCha20-Poly1305.
//!
//! The associated data binds the state to the tool's name, a SHA-256 digest of its arguments and
//! the principal, so state minted for one call opens for no other; the expiry is inside the sealed
//! text. Whatever fails to open is refused before any tool code runs. The random nonce names the
//! state, so that `consumed.rs` can accept each one once.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

const NONCE_BYTES: usize = 24;

/// What names one sealed state: its nonce, random and authenticated with the rest.
pub(crate) type StateId = [u8; NONCE_BYTES];

/// The secret that seals `requestState`. Every instance of a plugin that may receive another's
/// retry (several processes behind one endpoint) must use the same key; the record of used states
/// is each process's own, though, so a state could then be presented once to each process.
#[derive(Clone)]
pub struct StateKey(XChaCha20Poly1305);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A key from 32 secret bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> StateKey {
        StateKey(XChaCha20Poly1305::new(&bytes.into()))
    }

    /// A fresh random key: state sealed with it opens only in this process.
    pub fn random() -> StateKey {
        StateKey(XChaCha20Poly1305::new(&XChaCha20Poly1305::generate_key(
            &mut OsRng,
        )))
    }
}

/// What a call's state is bound to.
pub(crate) struct Binding<'a> {
    pub tool: &'a str,
    pub arguments: Option<&'a Map<String, Value>>,
    pub principal: Option<&'a str>,
}

impl Binding<'_> {
    fn associated_data(&self) -> Vec<u8> {
        let arguments = self
            .arguments
            .map(|arguments| serde_json::to_vec(arguments).unwrap_or_default())
            .unwrap_or_default();
        let mut data = b"formwork-sdk requestState v2\0".to_vec();
        data.extend_from_slice(self.tool.as_bytes());
        data.push(0);
        data.extend_from_slice(&Sha256::digest(&arguments));
        match self.principal {
            Some(principal) => {
                data.push(1);
                data.extend_from_slice(principal.as_bytes());
            }
            None => data.push(0),
        }
        data
    }
}

/// The sealed contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct State {
    /// Milliseconds since the Unix epoch after which the state is refused.
    pub expires: u64,
    /// The keys of the questions the client is answering.
    pub asking: Vec<String>,
    /// The answers (`ElicitResult`s) of earlier rounds, by key.
    pub answers: Map<String, Value>,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

impl State {
    pub fn new(ttl: Duration, asking: Vec<String>, answers: Map<String, Value>) -> State {
        State {
            expires: now_millis().saturating_add(ttl.as_millis() as u64),
            asking,
            answers,
        }
    }
}

impl StateKey {
    pub(crate) fn seal(&self, state: &State, binding: &Binding<'_>) -> String {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let plain = serde_json::to_vec(state).unwrap_or_default();
        let aad = binding.associated_data();
        let sealed = self
            .0
            .encrypt(
                &nonce,
                Payload {
                    msg: &plain,
                    aad: &aad,
                },
            )
            .unwrap_or_default();
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The state and its id, if `text` was sealed by this key for this binding and has not
    /// expired at `now` (milliseconds since the Unix epoch).
    pub(crate) fn open(
        &self,
        text: &str,
        binding: &Binding<'_>,
        now: u64,
    ) -> Option<(StateId, State)> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        if bytes.len() < NONCE_BYTES {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let aad = binding.associated_data();
        let plain = self
            .0
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: &aad,
                },
            )
            .ok()?;
        let state: State = serde_json::from_slice(&plain).ok()?;
        let id = StateId::try_from(nonce).ok()?;
        (now < state.expires).then_some((id, state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(tool: &'a str, principal: Option<&'a str>) -> Binding<'a> {
        Binding {
            tool,
            arguments: None,
            principal,
        }
    }

    #[test]
    fn state_opens_only_for_its_binding_and_key() {
        let key = StateKey::random();
        let state = State::new(Duration::from_secs(60), vec!["ask-1".into()], Map::new());
        let sealed = key.seal(&state, &binding("deploy", Some("alice")));
        let open = |key: &StateKey, binding: &Binding<'_>| {
            key.open(&sealed, binding, now_millis())
                .map(|(_, state)| state)
        };
        assert_eq!(open(&key, &binding("deploy", Some("alice"))), Some(state));
        assert_eq!(open(&key, &binding("other", Some("alice"))), None);
        assert_eq!(open(&key, &binding("deploy", Some("bob"))), None);
        assert_eq!(open(&key, &binding("deploy", None)), None);
        assert_eq!(
            open(&StateKey::random(), &binding("deploy", Some("alice"))),
            None
        );
    }

    #[test]
    fn expired_state_does_not_open() {
        let key = StateKey::random();
        let state = State::new(Duration::ZERO, vec!["ask-1".into()], Map::new());
        let sealed = key.seal(&state, &binding("deploy", None));
        assert_eq!(
            key.open(&sealed, &binding("deploy", None), state.expires),
            None
        );
    }
}
