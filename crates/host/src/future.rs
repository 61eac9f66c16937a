//! The boxed future the host's traits return (a responder's answer, a sign-in agent's steps):
//! one definition at the bottom of the crate, which every room may use.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, as returned by `FormResponder::respond` and the `SignInAgent` steps.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
