//! Sign-ins refused by the hostile servers' faults, with no token sent where it should not go.

use super::*;

#[tokio::test]
async fn a_well_behaved_server_signs_in_and_only_its_endpoint_sees_the_token() {
    let outcome = connect_to(Hostility::None).await;
    outcome.result.as_ref().unwrap();
    let with_token: Vec<&String> = outcome
        .seen
        .iter()
        .filter(|(_, auth)| auth.is_some())
        .map(|(line, _)| line)
        .collect();
    assert!(!with_token.is_empty());
    assert!(
        outcome
            .seen
            .iter()
            .filter(|(_, auth)| auth.is_some())
            .all(|(_, auth)| auth.as_deref() == Some("Bearer secret-token-1"))
    );
    token_stayed_home(&outcome);
}

#[tokio::test]
async fn a_token_endpoint_on_another_origin_is_refused() {
    let outcome = connect_to(Hostility::ForeignTokenEndpoint).await;
    let elsewhere = outcome
        .result
        .as_ref()
        .err()
        .and_then(|err| err.split("another origin (").nth(1))
        .map(str::to_owned);
    refused(
        &outcome,
        "names a token_endpoint on another origin (http://127.0.0.1:",
    );
    assert!(elsewhere.unwrap().starts_with("http://127.0.0.1:"));
    assert!(!requested(&outcome, "GET /authorize"));
}

#[tokio::test]
async fn a_server_without_pkce_is_refused() {
    let outcome = connect_to(Hostility::NoPkce).await;
    refused(
        &outcome,
        "does not offer PKCE with S256 (code_challenge_methods_supported); formwork does not sign in without it",
    );
    assert!(!requested(&outcome, "GET /authorize"));
    assert!(!requested(&outcome, "POST /register"));
}

#[tokio::test]
async fn a_forged_state_is_refused_and_its_code_never_exchanged() {
    let outcome = connect_to(Hostility::ForgedState).await;
    refused(
        &outcome,
        "signing in to guarded failed: the sign-in redirect carried another `state` than the one sent: refused (a stale or forged redirect)",
    );
    assert!(requested(&outcome, "GET /authorize"));
    assert!(!requested(&outcome, "POST /token"));
}

#[tokio::test]
async fn a_token_endpoint_that_answers_html_is_refused() {
    let outcome = connect_to(Hostility::HtmlTokenAnswer).await;
    refused(
        &outcome,
        "/token answered something that is not a token response",
    );
    assert!(requested(&outcome, "POST /token"));
}

#[tokio::test]
async fn ten_megabytes_of_metadata_are_refused() {
    let outcome = connect_to(Hostility::HugeMetadata).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp is larger than 256 KiB",
    );
}

#[tokio::test]
async fn an_endless_redirect_is_refused() {
    let outcome = connect_to(Hostility::EndlessRedirect).await;
    refused(
        &outcome,
        "/.well-known/oauth-protected-resource/mcp redirects more than 5 times",
    );
}

#[tokio::test]
async fn a_metadata_redirect_to_another_origin_is_not_followed() {
    let outcome = connect_to(Hostility::ForeignRedirect).await;
    refused(&outcome, "redirects to another origin (http://127.0.0.1:");
}
