//! The OAuth token store at its boundary: `TokenStore` over a real data directory. The file
//! store is checked byte for byte and mode for mode. The keyring tests take the machine as it
//! is: without a keyring (no session bus) they check the error and the fall-back to the
//! file; with one they round-trip through it. A Secret Service for them on Linux:
//! `dbus-run-session -- sh -c 'echo -n pw | gnome-keyring-daemon --unlock --components=secrets
//! && cargo test -p formwork-host --test token_store'`. `formwork logout` points the session bus
//! nowhere to check the fall-back deterministically (`crates/cli/tests/remote_auth.rs`); the
//! keyring itself is exercised on every run by `formwork login` against a private GNOME Keyring
//! (`crates/cli/tests/oauth_sign_in.rs`).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use formwork_host::{
    CREDENTIALS_FILE, CREDENTIALS_LOCK_FILE, CredentialsStoreMode, StoredTokens, TokenPlace,
    TokenStore, TokenStoreError,
};

fn tokens(server_name: &str, url: &str, access_token: &str) -> StoredTokens {
    StoredTokens {
        server_name: server_name.to_owned(),
        url: url.to_owned(),
        issuer: "https://auth.example.com".to_owned(),
        token_endpoint: "https://auth.example.com/token".to_owned(),
        client_id: "formwork-client".to_owned(),
        client_secret: Some("client-s3cret".to_owned()),
        token_endpoint_auth: Some("client_secret_post".to_owned()),
        access_token: access_token.to_owned(),
        refresh_token: Some("refresh-t0ken".to_owned()),
        expires_at: Some(1_790_000_000),
        scopes: vec!["docs:read".to_owned()],
        resource: Some(url.to_owned()),
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn the_file_store_keeps_each_server_and_url_apart_in_a_private_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let store = TokenStore::new(CredentialsStoreMode::File, &data);
    let file = data.join(CREDENTIALS_FILE);
    assert_eq!(
        store.place().to_string(),
        format!("file {}", file.display())
    );
    assert_eq!(store.load("docs", "https://docs.example.com/mcp"), Ok(None));
    assert!(!data.exists(), "reading creates nothing");

    let docs = tokens("docs", "https://docs.example.com/mcp", "docs-access");
    let wiki = tokens("wiki", "https://wiki.example.com/mcp", "wiki-access");
    assert_eq!(store.save(&docs), Ok(TokenPlace::File(file.clone())));
    store.save(&wiki).expect("save wiki");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(
        names_in(&data),
        [CREDENTIALS_FILE, CREDENTIALS_LOCK_FILE],
        "no temporary file is left"
    );
    assert_eq!(mode(&data.join(CREDENTIALS_LOCK_FILE)), 0o600);
    assert_eq!(
        store.load("docs", "https://docs.example.com/mcp"),
        Ok(Some(docs.clone()))
    );
    assert_eq!(
        store.load("wiki", "https://wiki.example.com/mcp"),
        Ok(Some(wiki.clone()))
    );
    // Another process (another TokenStore) reads the same file.
    let again = TokenStore::new(CredentialsStoreMode::File, &data);
    assert_eq!(
        again.load("docs", "https://docs.example.com/mcp"),
        Ok(Some(docs.clone()))
    );

    // The file is one JSON object keyed by name and URL.
    let text = std::fs::read_to_string(&file).expect("read");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
    assert_eq!(
        keys,
        [
            "docs https://docs.example.com/mcp",
            "wiki https://wiki.example.com/mcp"
        ]
    );
    assert_eq!(
        json["docs https://docs.example.com/mcp"],
        serde_json::json!({
            "server_name": "docs",
            "url": "https://docs.example.com/mcp",
            "issuer": "https://auth.example.com",
            "token_endpoint": "https://auth.example.com/token",
            "client_id": "formwork-client",
            "client_secret": "client-s3cret",
            "token_endpoint_auth": "client_secret_post",
            "access_token": "docs-access",
            "refresh_token": "refresh-t0ken",
            "expires_at": 1_790_000_000,
            "scopes": ["docs:read"],
            "resource": "https://docs.example.com/mcp"
        })
    );

    // A server whose URL changed does not get the old URL's tokens.
    assert_eq!(store.load("docs", "https://docs.example.org/mcp"), Ok(None));
    assert_eq!(
        store.delete("docs", "https://docs.example.org/mcp"),
        Ok(None)
    );

    // Saving again replaces; the rewrite keeps the file private.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let renewed = tokens("docs", "https://docs.example.com/mcp", "docs-access-2");
    store.save(&renewed).expect("save again");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(
        store.load("docs", "https://docs.example.com/mcp"),
        Ok(Some(renewed))
    );

    assert_eq!(
        store.delete("docs", "https://docs.example.com/mcp"),
        Ok(Some(TokenPlace::File(file.clone())))
    );
    assert_eq!(
        store.delete("docs", "https://docs.example.com/mcp"),
        Ok(None)
    );
    assert_eq!(store.load("docs", "https://docs.example.com/mcp"), Ok(None));
    assert_eq!(
        store.load("wiki", "https://wiki.example.com/mcp"),
        Ok(Some(wiki))
    );
    assert_eq!(mode(&file), 0o600);
    assert_eq!(names_in(&data), [CREDENTIALS_FILE, CREDENTIALS_LOCK_FILE]);
}

#[test]
fn a_damaged_credentials_file_is_an_error_that_quotes_none_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(CREDENTIALS_FILE);
    std::fs::write(
        &file,
        "{\"docs https://d\": {\"access_token\": \"s3cret-token\"",
    )
    .expect("write");
    let store = TokenStore::new(CredentialsStoreMode::File, dir.path());
    let expected = format!(
        "cannot read {}: not a formwork credentials file (cut short at line 1 column 50)",
        file.display()
    );
    let message = |err: TokenStoreError| err.to_string();
    assert_eq!(
        store.load("docs", "https://d").map_err(message),
        Err(expected.clone())
    );
    assert_eq!(
        store
            .save(&tokens("docs", "https://d", "new"))
            .map_err(message),
        Err(expected.clone())
    );
    assert_eq!(
        store.delete("docs", "https://d").map_err(message),
        Err(expected)
    );
    std::fs::write(
        &file,
        "{\"docs https://d\": {\"access_token\": \"s3cret-token\"}}",
    )
    .expect("write");
    assert_eq!(
        store.load("docs", "https://d").map_err(message),
        Err(format!(
            "cannot read {}: not a formwork credentials file (unexpected fields or values at line 1 column 51)",
            file.display()
        ))
    );
}

