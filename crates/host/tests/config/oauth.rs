//! OAuth: Codex's `scopes`, `oauth_resource`, `env_http_headers` and the top-level store keys;
//! formwork's own `[mcp_servers.<name>.oauth]`.

use super::*;

#[test]
fn oauth_keys_load_and_resolve_to_auth_settings() {
    let (_dir, root) = canonical_tempdir();
    let key = "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";
    std::fs::create_dir(root.join("keys")).expect("mkdir");
    std::fs::write(root.join("keys/client.pem"), key).expect("write the key");
    let path = root.join("formwork.toml");
    std::fs::write(
        &path,
        r#"mcp_oauth_credentials_store = "file"
mcp_oauth_callback_port = 8765

[mcp_servers.docs]
url = "https://docs.example.com/mcp"
scopes = ["docs:read", "docs:write"]
oauth_resource = "https://docs.example.com/"
env_http_headers = { X-Team = "HOME" }

[mcp_servers.docs.oauth]
client_id = "formwork-docs"
grant = "client_credentials"
private_key_file = "keys/client.pem"
issuer = "https://auth.example.com/tenant"

[mcp_servers.cimd]
url = "https://cimd.example.com/mcp"
oauth = { client_metadata_url = "https://formwork.example.com/client.json" }

[mcp_servers.secret]
url = "https://secret.example.com/mcp"
oauth = { client_id = "app", client_secret_env_var = "PATH", grant = "client_credentials", private_key_file = "", signing_algorithm = "RS256" }

[mcp_servers.enterprise]
url = "https://enterprise.example.com/mcp"
oauth = { grant = "cross_app_access", client_id = "app", client_secret_env_var = "PATH", idp_token_endpoint = "https://idp.example.com/oauth2/token", idp_client_id = "idp-app", id_token_env_var = "HOME" }
"#,
    )
    .expect("write the config");
    check_error(
        &std::fs::read_to_string(&path).expect("read"),
        "formwork.toml:22:92: mcp_servers.secret.oauth.private_key_file: the client signs in with `client_secret_env_var` or with `private_key_file`; keep one of the two",
    );
    let text = std::fs::read_to_string(&path).expect("read").replace(
        r#", private_key_file = "", signing_algorithm = "RS256""#,
        "",
    );
    std::fs::write(&path, text).expect("write");
    let config = Config::load(&path).expect("loads");
    assert_eq!(
        config.mcp_oauth_credentials_store,
        formwork_host::CredentialsStoreMode::File
    );
    assert_eq!(config.mcp_oauth_callback_port, Some(8765));
    assert_eq!(config.ignored_keys, Vec::<String>::new());

    let docs = &config.server("docs").expect("docs").transport;
    assert_eq!(
        *docs,
        Transport::StreamableHttp {
            url: "https://docs.example.com/mcp".to_owned(),
            http_headers: Default::default(),
            env_http_headers: [("X-Team".to_owned(), "HOME".to_owned())].into(),
            bearer_token_env_var: None,
            scopes: vec!["docs:read".to_owned(), "docs:write".to_owned()],
            oauth_resource: Some("https://docs.example.com/".to_owned()),
            oauth: Box::new(config::OAuthConfig {
                client_id: Some("formwork-docs".to_owned()),
                grant: formwork_host::Grant::ClientCredentials,
                private_key_file: Some(root.join("keys/client.pem")),
                issuer: Some("https://auth.example.com/tenant".to_owned()),
                ..Default::default()
            }),
            share_session: false,
        }
    );
    let settings = docs.auth_settings().expect("resolves");
    assert_eq!(
        format!("{settings:?}"),
        "AuthSettings { client_id: Some(\"formwork-docs\"), client_secret: None, \
         client_metadata_url: None, issuer: Some(\"https://auth.example.com/tenant\"), \
         grant: ClientCredentials, private_key_pem: \
         Some(<redacted>), signing_algorithm: Some(\"ES256\"), scopes: [\"docs:read\", \
         \"docs:write\"], resource: Some(\"https://docs.example.com/\"), identity_provider: None }"
    );
    assert_eq!(settings.private_key_pem.as_deref(), Some(key));
    let home = std::env::var("HOME").expect("HOME is set");
    assert_eq!(docs.http_headers(), Ok(vec![("X-Team".to_owned(), home)]));

    let cimd = config
        .server("cimd")
        .expect("cimd")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(
        cimd.client_metadata_url.as_deref(),
        Some("https://formwork.example.com/client.json")
    );
    assert_eq!(cimd.grant, formwork_host::Grant::AuthorizationCode);
    assert_eq!(cimd.signing_algorithm, None);

    let secret = config
        .server("secret")
        .expect("secret")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(
        secret.client_secret,
        Some(std::env::var("PATH").expect("PATH is set"))
    );
    assert_eq!(secret.private_key_pem, None);

    // The identity provider's ID token is read from its variable like a secret.
    let enterprise = config
        .server("enterprise")
        .expect("enterprise")
        .transport
        .auth_settings()
        .expect("resolves");
    assert_eq!(enterprise.grant, formwork_host::Grant::CrossAppAccess);
    let idp = enterprise.identity_provider.expect("an identity provider");
    assert_eq!(
        (idp.token_endpoint.as_str(), idp.client_id.as_str()),
        ("https://idp.example.com/oauth2/token", "idp-app")
    );
    assert_eq!(idp.client_secret, None);
    assert_eq!(Some(idp.id_token), std::env::var("HOME").ok());

    // A stdio server resolves to no OAuth at all.
    assert_eq!(
        format!(
            "{:?}",
            stdio("x", &[]).auth_settings().expect("nothing to read")
        ),
        format!("{:?}", formwork_host::AuthSettings::default())
    );
    // Without a file, the store is `auto` and the port a free one.
    let config = load("");
    assert_eq!(
        config.mcp_oauth_credentials_store,
        formwork_host::CredentialsStoreMode::Auto
    );
    assert_eq!(config.mcp_oauth_callback_port, None);
}

