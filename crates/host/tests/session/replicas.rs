//! Replicas: hosts on one PostgreSQL database (a throwaway cluster of this test binary) see each
//! other's sessions and events, live, once each, in the store's order.

use super::*;

use formwork_host::store::{Store, StoreUrl};
use formwork_testkit::postgres::Cluster;

/// A host on the database at `url`, and its store's mark.
async fn replica(url: &StoreUrl) -> (Host, String) {
    replica_with(url, config("", approve())).await
}

/// [`replica`] with `config`.
async fn replica_with(url: &StoreUrl, config: Config) -> (Host, String) {
    let store = Store::connect(url, std::path::Path::new("/unused"))
        .await
        .unwrap();
    let mark = store.origin().unwrap().to_owned();
    let host = Host::with_store(config, HostOptions::default(), store)
        .await
        .unwrap();
    (host, mark)
}

/// The session's events as JSON lines.
fn logged(host: &Host, session: &str) -> Vec<String> {
    host.events(session)
        .unwrap()
        .iter()
        .map(|event| serde_json::to_string(event.as_ref()).unwrap())
        .collect()
}

/// Accepts `form` of `session` on `host` with `content`, as a UI does.
fn accept(
    host: &Host,
    session: &str,
    form: &str,
    content: Value,
) -> Result<(), formwork_host::CommandError> {
    host.command(
        session,
        Command::AnswerForm {
            form_id: form.to_owned(),
            answer: FormAnswer::Accept {
                content: content.as_object().unwrap().clone(),
            },
        },
    )
}

/// Waits (at most 30 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 30 s"));
}