/// Two processes write the file at once: two store handles that share nothing, each in a
/// thread of its own, keep rotating the tokens of their own server. Each write reads the file
/// again under the lock, so neither ever puts back an older copy of the other's entry: each
/// finds its own latest write, what each sees of the other only moves forward, and both
/// latest sign-ins are there at the end.
#[test]
fn two_writers_at_once_keep_each_others_latest_tokens() {
    const WRITES: u32 = 100;
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let url = |name: &str| format!("https://{name}.example.com/mcp");
    let writer = |name: &'static str, other: &'static str| {
        let data = data.clone();
        std::thread::spawn(move || {
            let store = TokenStore::new(CredentialsStoreMode::File, &data);
            let mut others_latest = 0;
            for round in 1..=WRITES {
                let mut rotated = tokens(name, &url(name), &format!("{name}-access-{round}"));
                rotated.refresh_token = Some(format!("{name}-refresh-{round}"));
                store.save(&rotated).expect("save");
                let own = store.load(name, &url(name)).expect("load").expect("kept");
                assert_eq!(own.refresh_token, rotated.refresh_token, "a write lost it");
                let Some(seen) = store.load(other, &url(other)).expect("load") else {
                    continue;
                };
                let seen_round: u32 = seen
                    .access_token
                    .rsplit('-')
                    .next()
                    .and_then(|round| round.parse().ok())
                    .expect("a round");
                assert!(
                    seen_round >= others_latest,
                    "{name} saw {other}'s round {seen_round} after round {others_latest}: a write lost it"
                );
                others_latest = seen_round;
            }
        })
    };
    let docs = writer("docs", "wiki");
    let wiki = writer("wiki", "docs");
    docs.join().expect("the docs writer");
    wiki.join().expect("the wiki writer");
    let store = TokenStore::new(CredentialsStoreMode::File, &data);
    for name in ["docs", "wiki"] {
        let kept = store.load(name, &url(name)).expect("load").expect("kept");
        assert_eq!(kept.access_token, format!("{name}-access-{WRITES}"));
        assert_eq!(kept.refresh_token, Some(format!("{name}-refresh-{WRITES}")));
    }
}

/// A refresh token the server refused is forgotten only while the store still holds it: one
/// that another process rotated meanwhile stays, and is handed back to be used.
#[test]
fn a_refused_refresh_token_is_forgotten_unless_it_was_rotated_meanwhile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::new(CredentialsStoreMode::File, dir.path());
    let url = "https://docs.example.com/mcp";
    let held = tokens("docs", url, "docs-access");
    assert_eq!(store.forget_refresh_token(&held), Ok(None));
    assert_eq!(
        store.load("docs", url),
        Ok(None),
        "nothing written for no entry"
    );

    store.save(&held).expect("save");
    assert_eq!(store.forget_refresh_token(&held), Ok(None));
    let forgotten = StoredTokens {
        refresh_token: None,
        ..held.clone()
    };
    assert_eq!(store.load("docs", url), Ok(Some(forgotten)));

    let rotated = StoredTokens {
        access_token: "rotated-access".to_owned(),
        refresh_token: Some("rotated-refresh".to_owned()),
        ..held.clone()
    };
    store.save(&rotated).expect("save");
    assert_eq!(store.forget_refresh_token(&held), Ok(Some(rotated.clone())));
    assert_eq!(store.load("docs", url), Ok(Some(rotated)));
}

