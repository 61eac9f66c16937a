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
    let answer = |host: &Host, color: &str| {
        host.command(
            &session,
            Command::AnswerForm {
                form_id: form.clone(),
                answer: FormAnswer::Accept {
                    content: json!({ "color": color }).as_object().unwrap().clone(),
                },
            },
        )
    };
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
        b.command(
            &session,
            Command::AnswerForm {
                form_id: form,
                answer: FormAnswer::Accept {
                    content: content.as_object().unwrap().clone(),
                },
            },
        )
        .unwrap();
    }
    assert_eq!(
        on_a.finished().await.unwrap(),
        r#"target: accept {"target":"production"}; confirm: {"confirm":true}"#
    );
    for host in [a, b] {
        host.shutdown().await;
    }
}
