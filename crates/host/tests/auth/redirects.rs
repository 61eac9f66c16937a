//! The redirects an MCP request may follow, and a sign-in slower than the request timeout.

use super::*;

async fn connect_plainly(world: &World, path: &str) -> Result<Plugin, String> {
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.http_headers = vec![("X-Secret".to_owned(), "s3cret".to_owned())];
    let url = format!("{}{path}", world.origin);
    Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .map_err(|err| err.to_string())
}

#[tokio::test]
async fn mcp_requests_follow_redirects_within_the_origin_only() {
    let (world, seen_elsewhere) = world(Hostility::None).await;
    let plugin = connect_plainly(&world, "/moved").await.unwrap();
    plugin.list_tools().await.unwrap();
    plugin.close().await;
    let seen = seen_lines(&world);
    // Moved once; every later message goes to the new place at once.
    assert_eq!(
        seen.iter().filter(|line| *line == "POST /moved").count(),
        1,
        "{seen:?}"
    );
    assert!(
        seen.iter().filter(|line| *line == "POST /open").count() >= 3,
        "{seen:?}"
    );

    let err = connect_plainly(&world, "/away").await.err().unwrap();
    assert!(
        err.contains("the plugin redirected to another origin (http://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.contains("formwork follows redirects of MCP requests only within the server's origin"),
        "{err}"
    );
    assert!(
        seen_elsewhere.lock().unwrap().is_empty(),
        "the message and its headers stayed home"
    );

    let err = connect_plainly(&world, "/again").await.err().unwrap();
    assert!(err.contains("the plugin answered HTTP 307"), "{err}");

    let plugin = connect_plainly(&world, "/v1/hop").await.unwrap();
    plugin.list_tools().await.unwrap();
    plugin.close().await;
    let seen = seen_lines(&world);
    assert!(seen.contains(&"POST /v2/open".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"POST /v1/open".to_owned()), "{seen:?}");
}

/// A person who takes `delay` on the authorization page, then signs in as [`HeadlessSignIn`] does.
struct SlowSignIn {
    delay: std::time::Duration,
    inner: HeadlessSignIn,
}

struct SlowRedirect {
    delay: std::time::Duration,
    inner: Box<dyn PendingRedirect>,
}

impl SignInAgent for SlowSignIn {
    fn start(&self) -> BoxFuture<Result<Box<dyn PendingRedirect>, SignInError>> {
        let (delay, started) = (self.delay, self.inner.start());
        Box::pin(async move {
            let inner = started.await?;
            Ok(Box::new(SlowRedirect { delay, inner }) as Box<dyn PendingRedirect>)
        })
    }
}

impl PendingRedirect for SlowRedirect {
    fn redirect_uri(&self) -> String {
        self.inner.redirect_uri()
    }

    fn complete(
        self: Box<Self>,
        authorization_url: String,
        state: String,
    ) -> BoxFuture<Result<String, SignInError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.complete(authorization_url, state).await
        })
    }
}

#[tokio::test]
async fn a_sign_in_longer_than_the_request_timeout_does_not_time_the_request_out() {
    let (world, _) = world(Hostility::ChallengesAfterOpening).await;
    let url = format!("{}/mcp", world.origin);
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.request_timeout = std::time::Duration::from_millis(300);
    options.auth = Some(Arc::new(Authorizer::new(
        "guarded",
        url.clone(),
        AuthSettings::default(),
        None,
        Some(Arc::new(SlowSignIn {
            delay: std::time::Duration::from_millis(1200),
            inner: HeadlessSignIn::new("http://localhost:3000/callback"),
        })),
    )));
    let plugin = Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    // `tools/list` meets the 401; the person takes four times the request timeout to sign in.
    assert_eq!(
        plugin.list_tools().await.unwrap(),
        Vec::<serde_json::Value>::new()
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(1200));
    plugin.close().await;
}
