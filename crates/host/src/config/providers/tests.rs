//! Model providers at the config's boundary: text in, the loaded providers, the chosen model
//! or the exact error text out. The environment is a map, never the process's.

use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;

use super::*;
use crate::config::ConfigLocations;

fn load(input: &str) -> Config {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => config,
        Err(err) => panic!("input:\n{input}\ndoes not load: {err}"),
    }
}

/// Loads `input` as `formwork.toml` and compares the error's full text.
fn check_error(input: &str, expected: &str) {
    match Config::from_toml(input, Some(Path::new("formwork.toml"))) {
        Ok(config) => {
            panic!("input:\n{input}\nloads, expected the error {expected:?}: {config:#?}")
        }
        Err(err) => assert_eq!(err.to_string(), expected, "input:\n{input}"),
    }
}

/// The choice for `config` and the overrides in an environment holding only `vars`.
fn choose(
    config: &Config,
    provider: Option<&str>,
    model: Option<&str>,
    vars: &[(&str, &str)],
) -> Result<Option<ModelChoice>, ModelChoiceError> {
    config.model_choice_with_env(provider, model, |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    })
}

/// The chosen provider id, model and base URL, for cases that only differ in those.
fn chosen(
    config: &Config,
    provider: Option<&str>,
    model: Option<&str>,
) -> (String, String, String) {
    match choose(config, provider, model, &[]) {
        Ok(Some(choice)) => (choice.provider_id, choice.model, choice.provider.base_url),
        other => panic!("no choice for {provider:?} {model:?}: {other:?}"),
    }
}

fn openai() -> ModelProvider {
    ModelProvider {
        name: "OpenAI".to_owned(),
        base_url: "https://api.openai.com/v1".to_owned(),
        env_key: Some("OPENAI_API_KEY".to_owned()),
        wire_api: WireApi::Responses,
        http_headers: IndexMap::new(),
        env_http_headers: IndexMap::new(),
        query_params: IndexMap::new(),
        request_max_retries: 4,
        stream_max_retries: 5,
        stream_idle_timeout: Duration::from_millis(300_000),
    }
}

