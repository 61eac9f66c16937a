//! The host's own authorizers and its token store: a connection the host makes for itself
//! signs in with the store of its data directory, opened once.

use std::sync::Arc;

use crate::sign_on::{SignOnError, authorizer_for, token_store};
use crate::transport::auth::Authorizer;
use crate::transport::auth::store::TokenStore;

impl crate::Host {
    /// The authorizer of a connection of the host's own (not a session's) to the server
    /// `name`: the host's token store, and nobody to sign in (a sign-in comes from a session's
    /// card, or `formwork login`).
    pub fn authorizer(&self, name: &str, url: &str) -> Result<Arc<Authorizer>, SignOnError> {
        authorizer_for(&self.config(), name, url, self.inner.token_store(), None)
    }
}

impl super::HostInner {
    /// The token store of [`HostOptions::data_dir`](crate::HostOptions::data_dir), opened on
    /// first use and then shared: its first load or save (on a blocking thread) asks an `auto`
    /// store's keyring whether it answers, once.
    pub(super) fn token_store(&self) -> Option<Arc<TokenStore>> {
        self.token_store
            .get_or_init(|| {
                let dir = self.options.data_dir.as_deref()?;
                Some(token_store(&self.config(), dir))
            })
            .clone()
    }
}