/// A session started on one replica is listed on the other, whose followers see its call, form
/// and answer live, once each; the other's log is what a host started afterwards replays from
/// the store. After the other's listening connection is cut, what was committed meanwhile
/// arrives once; a session deleted on one goes from the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_show_each_others_sessions_live_and_once() {
    let cluster = Cluster::shared();
    let url_text = cluster.new_database();
    let url = StoreUrl::parse(&url_text).unwrap();
    let (a, _) = replica(&url).await;
    let (b, b_mark) = replica(&url).await;

    let mut on_a = Watch::open(&a);
    let session = on_a.session.clone();
    until("the session listed on B", || b.has_session(&session)).await;
    let (before, mut live) = b.subscribe(&session).unwrap();
    assert!(before.is_empty(), "{before:?}");

    on_a.call("ask_enum");
    let (form, _) = on_a.form().await;
    on_a.answer(&form, json!({"color": "green"}));
    assert_eq!(
        on_a.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"green"}}"#
    );
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let event = tokio::time::timeout(Duration::from_secs(30), live.recv())
            .await
            .expect("B's events within 30 s")
            .unwrap();
        seen.push(serde_json::to_value(event.as_ref()).unwrap());
    }
    let kinds: Vec<&str> = seen
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call_started",
            "form_requested",
            "form_resolved",
            "tool_call_finished"
        ]
    );
    assert_eq!(seen[1]["form_id"], json!(form));
    assert_eq!(seen[2]["content"], json!({"color": "green"}));

    // B adds to the session too; A sees it.
    b.command(
        &session,
        Command::SendMessage {
            text: "from B".to_owned(),
        },
    )
    .unwrap();
    until("B's message on A", || {
        logged(&a, &session)
            .iter()
            .any(|line| line.contains("from B"))
    })
    .await;

    // Cut B's listening connection, then write on A: B connects again and catches up.
    let name = url_text.rsplit('/').next().unwrap();
    let cut = cluster.psql(
        name,
        &format!(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'formwork-listen-{b_mark}'"
        ),
    );
    assert_eq!(cut, "1\n", "B's listener was cut");
    for text in ["one", "two", "three"] {
        on_a.send(Command::SendMessage {
            text: text.to_owned(),
        });
    }
    until("both replicas have every message", || {
        let count = |host: &Host| {
            logged(host, &session)
                .iter()
                .filter(|line| line.contains(r#""type":"message_added""#))
                .count()
        };
        count(&a) == 4 && count(&b) == 4
    })
    .await;

    // A host started now replays the store: B's log is exactly that.
    let (c, _) = replica(&url).await;
    let stored = logged(&c, &session);
    assert_eq!(stored.len(), 8, "{stored:#?}");
    until("B's log as stored", || logged(&b, &session) == stored).await;

    a.delete_session(&session).await.unwrap();
    until("the session gone from B and C", || {
        !b.has_session(&session) && !c.has_session(&session)
    })
    .await;
    for host in [a, b, c] {
        host.shutdown().await;
    }
}

/// A form a plugin on A asks is answered on B: an answer that does not validate is refused on B
/// with the form's own errors; a valid one is committed by B, and A's plugin gets it, once. A
/// second answer, on either replica, finds the form ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_asked_on_one_replica_is_answered_on_another() {
    let url = StoreUrl::parse(&Cluster::shared().new_database()).unwrap();
    let (a, _) = replica(&url).await;
    let (b, _) = replica(&url).await;
    let mut on_a = Watch::open(&a);
    let session = on_a.session.clone();
    on_a.call("ask_enum");
    let (form, _) = on_a.form().await;
    until("the form on B", || {
        logged(&b, &session).iter().any(|line| line.contains(&form))
    })
    .await;
    let answer =
        |host: &Host, color: &str| accept(host, &session, &form, json!({ "color": color }));
    let refused = answer(&b, "purple").unwrap_err();
    assert!(
        matches!(refused, formwork_host::CommandError::Invalid(_)),
        "{refused}"
    );
    assert_eq!(
        answer(&a, "purple").unwrap_err(),
        refused,
        "B reads it as A does"
    );
    answer(&b, "blue").unwrap();
    assert_eq!(
        on_a.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"blue"}}"#
    );
    assert!(matches!(
        answer(&a, "red"),
        Err(formwork_host::CommandError::NotOpen(_))
    ));
    assert!(matches!(
        answer(&b, "red"),
        Err(formwork_host::CommandError::NotOpen(_))
    ));
    until("B shows the call finished", || {
        logged(&b, &session)
            .iter()
            .any(|line| line.contains(r#""type":"tool_call_finished""#))
    })
    .await;
    let endings = |host: &Host| -> Vec<String> {
        logged(host, &session)
            .into_iter()
            .filter(|line| line.contains(r#""type":"form_resolved""#))
            .collect()
    };
    let ending = serde_json::to_string(&json!({
        "type": "form_resolved",
        "form_id": form,
        "action": "accept",
        "content": {"color": "blue"},
    }))
    .unwrap();
    assert_eq!(endings(&a), [ending]);
    assert_eq!(endings(&b), endings(&a));
    for host in [a, b] {
        host.shutdown().await;
    }
}

/// The forms of a 2026-07-28 call's rounds, held on A, are answered on B: A sends each retry
/// with B's answer, and the call finishes with both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rounds_of_a_call_on_one_replica_are_answered_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let config = || super::rounds::mrtr_config(&dir.path().join("log"));
    let url = StoreUrl::parse(&Cluster::shared().new_database()).unwrap();
    let (a, _) = replica_with(&url, config()).await;
    let (b, _) = replica_with(&url, config()).await;
    let mut on_a = Watch::open(&a);
    let session = on_a.session.clone();
    on_a.call_on("py", "deploy");
    for content in [json!({"target": "production"}), json!({"confirm": true})] {
        let (form, _) = on_a.form().await;
        until("the round's form on B", || {
            logged(&b, &session).iter().any(|line| line.contains(&form))
        })
        .await;
        accept(&b, &session, &form, content).unwrap();
    }
    assert_eq!(
        on_a.finished().await.unwrap(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#
    );
    for host in [a, b] {
        host.shutdown().await;
    }
}

/// Selects the child mode of [`a_stopped_replicas_calls_are_carried_on_or_ended_by_one_other`]:
/// the database URL.
const CHILD_URL_ENV: &str = "REPLICA_CHILD_URL";
/// The lease of the tests' replicas: short, so that a killed one's calls expire soon.
const LEASE: Duration = Duration::from_secs(1);

/// The key every instance of the Python plugin seals `requestState` with, as instances of one
/// server behind several replicas must share one.
const STATE_KEY: &str = "replicas-share-this-request-state-key-0123456789";

/// The TS SDK plugin (pushed forms) as `ts` and the Python SDK plugin (2026-07-28 rounds) as
/// `py`, its instances sharing one `requestState` key.
fn both_eras() -> Config {
    let python = formwork_testkit::peers_dir().join("venv/bin/python");
    let plugin = formwork_testkit::peers_dir().join("npm/py_mrtr_plugin.py");
    let text = format!(
        "{}{}\n[mcp_servers.py]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ PY_MRTR_STATE_KEY = {:?} }}\n{}\n",
        ts_table("ts"),
        approve(),
        python.display().to_string(),
        plugin.display().to_string(),
        STATE_KEY,
        approve()
    );
    Config::from_toml(&text, None).unwrap()
}

async fn leased_replica(url: &StoreUrl) -> Host {
    let store = Store::connect_with_lease(url, std::path::Path::new("/unused"), LEASE)
        .await
        .unwrap();
    Host::with_store(both_eras(), HostOptions::default(), store)
        .await
        .unwrap()
}

/// A replica is killed (SIGKILL) while a 2026-07-28 call waits on its round's form and a pushed
/// form is open. On the two replicas left, the person answers the round on one after the lease
/// has expired; exactly one of them carries the call on, sending the retry with the answer and
/// the stored `requestState`; the call's next round is answered on the other, and the call
/// finishes with both answers. The pushed form, whose connection died with its replica, ends as
/// `cancel` (`host-stopped`), and so does its call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_replicas_calls_are_carried_on_or_ended_by_one_other() {
    let url_text = Cluster::shared().new_database();
    let url = StoreUrl::parse(&url_text).unwrap();
    let b = leased_replica(&url).await;
    let c = leased_replica(&url).await;

    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "replicas::replica_child", "--nocapture"])
        .env(CHILD_URL_ENV, &url_text)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        stdout
            .lines()
            .map_while(Result::ok)
            .find(|line| line.starts_with("FORMS "))
    })
    .await
    .unwrap()
    .expect("the child's forms");
    let ids: Vec<String> = line.split(' ').skip(1).map(str::to_owned).collect();
    let [session, round_form, pushed_session, pushed_form] = ids.as_slice() else {
        panic!("{line}")
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    until("the round's form on B", || {
        logged(&b, session)
            .iter()
            .any(|line| line.contains(round_form.as_str()))
    })
    .await;
    // The person takes longer than the lease: B and C find the call expired and waiting before
    // the answer comes, and must read it again once it has.
    tokio::time::sleep(LEASE * 2).await;
    let answer = |host: &Host, form: &str, content: Value| accept(host, session, form, content);
    answer(&b, round_form, json!({"target": "production"})).unwrap();

    // The next round's form is asked by whichever replica carried the call on.
    let next_form = |host: &Host| {
        host.events(session)
            .unwrap()
            .iter()
            .filter_map(|event| match event.as_ref() {
                Event::FormRequested { form_id, .. }
                    if form_id != round_form && form_id != pushed_form =>
                {
                    Some(form_id.clone())
                }
                _ => None,
            })
            .next_back()
    };
    until("the second round's form", || {
        next_form(&b).is_some() && next_form(&c).is_some()
    })
    .await;
    let second = next_form(&b).unwrap();
    let holder_is_b = b.shown_card(session).unwrap().is_some();
    let other = if holder_is_b { &c } else { &b };
    answer(other, &second, json!({"confirm": true})).unwrap();

    let finished = |host: &Host, session: &str, call_of: &str| -> Option<String> {
        let events = host.events(session).unwrap();
        let call = events.iter().find_map(|event| match event.as_ref() {
            Event::FormRequested {
                form_id, call_id, ..
            } if form_id == call_of => call_id.clone(),
            _ => None,
        })?;
        events.iter().find_map(|event| match event.as_ref() {
            Event::ToolCallFinished {
                call_id,
                result,
                error,
            } if *call_id == call => Some(match (result, error) {
                (Some(result), _) => result["content"][0]["text"].as_str().unwrap().to_owned(),
                (None, error) => format!("error: {}", error.clone().unwrap_or_default()),
            }),
            _ => None,
        })
    };
    until("the round call finished on both", || {
        finished(&b, session, round_form).is_some() && finished(&c, session, round_form).is_some()
    })
    .await;
    for host in [&b, &c] {
        assert_eq!(
            finished(host, session, round_form).unwrap(),
            r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#
        );
        until("the pushed call ended", || {
            finished(host, pushed_session, pushed_form).is_some()
        })
        .await;
        assert_eq!(
            finished(host, pushed_session, pushed_form).unwrap(),
            "error: host-stopped"
        );
        let pushed_end = logged(host, pushed_session)
            .into_iter()
            .find(|line| {
                line.contains(r#""type":"form_resolved""#) && line.contains(pushed_form.as_str())
            })
            .unwrap();
        assert_eq!(
            pushed_end,
            format!(
                r#"{{"type":"form_resolved","form_id":"{pushed_form}","action":"cancel","reason":"host-stopped"}}"#
            )
        );
    }
    // One replica carried the call on: one second round, one retry answered.
    let seconds = |host: &Host| {
        host.events(session)
            .unwrap()
            .iter()
            .filter(|event| matches!(event.as_ref(), Event::ToolCallRound { round: 2, .. }))
            .count()
    };
    assert_eq!((seconds(&b), seconds(&c)), (1, 1));
    let (stored, _) = replica(&url).await;
    assert_eq!(
        stored
            .events(session)
            .unwrap()
            .iter()
            .filter(|event| matches!(event.as_ref(), Event::ToolCallRound { round: 2, .. }))
            .count(),
        1
    );
    for host in [b, c, stored] {
        host.shutdown().await;
    }
}

/// Child mode of [`a_stopped_replicas_calls_are_carried_on_or_ended_by_one_other`]: a replica
/// that starts a 2026-07-28 call and a pushed form, prints their ids, and waits to be killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_child() {
    let Ok(url) = std::env::var(CHILD_URL_ENV) else {
        return;
    };
    let a = leased_replica(&StoreUrl::parse(&url).unwrap()).await;
    let mut rounds = Watch::open(&a);
    rounds.call_on("py", "deploy");
    let (round_form, _) = rounds.form().await;
    let mut pushed = Watch::open(&a);
    pushed.call_on("ts", "ask_enum");
    let (pushed_form, _) = pushed.form().await;
    // Both stored before they are announced to the parent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!(
        "FORMS {} {round_form} {} {pushed_form}",
        rounds.session, pushed.session
    );
    tokio::time::sleep(Duration::from_secs(600)).await;
}