#[test]
fn oauth_secrets_and_keys_that_cannot_be_read_are_errors_naming_the_key() {
    let (_dir, root) = canonical_tempdir();
    std::fs::write(
        root.join("not-a-key.pem"),
        "-----BEGIN EC PRIVATE KEY-----\n",
    )
    .expect("write");
    let server = |oauth: &str| {
        let text = format!(
            "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\noauth = {{ {oauth} }}\n"
        );
        let path = root.join("formwork.toml");
        std::fs::write(&path, text).expect("write");
        let config = Config::load(&path).expect("loads");
        config
            .server("x")
            .expect("x")
            .transport
            .auth_settings()
            .map_err(|err| err.to_string())
    };
    assert_eq!(
        server(r#"client_id = "a", client_secret_env_var = "FORMWORK_TEST_UNSET_SECRET""#)
            .map(|_| ()),
        Err("the environment variable `FORMWORK_TEST_UNSET_SECRET` (oauth.client_secret_env_var) is not set".to_owned())
    );
    let missing = root.join("missing.pem");
    assert_eq!(
        server(
            r#"client_id = "a", grant = "client_credentials", private_key_file = "missing.pem""#
        )
        .map(|_| ()),
        Err(format!(
            "cannot read {} (oauth.private_key_file): No such file or directory (os error 2)",
            missing.display()
        ))
    );
    assert_eq!(
        server(
            r#"client_id = "a", grant = "client_credentials", private_key_file = "not-a-key.pem""#
        )
        .map(|_| ()),
        Err(format!(
            "{} (oauth.private_key_file) is not a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)",
            root.join("not-a-key.pem").display()
        ))
    );
}

#[test]
fn env_http_headers_join_the_headers_from_their_variables() {
    let config = load(
        "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\nhttp_headers = { X-Team = \"forms\" }\nenv_http_headers = { X-Path = \"PATH\", X-Unset = \"FORMWORK_TEST_UNSET_HEADER\" }\n\n[mcp_servers.y]\nurl = \"https://y.example.com/mcp\"\nenv_http_headers = { \"X-Path\" = \"PATH\" }\nbearer_token_env_var = \"PATH\"\n",
    );
    let path = std::env::var("PATH").expect("PATH is set");
    // A header whose variable is unset is left out, as in Codex.
    assert_eq!(
        config.server("x").expect("x").transport.http_headers(),
        Ok(vec![
            ("X-Team".to_owned(), "forms".to_owned()),
            ("X-Path".to_owned(), path.clone()),
        ])
    );
    assert_eq!(
        config.server("y").expect("y").transport.http_headers(),
        Ok(vec![
            ("X-Path".to_owned(), path.clone()),
            ("authorization".to_owned(), format!("Bearer {path}")),
        ])
    );
}

#[test]
fn oauth_keys_that_cannot_work_are_errors_naming_the_key() {
    let http = "[mcp_servers.x]\nurl = \"https://x.example.com/mcp\"\n";
    let rows = [
        (
            "oauth = { grant = \"implicit\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: unknown grant \"implicit\", expected \"authorization_code\", \"client_credentials\" or \"cross_app_access\"",
        ),
        (
            "oauth = { grant = \"client_credentials\", client_secret_env_var = \"S\" }",
            "formwork.toml:3:41: mcp_servers.x.oauth.client_secret_env_var: a client secret needs the `client_id` it belongs to",
        ),
        (
            "oauth = { grant = \"client_credentials\", private_key_file = \"k.pem\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the client_credentials grant needs `client_id`",
        ),
        (
            "oauth = { grant = \"client_credentials\", client_id = \"a\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the client_credentials grant needs `client_secret_env_var` or `private_key_file`",
        ),
        (
            "oauth = { client_id = \"a\", private_key_file = \"k.pem\" }",
            "formwork.toml:3:28: mcp_servers.x.oauth.private_key_file: a private key signs in with grant = \"client_credentials\" only",
        ),
        (
            "oauth = { client_id = \"a\", client_secret_env_var = \"S\", signing_algorithm = \"ES256\" }",
            "formwork.toml:3:57: mcp_servers.x.oauth.signing_algorithm: the signing algorithm is for the key of `private_key_file`, which is not given",
        ),
        (
            "oauth = { client_metadata_url = \"http://formwork.example.com/client.json\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { client_metadata_url = \"https://formwork.example.com/\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { client_metadata_url = \"https://formwork.example.com/c.json#x\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.client_metadata_url: expected an https URL with a path and no fragment (the client ID metadata document), such as https://example.com/formwork-client.json",
        ),
        (
            "oauth = { issuer = \"http://auth.example.com\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { issuer = \"https://auth.example.com/?tenant=1\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { issuer = \"auth.example.com\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.issuer: expected the authorization server's issuer, an https:// URL without a query or fragment (http:// only to localhost), such as https://auth.example.com",
        ),
        (
            "oauth = { client_id = \"a\", scopes = [\"x\"] }",
            "formwork.toml:3:28: mcp_servers.x.oauth.scopes: unknown field `scopes`, expected one of `client_id`, `client_secret_env_var`, `client_metadata_url`, `issuer`, `grant`, `private_key_file`, `signing_algorithm`, `idp_token_endpoint`, `idp_client_id`, `idp_client_secret_env_var`, `id_token_env_var`",
        ),
        (
            "oauth = { client_id = \"a\", id_token_env_var = \"T\" }",
            "formwork.toml:3:28: mcp_servers.x.oauth.id_token_env_var: the identity provider's keys are for grant = \"cross_app_access\" only",
        ),
        (
            "oauth = { grant = \"cross_app_access\", idp_client_id = \"i\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the cross_app_access grant needs `client_id` (formwork's client at the server's authorization server)",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:11: mcp_servers.x.oauth.grant: the cross_app_access grant needs `idp_token_endpoint`",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_token_endpoint = \"idp.example/token\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:56: mcp_servers.x.oauth.idp_token_endpoint: expected the identity provider's token endpoint, an https:// URL (http:// only to localhost)",
        ),
        (
            "oauth = { grant = \"cross_app_access\", client_id = \"a\", idp_token_endpoint = \"http://idp.example/token\", idp_client_id = \"i\", id_token_env_var = \"T\" }",
            "formwork.toml:3:56: mcp_servers.x.oauth.idp_token_endpoint: expected the identity provider's token endpoint, an https:// URL (http:// only to localhost)",
        ),
        (
            "oauth_resource = \"docs\"",
            "formwork.toml:3:1: mcp_servers.x.oauth_resource: expected an http:// or https:// URL without a fragment (the resource to ask tokens for)",
        ),
        (
            "scopes = \"read write\"",
            "formwork.toml:3:10: mcp_servers.x.scopes: invalid type: string \"read write\", expected a sequence",
        ),
        (
            "http_headers = { x-team = \"a\" }\nenv_http_headers = { X-Team = \"T\" }",
            "formwork.toml:4:22: mcp_servers.x.env_http_headers.X-Team: `http_headers` already has this header; keep one of the two",
        ),
        (
            "bearer_token_env_var = \"T\"\nenv_http_headers = { Authorization = \"T\" }",
            "formwork.toml:4:22: mcp_servers.x.env_http_headers.Authorization: `bearer_token_env_var` already sends an Authorization header; keep one of the two",
        ),
    ];
    for (keys, expected) in rows {
        check_error(&format!("{http}{keys}\n"), expected);
    }
    // The table form is located the same way.
    check_error(
        &format!("{http}\n[mcp_servers.x.oauth]\nclient_id = \"a\"\nmode = \"x\"\n"),
        "formwork.toml:6:1: mcp_servers.x.oauth.mode: unknown field `mode`, expected one of `client_id`, `client_secret_env_var`, `client_metadata_url`, `issuer`, `grant`, `private_key_file`, `signing_algorithm`, `idp_token_endpoint`, `idp_client_id`, `idp_client_secret_env_var`, `id_token_env_var`",
    );
}

#[test]
fn http_only_keys_are_errors_on_a_stdio_server() {
    for key in [
        "env_http_headers = { A = \"B\" }",
        "scopes = [\"a\"]",
        "oauth_resource = \"https://x.example.com\"",
        "oauth = { client_id = \"a\" }",
    ] {
        let name = key.split(' ').next().expect("a key");
        check_error(
            &format!("[mcp_servers.x]\ncommand = \"a\"\n{key}\n"),
            &format!(
                "formwork.toml:3:1: mcp_servers.x.{name}: only a `url` (Streamable HTTP) server takes this key"
            ),
        );
    }
}

#[test]
fn the_oauth_store_keys_are_checked() {
    check_error(
        "mcp_oauth_credentials_store = \"vault\"\n",
        "formwork.toml:1:31: mcp_oauth_credentials_store: unknown variant `vault`, expected one of `auto`, `keyring`, `file`",
    );
    for port in ["0", "65536", "-1"] {
        check_error(
            &format!("mcp_oauth_callback_port = {port}\n"),
            "formwork.toml:1:1: mcp_oauth_callback_port: expected a port from 1 to 65535 (leave it out for a free port each time)",
        );
    }
    for (text, mode) in [
        ("auto", formwork_host::CredentialsStoreMode::Auto),
        ("keyring", formwork_host::CredentialsStoreMode::Keyring),
        ("file", formwork_host::CredentialsStoreMode::File),
    ] {
        let config = load(&format!(
            "mcp_oauth_credentials_store = \"{text}\"\nmcp_oauth_callback_port = 65535\n"
        ));
        assert_eq!(config.mcp_oauth_credentials_store, mode);
        assert_eq!(config.mcp_oauth_callback_port, Some(65535));
    }
}

#[test]
fn sync_removes_the_http_and_oauth_keys_of_a_builtin_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    std::fs::write(
        &path,
        "[mcp_servers.demo]\nurl = \"https://x.example.com/mcp\"\nenv_http_headers = { A = \"B\" }\nscopes = [\"a\"]\noauth_resource = \"https://x.example.com\"\noauth = { client_id = \"a\" }\nshare_session = true\n",
    )
    .expect("write");
    config::sync(&path, Path::new(EXE)).expect("sync");
    assert_eq!(
        read(&path),
        format!(
            "[mcp_servers.demo]\ncommand = \"{EXE}\"\nargs = [\"demo-plugin\"]\ndefault_tools_approval_mode = \"approve\"\n"
        )
    );
}

