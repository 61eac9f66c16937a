//! The `[mcp_servers.<name>.oauth]` table of a server, read and checked: a grant its keys can
//! carry out, and URLs that can be what they name.

use std::path::Path;

use super::error::ConfigError;
use super::load::{Ctx, RawOAuth};
use super::types::{IdentityProviderConfig, OAuthConfig};
use crate::oauth_choices::Grant;

/// `[mcp_servers.<name>.oauth]`, checked: a grant the keys can carry out, and a metadata URL
/// that can be one. A relative `private_key_file` is made relative to the file's directory.
pub(super) fn build_oauth(
    ctx: &Ctx<'_>,
    name: &str,
    raw: RawOAuth,
) -> Result<OAuthConfig, ConfigError> {
    let at = |key: &'static str| ["mcp_servers", name, "oauth", key];
    let grant = match raw.grant.as_deref() {
        None => Grant::default(),
        Some(text) => Grant::parse(text).ok_or_else(|| {
            ctx.error(
                &at("grant"),
                format!(
                    r#"unknown grant "{text}", expected "authorization_code", "client_credentials" or "cross_app_access""#
                ),
            )
        })?,
    };
    if let Some(url) = &raw.client_metadata_url {
        check_metadata_url(url)
            .map_err(|reason| ctx.error(&at("client_metadata_url"), reason.to_string()))?;
    }
    if let Some(issuer) = &raw.issuer {
        check_issuer(issuer).map_err(|reason| ctx.error(&at("issuer"), reason.to_string()))?;
    }
    if raw.client_secret_env_var.is_some() && raw.client_id.is_none() {
        return Err(ctx.error(
            &at("client_secret_env_var"),
            "a client secret needs the `client_id` it belongs to",
        ));
    }
    if raw.private_key_file.is_some() && grant != Grant::ClientCredentials {
        return Err(ctx.error(
            &at("private_key_file"),
            r#"a private key signs in with grant = "client_credentials" only"#,
        ));
    }
    if raw.signing_algorithm.is_some() && raw.private_key_file.is_none() {
        return Err(ctx.error(
            &at("signing_algorithm"),
            "the signing algorithm is for the key of `private_key_file`, which is not given",
        ));
    }
    if grant == Grant::ClientCredentials {
        if raw.client_id.is_none() {
            return Err(ctx.error(
                &at("grant"),
                "the client_credentials grant needs `client_id`",
            ));
        }
        match (&raw.client_secret_env_var, &raw.private_key_file) {
            (None, None) => {
                return Err(ctx.error(
                    &at("grant"),
                    "the client_credentials grant needs `client_secret_env_var` or \
                     `private_key_file`",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(ctx.error(
                    &at("private_key_file"),
                    "the client signs in with `client_secret_env_var` or with \
                     `private_key_file`; keep one of the two",
                ));
            }
            _ => {}
        }
    }
    let identity_provider = identity_provider(ctx, name, grant, &raw)?;
    let base = ctx.path.and_then(Path::parent);
    let private_key_file = raw.private_key_file.map(|file| match base {
        Some(dir) if file.is_relative() => dir.join(file),
        _ => file,
    });
    Ok(OAuthConfig {
        client_id: raw.client_id,
        client_secret_env_var: raw.client_secret_env_var,
        client_metadata_url: raw.client_metadata_url,
        issuer: raw.issuer,
        grant,
        private_key_file,
        signing_algorithm: raw.signing_algorithm,
        identity_provider,
    })
}

/// The identity provider of the `cross_app_access` grant: its keys, all there for that grant
/// (with `client_id` at the authorization server), none for another.
fn identity_provider(
    ctx: &Ctx<'_>,
    name: &str,
    grant: Grant,
    raw: &RawOAuth,
) -> Result<Option<IdentityProviderConfig>, ConfigError> {
    let at = |key: &'static str| ["mcp_servers", name, "oauth", key];
    let keys = [
        ("idp_token_endpoint", &raw.idp_token_endpoint),
        ("idp_client_id", &raw.idp_client_id),
        ("idp_client_secret_env_var", &raw.idp_client_secret_env_var),
        ("id_token_env_var", &raw.id_token_env_var),
    ];
    if grant != Grant::CrossAppAccess {
        return match keys.iter().find(|(_, value)| value.is_some()) {
            Some((key, _)) => Err(ctx.error(
                &at(key),
                r#"the identity provider's keys are for grant = "cross_app_access" only"#,
            )),
            None => Ok(None),
        };
    }
    if raw.client_id.is_none() {
        return Err(ctx.error(
            &at("grant"),
            "the cross_app_access grant needs `client_id` (formwork's client at the server's \
             authorization server)",
        ));
    }
    let required = |key: &'static str, value: &Option<String>| {
        value.clone().ok_or_else(|| {
            ctx.error(
                &at("grant"),
                format!("the cross_app_access grant needs `{key}`"),
            )
        })
    };
    let token_endpoint = required("idp_token_endpoint", &raw.idp_token_endpoint)?;
    let client_id = required("idp_client_id", &raw.idp_client_id)?;
    let id_token_env_var = required("id_token_env_var", &raw.id_token_env_var)?;
    let usable = url::Url::parse(&token_endpoint)
        .is_ok_and(|url| https_or_local_http(&url) && url.fragment().is_none());
    if !usable {
        return Err(ctx.error(
            &at("idp_token_endpoint"),
            "expected the identity provider's token endpoint, an https:// URL (http:// only to \
             localhost)",
        ));
    }
    Ok(Some(IdentityProviderConfig {
        token_endpoint,
        client_id,
        client_secret_env_var: raw.idp_client_secret_env_var.clone(),
        id_token_env_var,
    }))
}

/// https, or plain http to this machine (a development server).
fn https_or_local_http(url: &url::Url) -> bool {
    let local = matches!(url.host(), Some(url::Host::Domain("localhost")))
        || matches!(url.host(), Some(url::Host::Ipv4(ip)) if ip.is_loopback())
        || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback());
    url.scheme() == "https" || (url.scheme() == "http" && local)
}

