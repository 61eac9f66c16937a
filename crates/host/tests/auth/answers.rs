//! Token answers, refresh tokens and issuers the host must not trust.

use super::*;

#[tokio::test]
async fn login_to_a_server_that_opens_without_a_token_reads_its_resource_metadata_once() {
    let (world, seen_elsewhere) = world(Hostility::ChallengesAfterOpening).await;
    let url = format!("{}/mcp", world.origin);
    let authorizer = Authorizer::new(
        "guarded",
        url,
        AuthSettings::default(),
        None,
        Some(Arc::new(HeadlessSignIn::new(
            "http://localhost:3000/callback",
        ))),
    );
    authorizer
        .sign_in(&formwork_host::sign_in_probe(), &[])
        .await
        .unwrap();
    let seen = seen_lines(&world);
    let metadata_reads = seen
        .iter()
        .filter(|line| line.contains("/.well-known/oauth-protected-resource"))
        .count();
    assert_eq!(metadata_reads, 1, "{seen:?}");
    assert!(
        seen.iter().any(|line| line.starts_with("GET /authorize?")),
        "{seen:?}"
    );
    assert_eq!(seen.last().map(String::as_str), Some("POST /token"));
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_malformed_token_answer_is_refused_by_its_faults_without_quoting_a_token() {
    let outcome = connect_to(Hostility::MalformedTokenAnswer).await;
    refused(
        &outcome,
        "/token answered something that is not a token response: `token_type` is missing; `expires_in` is not a whole number of seconds",
    );
    let err = outcome.result.as_ref().unwrap_err();
    assert!(!err.contains("SECRET"), "{err}");
}

#[tokio::test]
async fn an_access_token_that_would_write_a_header_is_refused_unquoted() {
    let outcome = connect_to(Hostility::InjectingTokenAnswer).await;
    refused(
        &outcome,
        "the token answer's `access_token` is not a bearer token: RFC 6750 allows only letters, digits, `-._~+/` and a trailing `=`",
    );
    let err = outcome.result.as_ref().unwrap_err();
    assert!(!err.contains("SECRET"), "{err}");
}

#[tokio::test]
async fn without_resource_metadata_an_issuer_on_another_origin_is_refused() {
    let outcome = connect_to(Hostility::LegacyForeignIssuer).await;
    refused(&outcome, "names the issuer `http://127.0.0.1:");
    let err = outcome.result.as_ref().unwrap_err();
    assert!(err.contains("which is not on the server's origin"), "{err}");
    assert!(!requested(&outcome, "POST /register"));
}

#[tokio::test]
async fn a_client_that_sends_its_secret_in_the_body_refreshes_the_same_way() {
    let (world, _) = world(Hostility::RefreshingWithSecretInBody).await;
    let plugin = connect(&world).await.unwrap();
    // Signed in, then refreshed at once (the first token expires in 5 s): both with the secret
    // in the body, the one method the server offers, and no Basic header.
    let in_body = "token auth basic=false client_secret=client-s3cret";
    assert_eq!(
        token_requests(&world),
        [
            "token grant_type=authorization_code refresh_token=",
            in_body,
            "token grant_type=refresh_token refresh_token=refresh-1",
            in_body,
        ]
    );
    plugin.list_tools().await.unwrap();
    plugin.close().await;
}

#[tokio::test]
async fn a_refresh_token_the_server_refused_is_not_sent_again() {
    let (world, _) = world(Hostility::RefusesRefresh).await;
    let plugin = connect(&world).await.unwrap();
    // The first token expires in 5 s: each request wants it refreshed first, but after the
    // server refused the refresh token once, it is forgotten and the token used while it lasts.
    for _ in 0..3 {
        plugin.list_tools().await.unwrap();
    }
    assert_eq!(
        token_requests(&world),
        [
            "token grant_type=authorization_code refresh_token=",
            "token grant_type=refresh_token refresh_token=refresh-1",
        ]
    );
    plugin.close().await;
}

/// Another process refreshed the same sign-in a moment before this one (the server rotates
/// refresh tokens, so ours is refused as spent): the entry that process wrote stays in the
/// file, refresh token and all, and this connection goes on with its tokens.
#[tokio::test]
async fn a_refresh_token_rotated_by_another_process_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::RotatedElsewhere).await;
    *world.other_process.lock().unwrap() = Some(dir.path().to_owned());
    let plugin = connect_keeping(&world, Some(Arc::clone(&store)))
        .await
        .unwrap();
    assert_eq!(token_requests(&world), SIGNED_IN);
    let kept = store
        .load("guarded", &format!("{}/mcp", world.origin))
        .unwrap()
        .unwrap();
    assert_eq!(
        (kept.access_token.as_str(), kept.refresh_token.as_deref()),
        ("token-other", Some("refresh-other"))
    );
    let before = world.seen.lock().unwrap().len();
    plugin.list_tools().await.unwrap();
    let after = world.seen.lock().unwrap()[before..].to_vec();
    assert!(
        after.iter().any(|(line, _)| line == "POST /mcp")
            && after
                .iter()
                .all(|(_, auth)| auth.as_deref() == Some("Bearer token-other")),
        "{after:?}"
    );
    assert_eq!(token_requests(&world), SIGNED_IN, "no other refresh");
    plugin.close().await;
}