#[test]
fn import_codex_config_toml_carries_the_shared_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = scratch(&dir, None);
    let report = config::import(&fixture("codex_config.toml"), &path).expect("import");
    let report = serde_json::to_value(&report).expect("report as JSON");
    // Only what formwork does not act on is ignored: approvals, `env_vars`, `enabled` and the
    // timeouts come along.
    assert_eq!(
        report["added"],
        json!([
            {"name": "docs", "transport": "streamable_http", "ignored_fields": ["tools.delete_page.note"]},
            {"name": "files", "transport": "stdio", "ignored_fields": ["required", "supports_parallel_tool_calls"]}
        ])
    );
    assert_eq!(
        report["skipped"],
        json!([
            {"name": "wrong", "reason": "it would not load: mcp_servers.wrong.scopes: only a `url` (Streamable HTTP) server takes this key"},
            {"name": "demo", "reason": "the name is reserved for formwork's built-in server"}
        ])
    );
    assert_eq!(
        read(&path),
        r#"[mcp_servers.docs]
url = "https://docs.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"
env_http_headers = { "X-Tenant" = "DOCS_TENANT" }
scopes = ["docs:read", "docs:write"]
oauth_resource = "https://docs.example.com/"
startup_timeout_sec = 20
default_tools_approval_mode = "approve"
http_headers = { X-Team = "forms" }
tools = { search = { approval_mode = "approve" }, delete_page = { approval_mode = "prompt" } }

[mcp_servers.files]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
env = { LOG = "1" }
env_vars = ["GITHUB_TOKEN"]
enabled_tools = ["read_file", "write_file"]
startup_timeout_sec = 15.0
tool_timeout_sec = 90
enabled = false
default_tools_approval_mode = "prompt"
"#
    );
    let loaded = Config::load(&path).expect("loads");
    let docs = loaded.server("docs").expect("imported");
    let Transport::StreamableHttp {
        scopes,
        oauth_resource,
        ..
    } = &docs.transport
    else {
        panic!("not HTTP: {:?}", docs.transport);
    };
    assert_eq!(scopes, &["docs:read", "docs:write"]);
    assert_eq!(oauth_resource.as_deref(), Some("https://docs.example.com/"));
    assert_eq!(
        docs.default_tools_approval_mode,
        Some(ApprovalMode::Approve)
    );
    assert_eq!(
        docs.tool_approval_mode("search"),
        Some(ApprovalMode::Approve)
    );
    assert_eq!(
        docs.tool_approval_mode("delete_page"),
        Some(ApprovalMode::Prompt)
    );
    let files = loaded.server("files").expect("imported");
    assert_eq!(
        files.default_tools_approval_mode,
        Some(ApprovalMode::Prompt)
    );
    assert!(!files.enabled);
    assert_eq!(
        files.startup_timeout,
        Some(std::time::Duration::from_secs(15))
    );
    assert_eq!(files.tool_timeout, Some(std::time::Duration::from_secs(90)));
    let Transport::Stdio { env_vars, .. } = &files.transport else {
        panic!("not stdio: {:?}", files.transport);
    };
    assert_eq!(env_vars, &["GITHUB_TOKEN"]);
}