/// An issuer is an https URL without a query or fragment (RFC 8414 §2); plain http only to
/// this machine.
fn check_issuer(text: &str) -> Result<(), UnusableUrl> {
    let usable = url::Url::parse(text).is_ok_and(|url| {
        https_or_local_http(&url) && url.query().is_none() && url.fragment().is_none()
    });
    usable.then_some(()).ok_or(UnusableUrl::Issuer)
}

/// An OAuth URL key whose value cannot be what the key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum UnusableUrl {
    #[error(
        "expected the authorization server's issuer, an https:// URL without a query or \
         fragment (http:// only to localhost), such as https://auth.example.com"
    )]
    Issuer,
    #[error(
        "expected an https URL with a path and no fragment (the client ID metadata \
         document), such as https://example.com/formwork-client.json"
    )]
    MetadataUrl,
    #[error(
        "expected an http:// or https:// URL without a fragment (the resource to ask \
         tokens for)"
    )]
    Resource,
}

/// A client ID metadata document is named by an https URL with a path.
fn check_metadata_url(text: &str) -> Result<(), UnusableUrl> {
    let usable = url::Url::parse(text)
        .is_ok_and(|url| url.scheme() == "https" && url.path() != "/" && url.fragment().is_none());
    usable.then_some(()).ok_or(UnusableUrl::MetadataUrl)
}

/// An RFC 8707 resource is an absolute URI without a fragment; formwork's are http(s) URLs.
pub(super) fn check_resource(text: &str) -> Result<(), UnusableUrl> {
    let usable = url::Url::parse(text)
        .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.fragment().is_none());
    usable.then_some(()).ok_or(UnusableUrl::Resource)
}