fn map(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

#[test]
fn without_a_model_or_provider_named_there_is_no_model() {
    let config = load("");
    assert_eq!(config.model, None);
    assert_eq!(config.model_provider, None);
    assert!(config.model_providers.is_empty());
    assert_eq!(config.tool_output_token_limit, 2500);
    assert_eq!(choose(&config, None, None, &[]), Ok(None));
    // A provider table and a limit alone name no model.
    let config = load(
        "tool_output_token_limit = 10\n[model_providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n",
    );
    assert_eq!(choose(&config, None, None, &[]), Ok(None));
}

#[test]
fn a_model_alone_goes_to_openai() {
    let config = load("model = \"gpt-5.1\"\n");
    assert_eq!(config.model.as_deref(), Some("gpt-5.1"));
    assert!(config.ignored_keys.is_empty());
    assert_eq!(
        choose(&config, None, None, &[]),
        Ok(Some(ModelChoice {
            provider_id: "openai".to_owned(),
            provider: openai(),
            model: "gpt-5.1".to_owned(),
            tool_output_max_bytes: 10_000,
        }))
    );
}

#[test]
fn the_built_in_providers_and_their_default_models() {
    let config = load("");
    assert_eq!(
        choose(&config, Some("openai"), None, &[]),
        Ok(Some(ModelChoice {
            provider_id: "openai".to_owned(),
            provider: openai(),
            model: "gpt-5".to_owned(),
            tool_output_max_bytes: 10_000,
        }))
    );
    let oss = ModelProvider {
        name: "Open-source model (local)".to_owned(),
        base_url: "http://localhost:11434/v1".to_owned(),
        env_key: None,
        wire_api: WireApi::Chat,
        ..openai()
    };
    assert_eq!(
        choose(&config, Some("oss"), None, &[]),
        Ok(Some(ModelChoice {
            provider_id: "oss".to_owned(),
            provider: oss,
            model: "gpt-oss:20b".to_owned(),
            tool_output_max_bytes: 10_000,
        }))
    );
    assert_eq!(
        chosen(&load("model_provider = \"oss\"\n"), None, None),
        (
            "oss".to_owned(),
            "gpt-oss:20b".to_owned(),
            "http://localhost:11434/v1".to_owned()
        )
    );
}

#[test]
fn the_oss_provider_follows_codex_oss_port_and_base_url() {
    let config = load("model_provider = \"oss\"\n");
    let base_url = |vars: &[(&str, &str)]| match choose(&config, None, None, vars) {
        Ok(Some(choice)) => choice.provider.base_url,
        other => panic!("no choice in {vars:?}: {other:?}"),
    };
    assert_eq!(
        base_url(&[("CODEX_OSS_PORT", "1234")]),
        "http://localhost:1234/v1"
    );
    assert_eq!(
        base_url(&[("CODEX_OSS_BASE_URL", "http://gpu.lan:8000/v1/")]),
        "http://gpu.lan:8000/v1"
    );
    // The URL wins over the port; an empty variable counts as unset.
    assert_eq!(
        base_url(&[
            ("CODEX_OSS_PORT", "1234"),
            ("CODEX_OSS_BASE_URL", "https://models.example.com/v1")
        ]),
        "https://models.example.com/v1"
    );
    assert_eq!(
        base_url(&[("CODEX_OSS_PORT", ""), ("CODEX_OSS_BASE_URL", "")]),
        "http://localhost:11434/v1"
    );
    // The openai provider does not move.
    assert_eq!(
        chosen(&config, Some("openai"), Some("gpt-5"),),
        (
            "openai".to_owned(),
            "gpt-5".to_owned(),
            "https://api.openai.com/v1".to_owned()
        )
    );
    let error = |vars: &[(&str, &str)]| match choose(&config, None, None, vars) {
        Err(err) => err.to_string(),
        Ok(choice) => panic!("chosen in {vars:?}: {choice:?}"),
    };
    assert_eq!(
        error(&[("CODEX_OSS_PORT", "0")]),
        "the environment variable CODEX_OSS_PORT: expected a port from 1 to 65535, found `0`"
    );
    assert_eq!(
        error(&[("CODEX_OSS_PORT", "eleven")]),
        "the environment variable CODEX_OSS_PORT: expected a port from 1 to 65535, found `eleven`"
    );
    assert_eq!(
        error(&[("CODEX_OSS_BASE_URL", "localhost:11434")]),
        "the environment variable CODEX_OSS_BASE_URL: expected an http:// or https:// URL without a query or fragment (query parameters go in `query_params`)"
    );
}

#[test]
fn a_provider_table_with_every_key() {
    let config = load(
        r#"
model = "llama3.2"
model_provider = "local"
tool_output_token_limit = 100

[model_providers.local]
name = "Local llama"
base_url = "https://llm.example.com/v1/"
env_key = "LLM_KEY"
wire_api = "chat"
http_headers = { "X-Team" = "forms" }
env_http_headers = { "X-Tenant" = "TENANT_VAR" }
query_params = { "api-version" = "2025-04-01" }
request_max_retries = 0
stream_max_retries = 100
stream_idle_timeout_ms = 5000
"#,
    );
    let local = ModelProvider {
        name: "Local llama".to_owned(),
        base_url: "https://llm.example.com/v1".to_owned(),
        env_key: Some("LLM_KEY".to_owned()),
        wire_api: WireApi::Chat,
        http_headers: map(&[("X-Team", "forms")]),
        env_http_headers: map(&[("X-Tenant", "TENANT_VAR")]),
        query_params: map(&[("api-version", "2025-04-01")]),
        request_max_retries: 0,
        stream_max_retries: 100,
        stream_idle_timeout: Duration::from_millis(5000),
    };
    assert_eq!(config.model_providers.get("local"), Some(&local));
    assert_eq!(config.tool_output_token_limit, 100);
    assert_eq!(
        choose(&config, None, None, &[]),
        Ok(Some(ModelChoice {
            provider_id: "local".to_owned(),
            provider: local,
            model: "llama3.2".to_owned(),
            tool_output_max_bytes: 400,
        }))
    );
}

#[test]
fn a_provider_table_with_only_its_base_url_gets_the_defaults() {
    let config = load("[model_providers.proxy]\nbase_url = \"http://127.0.0.1:9000\"\n");
    assert_eq!(
        config.model_providers.get("proxy"),
        Some(&ModelProvider {
            name: "proxy".to_owned(),
            base_url: "http://127.0.0.1:9000".to_owned(),
            env_key: None,
            ..openai()
        })
    );
}

#[test]
fn the_overrides_win_over_the_config() {
    let config = load(
        "model = \"m\"\nmodel_provider = \"a\"\n\
         [model_providers.a]\nbase_url = \"http://a.example\"\n\
         [model_providers.b]\nbase_url = \"http://b.example\"\n",
    );
    let triple =
        |id: &str, model: &str, url: &str| (id.to_owned(), model.to_owned(), url.to_owned());
    assert_eq!(
        chosen(&config, None, None),
        triple("a", "m", "http://a.example")
    );
    assert_eq!(
        chosen(&config, Some("b"), None),
        triple("b", "m", "http://b.example")
    );
    assert_eq!(
        chosen(&config, None, Some("n")),
        triple("a", "n", "http://a.example")
    );
    // The built-in provider's default model is only for a model no one names.
    assert_eq!(
        chosen(&config, Some("openai"), None),
        triple("openai", "m", "https://api.openai.com/v1")
    );
    assert_eq!(
        chosen(&load(""), None, Some("o3")),
        triple("openai", "o3", "https://api.openai.com/v1")
    );
}

#[test]
fn a_configured_provider_needs_a_model() {
    let config = load(
        "model_provider = \"local\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n",
    );
    let err = choose(&config, None, None, &[]).expect_err("no model");
    assert_eq!(
        err.to_string(),
        "model provider `local` has no default model; set `model` in formwork.toml or pass --model"
    );
    assert_eq!(
        chosen(&config, None, Some("qwen3")),
        (
            "local".to_owned(),
            "qwen3".to_owned(),
            "http://127.0.0.1:8080/v1".to_owned()
        )
    );
}

#[test]
fn an_unknown_provider_lists_the_known_ones() {
    let config = load(
        "model_provider = \"loacl\"\n[model_providers.local]\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
         [model_providers.proxy]\nbase_url = \"http://127.0.0.1:9000\"\n",
    );
    let error = |provider| match choose(&config, provider, Some("m"), &[]) {
        Err(err) => err.to_string(),
        Ok(choice) => panic!("chosen: {choice:?}"),
    };
    assert_eq!(
        error(None),
        "unknown model provider `loacl` (from model_provider); the known ones are openai, oss, local, proxy"
    );
    assert_eq!(
        error(Some("ollama")),
        "unknown model provider `ollama` (from --model-provider); the known ones are openai, oss, local, proxy"
    );
}

#[test]
fn the_tool_output_limit_is_a_positive_number_of_tokens() {
    let config = load("model = \"m\"\ntool_output_token_limit = 1\n");
    let choice = choose(&config, None, None, &[]).ok().flatten();
    assert_eq!(choice.map(|choice| choice.tool_output_max_bytes), Some(4));
    let message = "expected a positive whole number of tokens";
    check_error(
        "tool_output_token_limit = 0\n",
        &format!("formwork.toml:1:1: tool_output_token_limit: {message}"),
    );
    check_error(
        "tool_output_token_limit = -5\n",
        &format!("formwork.toml:1:1: tool_output_token_limit: {message}"),
    );
    check_error(
        "tool_output_token_limit = \"lots\"\n",
        r#"formwork.toml:1:27: tool_output_token_limit: invalid type: string "lots", expected i64"#,
    );
}

#[test]
fn the_built_in_ids_are_reserved() {
    check_error(
        "[model_providers.openai]\nbase_url = \"https://proxy.example.com/v1\"\n",
        "formwork.toml:1:18: model_providers.openai: `openai` is a built-in provider; give yours another id",
    );
    check_error(
        "model_providers.oss = { base_url = \"http://localhost:1234/v1\" }\n",
        "formwork.toml:1:17: model_providers.oss: `oss` is a built-in provider; give yours another id",
    );
}

#[test]
fn base_url_is_required_and_checked() {
    check_error(
        "[model_providers.x]\nname = \"X\"\n",
        "formwork.toml:1:18: model_providers.x: a model provider needs `base_url`, the URL that `/responses` or `/chat/completions` is appended to",
    );
    let message = "expected an http:// or https:// URL without a query or fragment (query parameters go in `query_params`)";
    for url in [
        "ftp://x.example.com/v1",
        "localhost:8080/v1",
        "https://x.example.com/v1?api-version=1",
        "https://x.example.com/v1#top",
        "http://",
    ] {
        check_error(
            &format!("[model_providers.x]\nbase_url = \"{url}\"\n"),
            &format!("formwork.toml:2:1: model_providers.x.base_url: {message}"),
        );
    }
}

#[test]
fn bad_values_in_a_provider_table() {
    let table = "[model_providers.x]\nbase_url = \"http://x.example\"\n";
    check_error(
        &format!("{table}env_key = \"\"\n"),
        "formwork.toml:3:1: model_providers.x.env_key: expected the name of the environment variable that holds the API key",
    );
    check_error(
        &format!("{table}wire_api = \"chat_completions\"\n"),
        r#"formwork.toml:3:1: model_providers.x.wire_api: unknown wire_api "chat_completions", expected "responses" or "chat""#,
    );
    for key in ["request_max_retries", "stream_max_retries"] {
        for count in ["101", "-1"] {
            check_error(
                &format!("{table}{key} = {count}\n"),
                &format!(
                    "formwork.toml:3:1: model_providers.x.{key}: expected a whole number from 0 to 100"
                ),
            );
        }
    }
    for millis in ["0", "86400001"] {
        check_error(
            &format!("{table}stream_idle_timeout_ms = {millis}\n"),
            "formwork.toml:3:1: model_providers.x.stream_idle_timeout_ms: expected a positive number of milliseconds, at most 86400000 (one day)",
        );
    }
    check_error(
        &format!("{table}http_headers = {{ \"X-Team\" = 1 }}\n"),
        r#"formwork.toml:3:29: model_providers.x.http_headers.X-Team: invalid type: integer `1`, expected a string"#,
    );
    check_error(
        "model = \"\"\n",
        "formwork.toml:1:1: model: the model's name is empty",
    );
}

#[test]
fn secrets_and_foreign_sign_ins_are_refused() {
    let table = "[model_providers.x]\nbase_url = \"http://x.example\"\n";
    check_error(
        &format!("{table}experimental_bearer_token = \"sk-123\"\n"),
        "formwork.toml:3:1: model_providers.x.experimental_bearer_token: formwork keeps no secrets in its config: put the API key in an environment variable and name that variable with `env_key`",
    );
    check_error(
        &format!("{table}auth = {{ command = \"print-token\" }}\n"),
        "formwork.toml:3:1: model_providers.x.auth: not supported by formwork (a command that prints the token); put the API key in an environment variable and name that variable with `env_key`",
    );
    check_error(
        &format!("{table}[model_providers.x.aws]\nprofile = \"default\"\n"),
        "formwork.toml:3:20: model_providers.x.aws: not supported by formwork (requests signed with an AWS profile)",
    );
}

#[test]
fn an_unknown_key_in_a_provider_table_is_an_error() {
    check_error(
        "[model_providers.x]\nbase_uri = \"http://x.example\"\n",
        "formwork.toml:2:1: model_providers.x.base_uri: unknown field `base_uri`, expected one of `name`, `base_url`, `env_key`, `wire_api`, `http_headers`, `env_http_headers`, `query_params`, `request_max_retries`, `stream_max_retries`, `stream_idle_timeout_ms`, `experimental_bearer_token`, `auth`, `aws`, `env_key_instructions`, `supports_websockets`, `websocket_connect_timeout_ms`, `requires_openai_auth`",
    );
}

#[test]
fn codex_provider_keys_formwork_does_not_use_are_listed() {
    let config = load(
        r#"
model_reasoning_effort = "high"
[model_providers."my proxy"]
base_url = "http://127.0.0.1:9000/v1"
env_key_instructions = "Ask the team for a key"
supports_websockets = false
websocket_connect_timeout_ms = 15000
requires_openai_auth = false
"#,
    );
    assert_eq!(
        config.ignored_keys,
        [
            "model_reasoning_effort",
            r#"model_providers."my proxy".env_key_instructions"#,
            r#"model_providers."my proxy".supports_websockets"#,
            r#"model_providers."my proxy".websocket_connect_timeout_ms"#,
            r#"model_providers."my proxy".requires_openai_auth"#,
        ]
    );
    assert!(config.model_providers.contains_key("my proxy"));
}

#[test]
fn the_upper_layer_wins_scalars_and_replaces_provider_tables_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let user = dir.path().join("user.toml");
    let explicit = dir.path().join("explicit.toml");
    std::fs::write(
        &user,
        r#"model = "m1"
model_provider = "a"
tool_output_token_limit = 100

[model_providers.a]
base_url = "http://a.example/v1"
env_key = "A_KEY"
http_headers = { "X-A" = "1" }

[model_providers.b]
base_url = "http://b.example/v1"
"#,
    )
    .expect("write user");
    std::fs::write(
        &explicit,
        "model = \"m2\"\n[model_providers.c]\nbase_url = \"http://c.example\"\n\
         [model_providers.a]\nbase_url = \"http://a2.example/v1\"\n",
    )
    .expect("write explicit");
    let config = Config::load_layered(&ConfigLocations {
        user: Some(user),
        explicit: Some(explicit),
        start: None,
    })
    .expect("loads");
    assert_eq!(config.model.as_deref(), Some("m2"));
    assert_eq!(config.model_provider.as_deref(), Some("a"));
    assert_eq!(config.tool_output_token_limit, 100);
    let ids: Vec<&str> = config.model_providers.keys().map(String::as_str).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    // The upper table replaced the lower one whole: no env_key or header of the user's.
    assert_eq!(
        config.model_providers.get("a"),
        Some(&ModelProvider {
            name: "a".to_owned(),
            base_url: "http://a2.example/v1".to_owned(),
            env_key: None,
            ..openai()
        })
    );
    let choice = choose(&config, None, None, &[]).ok().flatten();
    assert_eq!(
        choice.map(|choice| (
            choice.provider_id,
            choice.model,
            choice.tool_output_max_bytes
        )),
        Some(("a".to_owned(), "m2".to_owned(), 400))
    );
}
