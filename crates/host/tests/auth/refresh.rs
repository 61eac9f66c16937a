//! Tokens refreshed before they expire and on a 401, scopes stepped up, one sign-in shared by the
//! connections of a store.

use super::*;

/// The MCP endpoint of a `Refreshing` server takes `token` no more.
fn revoke(world: &World, token: &str) {
    world.valid.lock().unwrap().retain(|valid| valid != token);
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent_and_a_refused_one_on_its_401() {
    let (world, _) = world(Hostility::Refreshing).await;
    let plugin = connect(&world).await.unwrap();
    // Signed in once; token-1 expires in 5 s, so the message after `initialize` (the
    // `initialized` notification) refreshed it first.
    assert_eq!(token_requests(&world), SIGNED_IN);
    plugin.list_tools().await.unwrap();
    assert_eq!(token_requests(&world), SIGNED_IN);
    // The server revokes token-2: its 401 is answered with one refresh, and the call goes on.
    revoke(&world, "token-2");
    plugin.list_tools().await.unwrap();
    assert_eq!(
        token_requests(&world)[2..],
        ["token grant_type=refresh_token refresh_token=refresh-2"]
    );
    // Once the token is held, a call costs its one request and nothing more.
    let before = world.seen.lock().unwrap().len();
    plugin.list_tools().await.unwrap();
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..].to_vec();
    assert_eq!(
        after,
        [("POST /mcp".to_owned(), Some("Bearer token-3".to_owned()))],
        "a valid token is not refreshed again"
    );
    let authorizations = world
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(line, _)| line.starts_with("GET /authorize"))
        .count();
    assert_eq!(authorizations, 1);
    plugin.close().await;
}

/// The server revoked the token while the call's stream was down: the resumption's 401 is
/// answered with one refresh, and the call resumes where it was with the new token.
#[tokio::test]
async fn a_token_refused_on_a_calls_resumption_is_refreshed_and_the_call_resumes() {
    let (world, _) = world(Hostility::RevokesWhileResuming).await;
    let plugin = connect(&world).await.unwrap();
    let before = world.seen.lock().unwrap().len();
    let tools = plugin.list_tools().await.unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["resumed"]);
    // The call, its resumptions and the token requests (not the other messages).
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..]
        .iter()
        .filter(|(line, _)| !["GET /mcp", "POST /mcp", "POST /token"].contains(&line.as_str()))
        .cloned()
        .collect();
    let bearer = |token: &str| Some(format!("Bearer {token}"));
    assert_eq!(
        after,
        [
            ("tools/list".to_owned(), bearer("token-2")),
            ("GET /mcp last-event-id=e1".to_owned(), bearer("token-2")),
            (
                "token grant_type=refresh_token refresh_token=refresh-2".to_owned(),
                None
            ),
            ("GET /mcp last-event-id=e1".to_owned(), bearer("token-3")),
        ]
    );
    plugin.close().await;
}

/// Step-ups are bounded per set of scopes the server asks for, not per connection: one
/// connection steps up for `a`, `b` and `c` in turn, each with the scopes it held plus the new
/// one; a scope the server never grants is asked for once, then the call fails clearly.
#[tokio::test]
async fn each_set_of_scopes_steps_up_on_its_own_and_one_never_granted_ends_the_call() {
    let (world, _) = world(Hostility::StepsUp).await;
    let plugin = connect(&world).await.unwrap();
    for tool in ["a", "b", "c"] {
        let result = plugin.call_tool(tool, None).await.unwrap();
        assert_eq!(result["content"][0]["text"], format!("ran {tool}"));
    }
    let err = plugin
        .call_tool("admin", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "guarded refuses the request for want of scope (it asks for `admin`) even after signing in with the scopes it named"
        ),
        "{err}"
    );
    let asked: Vec<String> = seen_lines(&world)
        .iter()
        .filter(|line| line.starts_with("GET /authorize"))
        .map(|line| {
            let query = line.split_once('?').unwrap().1;
            url::form_urlencoded::parse(query.as_bytes())
                .find(|(key, _)| key == "scope")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(asked, ["", "a", "a b", "a b c", "a b c admin"]);
    plugin.close().await;
}

/// Two connections share a token store (as two sessions' connections to one server do). Both
/// refused at once, they refresh once between them: the server may rotate refresh tokens,
/// taking each once; the one that waited reads the renewed token from the store.
#[tokio::test]
async fn connections_sharing_a_store_refresh_once_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::Refreshing).await;
    let first = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    let second = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    // The first signed in, and refreshed its short-lived token-1; the second read token-2.
    assert_eq!(token_requests(&world), SIGNED_IN);
    revoke(&world, "token-2");
    let (one, other) = tokio::join!(first.list_tools(), second.list_tools());
    one.unwrap();
    other.unwrap();
    assert_eq!(
        token_requests(&world)[2..],
        ["token grant_type=refresh_token refresh_token=refresh-2"]
    );
    let before = world.seen.lock().unwrap().len();
    first.list_tools().await.unwrap();
    second.list_tools().await.unwrap();
    let after: Vec<(String, Option<String>)> = world.seen.lock().unwrap()[before..].to_vec();
    let token_3 = ("POST /mcp".to_owned(), Some("Bearer token-3".to_owned()));
    assert_eq!(after, [token_3.clone(), token_3]);
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn a_server_that_refuses_every_token_ends_after_one_sign_in() {
    let outcome = connect_to(Hostility::RefusesEverything).await;
    let err = outcome.result.as_ref().unwrap_err();
    assert!(
        err.contains("signing in to guarded failed")
            || err.contains("guarded refused the token it had just issued (HTTP 401)"),
        "{err}"
    );
    let authorizations = outcome
        .seen
        .iter()
        .filter(|(line, _)| line.starts_with("GET /authorize"))
        .count();
    assert_eq!(authorizations, 1, "{:?}", outcome.seen);
    token_stayed_home(&outcome);
}

#[tokio::test]
async fn a_configured_authorization_header_is_never_signed_in_over() {
    let (world, seen_elsewhere) = world(Hostility::RefusesEverything).await;
    let url = format!("{}/mcp", world.origin);
    let mut options = ConnectOptions::new("guarded", Arc::new(NoForms));
    options.protocol = Some(formwork_host::PROTOCOL_VERSION);
    options.http_headers = vec![("Authorization".to_owned(), "Bearer configured".to_owned())];
    options.auth = Some(Arc::new(Authorizer::new(
        "guarded",
        url.clone(),
        AuthSettings::default(),
        None,
        Some(Arc::new(HeadlessSignIn::new(
            "http://localhost:3000/callback",
        ))),
    )));
    let err = Plugin::connect(&PluginTarget::Url(url), options)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("the plugin answered HTTP 401"), "{err}");
    assert!(
        err.contains("(it refused the configured Authorization header)"),
        "{err}"
    );
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|(line, _)| line.starts_with("POST /mcp")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() == Some("Bearer configured"))
    );
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}
