//! The rounds of a 2026-07-28 call: the policy, the record, Stop and a restart between rounds.

use super::*;

/// The `[mcp_servers.py]` table of the Python SDK plugin that asks through 2026-07-28 rounds,
/// with its `endless` tool's log at `log`.
pub(super) fn mrtr_config(log: &std::path::Path) -> Config {
    mrtr_config_with("", log)
}

/// [`mrtr_config`] under the top-level keys `top`.
fn mrtr_config_with(top: &str, log: &std::path::Path) -> Config {
    let python = peers_dir().join("venv/bin/python").display().to_string();
    let plugin = peers_dir()
        .join("npm/py_mrtr_plugin.py")
        .display()
        .to_string();
    let log = log.display().to_string();
    let text = format!(
        "{top}\n[mcp_servers.py]\ncommand = {python:?}\nargs = [{plugin:?}]\nenv = {{ PY_MRTR_LOG = {log:?} }}\n{}\n",
        approve()
    );
    Config::from_toml(&text, None).unwrap()
}

/// A form of a round that the policy declines is answered `decline` in the retry, like any
/// other answer, and the session says why.
#[tokio::test]
async fn a_round_form_the_policy_declines_is_answered_decline() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(mrtr_config_with(
        "approval_policy = \"never\"",
        &dir.path().join("log"),
    ));
    let mut s = Watch::open(&host);
    s.call_on("py", "deploy");
    let code = s
        .next(|event| match event {
            Event::Diagnostic { code, .. } => Some(code.clone()),
            _ => None,
        })
        .await;
    assert_eq!(code, "elicitation-declined-by-policy");
    assert_eq!(
        s.finished().await.unwrap(),
        "target: decline; confirm: not asked"
    );
    host.shutdown().await;
}

/// The rounds a call's plugin reported, as `round asked request_state`.
async fn next_round(s: &mut Watch) -> String {
    s.next(|event| match event {
        Event::ToolCallRound {
            round,
            asked,
            request_state,
            ..
        } => Some(format!("{round} {asked:?} {request_state}")),
        _ => None,
    })
    .await
}

/// Each `input_required` round shows its forms as cards of the call, like pushed forms, and is
/// recorded in the store before them; the call finishes after the last round.
#[tokio::test]
async fn each_round_of_a_2026_call_is_recorded_and_its_forms_are_cards_of_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let store = formwork_host::store::Store::open(dir.path().join("formwork.db")).unwrap();
    let host = Host::with_store(
        mrtr_config(&dir.path().join("log")),
        HostOptions::default(),
        store,
    )
    .await
    .unwrap();
    let mut s = Watch::open(&host);
    s.call_on("py", "deploy");
    let call_id = s
        .next(|event| match event {
            Event::ToolCallStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .await;
    let round = next_round(&mut s).await;
    assert!(
        round.starts_with("1 [") && round.ends_with("] true"),
        "{round}"
    );
    let (form, card_call) = s
        .next(|event| match event {
            Event::FormRequested {
                form_id, call_id, ..
            } => Some((form_id.clone(), call_id.clone())),
            _ => None,
        })
        .await;
    assert_eq!(card_call.as_deref(), Some(call_id.as_str()));
    s.answer(&form, json!({"target": "production"}));
    assert!(next_round(&mut s).await.starts_with("2 ["));
    let (form, _) = s.form().await;
    s.answer(&form, json!({"confirm": true}));
    assert_eq!(
        s.finished().await.unwrap(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#
    );
    host.shutdown().await;

    let store = formwork_host::store::Store::open(dir.path().join("formwork.db")).unwrap();
    let rounds: Vec<(u32, usize, bool)> = store
        .rounds(&call_id)
        .await
        .unwrap()
        .into_iter()
        .map(|round| (round.round, round.asked.len(), round.request_state))
        .collect();
    assert_eq!(rounds, [(1, 1, true), (2, 1, true)]);
}

/// Stopping the turn while a round's form is open ends the call: nothing more is sent.
#[tokio::test]
async fn stopping_the_turn_between_rounds_stops_the_retries() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let host = host(mrtr_config(&log));
    let mut s = Watch::open(&host);
    s.call_on("py", "endless");
    let (form, _) = s.form().await;
    s.answer(&form, json!({"n": 1}));
    let (_, _) = s.form().await;
    s.send(Command::StopTurn);
    assert_eq!(s.finished().await.unwrap_err(), "the turn was stopped");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n2\n");
    host.shutdown().await;
}

/// A host that stops between rounds leaves the call interrupted: after the restart it shows as
/// stopped with the host, its rounds are on record, and it is never sent again.
#[tokio::test]
async fn a_restart_between_rounds_shows_the_call_interrupted_and_never_resends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let log = dir.path().join("log");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(mrtr_config(&log), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    s.call_on("py", "endless");
    let call_id = s
        .next(|event| match event {
            Event::ToolCallStarted { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .await;
    s.form().await;
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(mrtr_config(&log), HostOptions::default(), store)
        .await
        .unwrap();
    let (replayed, _) = host.subscribe(&s.session).unwrap();
    let ended: Vec<String> = replayed
        .iter()
        .filter_map(|event| match event.as_ref() {
            Event::ToolCallFinished {
                call_id: id, error, ..
            } if *id == call_id => Some(error.clone().unwrap_or_default()),
            _ => None,
        })
        .collect();
    assert_eq!(ended, ["host-stopped"]);
    // The round is in the transcript, between the call's start and its form.
    let order: Vec<&str> = replayed
        .iter()
        .filter_map(|event| match event.as_ref() {
            Event::ToolCallStarted { .. } => Some("started"),
            Event::ToolCallRound { round: 1, .. } => Some("round 1"),
            Event::FormRequested { .. } => Some("form"),
            Event::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["started", "round 1", "form", "finished"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    host.shutdown().await;
    let store = formwork_host::store::Store::open(&path).unwrap();
    assert_eq!(store.rounds(&call_id).await.unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "1\n");
}