#[test]
fn debug_output_hides_the_tokens_and_the_secret() {
    let tokens = tokens("docs", "https://docs.example.com/mcp", "docs-access");
    assert_eq!(
        format!("{tokens:?}"),
        "StoredTokens { server_name: \"docs\", url: \"https://docs.example.com/mcp\", issuer: \
         \"https://auth.example.com\", token_endpoint: \"https://auth.example.com/token\", \
         client_id: \"formwork-client\", client_secret: Some(<redacted>), token_endpoint_auth: \
         Some(\"client_secret_post\"), access_token: Some(<redacted>), refresh_token: Some(<redacted>), expires_at: Some(1790000000), \
         scopes: [\"docs:read\"], resource: Some(\"https://docs.example.com/mcp\") }"
    );
    let bare = StoredTokens {
        client_secret: None,
        refresh_token: None,
        ..tokens
    };
    assert!(
        format!("{bare:?}")
            .contains("client_secret: None, token_endpoint_auth: Some(\"client_secret_post\"), access_token: Some(<redacted>), refresh_token: None"),
        "{bare:?}"
    );
}

/// The keyring named outright. Where one answers (a desktop, or a session bus with a Secret
/// Service), a sign-in under a name no one else uses goes in, comes back, is kept apart by
/// URL and is deleted again; where none does (CI: no session bus), every operation is the
/// same plain error and nothing falls back to the file.
#[test]
fn the_keyring_keeps_a_sign_in_or_says_it_cannot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::new(CredentialsStoreMode::Keyring, dir.path());
    assert_eq!(store.place().to_string(), "keyring");
    let name = format!("formwork-test-{}", std::process::id());
    let url = "https://keyring.example.com/mcp";
    match store.load(&name, url) {
        Err(reason) => {
            assert!(
                reason.to_string().starts_with("cannot open the keyring: "),
                "{reason}"
            );
            assert_eq!(store.save(&tokens(&name, url, "t")), Err(reason.clone()));
            assert_eq!(store.delete(&name, url), Err(reason));
            assert_eq!(names_in(dir.path()), Vec::<String>::new());
        }
        Ok(found) => {
            assert_eq!(found, None);
            let signed_in = tokens(&name, url, "keyring-access");
            store.save(&signed_in).expect("save");
            let loaded = store.load(&name, url);
            let other_url = store.load(&name, "https://keyring.example.org/mcp");
            let deleted = store.delete(&name, url);
            let deleted_again = store.delete(&name, url);
            assert_eq!(loaded, Ok(Some(signed_in)));
            assert_eq!(other_url, Ok(None));
            assert_eq!(deleted, Ok(Some(TokenPlace::Keyring)));
            assert_eq!(deleted_again, Ok(None));
            assert_eq!(store.load(&name, url), Ok(None));
            assert_eq!(names_in(dir.path()), Vec::<String>::new(), "no file");
        }
    }
}

/// `auto` takes the keyring when it answers and the file otherwise; either way what is saved
/// comes back from a store made the same way.
#[test]
fn auto_uses_the_keyring_when_it_answers_else_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keyring_answers = TokenStore::new(CredentialsStoreMode::Keyring, dir.path())
        .load("formwork-test-probe", "https://probe.example.com")
        .is_ok();
    let store = TokenStore::new(CredentialsStoreMode::Auto, dir.path());
    let expected = if keyring_answers {
        "keyring".to_owned()
    } else {
        format!("file {}", dir.path().join(CREDENTIALS_FILE).display())
    };
    assert_eq!(store.place().to_string(), expected);
    let name = format!("formwork-auto-test-{}", std::process::id());
    let signed_in = tokens(&name, "https://auto.example.com/mcp", "auto-access");
    let kept = store.save(&signed_in).expect("save");
    assert_eq!(&kept, store.place());
    let again = TokenStore::new(CredentialsStoreMode::Auto, dir.path());
    let loaded = again.load(&name, "https://auto.example.com/mcp");
    let deleted = again.delete(&name, "https://auto.example.com/mcp");
    assert_eq!(loaded, Ok(Some(signed_in)));
    assert_eq!(deleted, Ok(Some(kept)));
    assert_eq!(
        dir.path().join(CREDENTIALS_FILE).exists(),
        !keyring_answers,
        "the file is written only without a keyring"
    );
}