/// An approval card of a call on A is answered on B: A reads the choice against its card, the
/// call runs, and its form is answered on B too. Answering the approval as a form, or twice,
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_asked_on_one_replica_is_answered_on_another() {
    let url = StoreUrl::parse(&Cluster::shared().new_database()).unwrap();
    let (a, _) = replica_with(&url, config("", "")).await;
    let (b, _) = replica_with(&url, config("", "")).await;
    let mut on_a = Watch::open(&a);
    let session = on_a.session.clone();
    on_a.call("ask_enum");
    let (approval, _) = on_a.approval().await;
    until("the approval on B", || {
        logged(&b, &session)
            .iter()
            .any(|line| line.contains(&approval))
    })
    .await;
    let as_form = b.command(
        &session,
        Command::AnswerForm {
            form_id: approval.clone(),
            answer: FormAnswer::Decline,
        },
    );
    assert!(
        matches!(as_form, Err(formwork_host::CommandError::Mismatch(_))),
        "{as_form:?}"
    );
    let allow = |host: &Host| {
        host.command(
            &session,
            Command::AnswerApproval {
                approval_id: approval.clone(),
                choice: formwork_host::policy::ApprovalChoice::Allow,
            },
        )
    };
    allow(&b).unwrap();
    let (form, _) = on_a.form().await;
    assert!(matches!(
        allow(&b),
        Err(formwork_host::CommandError::NotOpen(_))
    ));
    until("the form on B", || {
        logged(&b, &session).iter().any(|line| line.contains(&form))
    })
    .await;
    accept(&b, &session, &form, json!({"color": "red"})).unwrap();
    assert_eq!(
        on_a.finished().await.unwrap(),
        r#"result: {"action":"accept","content":{"color":"red"}}"#
    );
    let resolved = logged(&a, &session)
        .into_iter()
        .find(|line| line.contains(r#""type":"approval_resolved""#))
        .unwrap();
    assert_eq!(
        resolved,
        format!(r#"{{"type":"approval_resolved","approval_id":"{approval}","choice":"allow"}}"#)
    );
    for host in [a, b] {
        host.shutdown().await;
    }
}
