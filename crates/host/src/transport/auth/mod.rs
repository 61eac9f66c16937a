//! Signing in to remote (Streamable HTTP) plugins with OAuth: the settings a server's config
//! resolves to, and where the tokens are kept between runs.

pub mod settings;
pub mod store;
