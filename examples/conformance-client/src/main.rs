//! A minimal MCP client over Streamable HTTP, built on `formwork-host`, for the official
//! conformance suite's client scenarios: `conformance client --command conformance-client`.
//!
//! The suite starts a test server and runs this binary with the server URL as the last
//! argument. The client connects, lists the tools, calls each one, and accepts every form with
//! its defaults (the `elicitation-sep1034-client-defaults` scenario checks exactly that).
//!
//! Servers that ask for authorization get formwork's OAuth client, as `formwork login` runs
//! it, except for the browser: the suite's authorization server redirects at once, so the
//! authorization URL is visited headlessly. The suite's `MCP_CONFORMANCE_CONTEXT` (a
//! pre-registered client, client credentials, the identity provider of cross-app access)
//! becomes the server's `oauth` settings.

use std::sync::Arc;

use formwork_host::auth::Authorizer;
use formwork_host::auth::agent::HeadlessSignIn;
use formwork_host::auth::settings::{AuthSettings, Grant, IdentityProvider};
use formwork_host::{
    BoxFuture, ConnectOptions, ElicitationRequest, FormPrompt, FormReply, FormResponder, Plugin,
    PluginTarget,
};
use serde_json::{Value, json};

/// The client ID metadata document the suite expects a client to use where the server takes one.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Never served: the headless visit reads the redirect instead of following it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// Accepts every form with its defaults, and every URL request.
struct AcceptDefaults;

impl FormResponder for AcceptDefaults {
    fn respond(&self, prompt: FormPrompt) -> BoxFuture<FormReply> {
        let reply = match (&prompt.request, prompt.request.form()) {
            (ElicitationRequest::Url(_), _) => FormReply::accept_url(),
            (ElicitationRequest::Form(_), None) => FormReply::cancel(),
            (ElicitationRequest::Form(_), Some(form)) => match form.default_content() {
                Ok(content) => FormReply::accept(content),
                Err(errors) => {
                    eprintln!("conformance-client: cannot accept with defaults: {errors}");
                    FormReply::cancel()
                }
            },
        };
        Box::pin(async move { reply })
    }
}

/// Arguments for the tools the suite's scenarios expose.
fn arguments_for(tool: &str) -> Value {
    match tool {
        "add_numbers" => json!({"a": 2, "b": 3}),
        _ => json!({}),
    }
}

/// The `oauth` settings the suite's context describes.
fn auth_settings() -> anyhow::Result<AuthSettings> {
    let mut settings = AuthSettings {
        client_metadata_url: Some(CLIENT_METADATA_URL.to_owned()),
        ..AuthSettings::default()
    };
    let Ok(context) = std::env::var("MCP_CONFORMANCE_CONTEXT") else {
        return Ok(settings);
    };
    let context: Value = serde_json::from_str(&context)?;
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    settings.client_id = text("client_id");
    settings.client_secret = text("client_secret");
    settings.private_key_pem = text("private_key_pem");
    settings.signing_algorithm = text("signing_algorithm");
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    if scenario.starts_with("auth/client-credentials") {
        settings.grant = Grant::ClientCredentials;
    }
    if scenario.starts_with("auth/cross-app-access") {
        settings.grant = Grant::CrossAppAccess;
        settings.identity_provider = Some(IdentityProvider {
            token_endpoint: text("idp_token_endpoint").unwrap_or_default(),
            client_id: text("idp_client_id").unwrap_or_default(),
            client_secret: text("idp_client_secret"),
            id_token: text("idp_id_token").unwrap_or_default(),
        });
    }
    Ok(settings)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let url = std::env::args()
        .next_back()
        .filter(|arg| arg.starts_with("http"))
        .ok_or_else(|| anyhow::anyhow!("usage: conformance-client <server url>"))?;
    let mut options = ConnectOptions::new("conformance", Arc::new(AcceptDefaults));
    options.client_info = (
        "formwork-conformance-client".to_owned(),
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    options.auth = Some(Arc::new(Authorizer::new(
        "conformance",
        url.clone(),
        auth_settings()?,
        None,
        Some(Arc::new(HeadlessSignIn::new(REDIRECT_URI))),
    )));
    let plugin = Plugin::connect(&PluginTarget::Url(url), options).await?;
    let tools = plugin.list_tools().await?;
    for tool in &tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let result = plugin.call_tool(name, Some(arguments_for(name))).await?;
        println!("{name}: {result}");
    }
    plugin.close().await;
    Ok(())
}