/// `oauth.issuer` pins the authorization server: one with another issuer ends the sign-in
/// right after discovery, naming both, before the client's secret (or a registration, or the
/// person's browser) goes anywhere. The same issuer, written with a trailing slash, signs in.
#[tokio::test]
async fn an_authorization_server_other_than_the_pinned_issuer_gets_no_credentials() {
    for grant in [Grant::ClientCredentials, Grant::AuthorizationCode] {
        let (world, seen_elsewhere) = world(Hostility::None).await;
        let pinned = |issuer: String| AuthSettings {
            client_id: Some("formwork".to_owned()),
            client_secret: Some("client-SECRET".to_owned()),
            issuer: Some(issuer),
            grant,
            ..AuthSettings::default()
        };
        let err = connect_with(&world, None, pinned("https://auth.example.com".to_owned()))
            .await
            .err()
            .unwrap();
        assert!(
            err.contains(&format!(
                "signing in to guarded failed: its authorization server is `{}`, but `oauth.issuer` is `https://auth.example.com`; formwork signs in, and sends the client's credentials, only at the configured issuer",
                world.origin
            )),
            "{err}"
        );
        assert!(!err.contains("SECRET"), "{err}");
        let seen = seen_lines(&world);
        assert_eq!(
            seen.last().map(String::as_str),
            Some("GET /.well-known/oauth-authorization-server"),
            "{seen:?}"
        );
        assert!(seen_elsewhere.lock().unwrap().is_empty());

        let plugin = connect_with(&world, None, pinned(format!("{}/", world.origin)))
            .await
            .unwrap();
        plugin.close().await;
        assert!(
            seen_lines(&world).iter().any(|line| line == "POST /token"),
            "{:?}",
            seen_lines(&world)
        );
    }
}

/// Tokens kept from an issuer other than the pinned one are neither sent nor refreshed (that
/// would send the client's secret there): the server is signed in to again, at the pinned
/// issuer.
#[tokio::test]
async fn a_stored_sign_in_from_another_issuer_is_not_used_under_a_pin() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TokenStore::new(CredentialsStoreMode::File, dir.path()));
    let (world, _) = world(Hostility::None).await;
    let url = format!("{}/mcp", world.origin);
    store
        .save(&StoredTokens {
            server_name: "guarded".to_owned(),
            url: url.clone(),
            issuer: "https://old-auth.example.com".to_owned(),
            token_endpoint: "https://old-auth.example.com/token".to_owned(),
            client_id: "formwork".to_owned(),
            client_secret: Some("client-SECRET".to_owned()),
            token_endpoint_auth: None,
            access_token: "old-token".to_owned(),
            refresh_token: Some("old-refresh".to_owned()),
            expires_at: Some(u64::MAX),
            scopes: Vec::new(),
            resource: Some(url.clone()),
        })
        .unwrap();
    let settings = AuthSettings {
        client_id: Some("formwork".to_owned()),
        client_secret: Some("client-SECRET".to_owned()),
        issuer: Some(world.origin.clone()),
        grant: Grant::ClientCredentials,
        ..AuthSettings::default()
    };
    let plugin = connect_with(&world, Some(Arc::clone(&store)), settings)
        .await
        .unwrap();
    plugin.close().await;
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .all(|(_, auth)| auth.as_deref() != Some("Bearer old-token")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|(line, _)| line == "POST /token"),
        "{seen:?}"
    );
    let kept = store.load("guarded", &url).unwrap().unwrap();
    assert_eq!(kept.issuer, world.origin);
    assert_eq!(kept.access_token, "secret-token-1");
}

#[tokio::test]
async fn metadata_that_never_comes_ends_the_sign_in_after_a_while() {
    let started = std::time::Instant::now();
    let outcome = connect_to(Hostility::SilentMetadata).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp got no whole answer within 20 s",
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(40));
}

/// Cross-app access takes only an ID-JAG from the identity provider: an access token of the
/// provider's own is refused, it never reaches the authorization server, and the error quotes
/// no token.
#[tokio::test]
async fn an_identity_provider_answering_no_id_jag_is_refused() {
    let (world, seen_elsewhere) = world(Hostility::IdpAnswersAnAccessToken).await;
    let settings = AuthSettings {
        client_id: Some("formwork".to_owned()),
        client_secret: Some("client-SECRET".to_owned()),
        grant: Grant::CrossAppAccess,
        identity_provider: Some(IdentityProvider {
            token_endpoint: format!("{}/idp/token", world.origin),
            client_id: "formwork-idp".to_owned(),
            client_secret: None,
            id_token: "id-SECRET-token".to_owned(),
        }),
        ..AuthSettings::default()
    };
    let err = connect_with(&world, None, settings).await.err().unwrap();
    assert!(
        err.contains(&format!(
            "signing in to guarded failed: the identity provider's token endpoint {}/idp/token answered no ID-JAG (issued_token_type urn:ietf:params:oauth:token-type:access_token)",
            world.origin
        )),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
    let seen = world.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|(line, _)| line.starts_with("POST /idp/token")),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|(line, _)| line.starts_with("POST /token")),
        "{seen:?}"
    );
    assert!(seen_elsewhere.lock().unwrap().is_empty());
}

/// A registration answer that is not JSON is refused by its status and content type, never
/// quoted: it may carry the client's secret.
#[tokio::test]
async fn a_registration_answer_that_is_not_json_is_refused_unquoted() {
    let outcome = connect_to(Hostility::RegistrationAnswersText).await;
    let err = outcome.result.clone().unwrap_err();
    assert!(
        err.contains("/register failed: it answered HTTP 201 with `text/plain`, not JSON ("),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
    assert!(!requested(&outcome, "GET /authorize"));
}
