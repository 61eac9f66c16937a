//! Forms across a restart, after their call ended, past the pending limit; URL and secret forms.

use super::*;

#[tokio::test]
async fn after_a_restart_the_transcript_is_intact_and_open_forms_show_as_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("formwork.db");
    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config("", approve()), HostOptions::default(), store)
        .await
        .unwrap();
    let mut s = Watch::open(&host);
    s.send(Command::SendMessage {
        text: "deploy please".to_owned(),
    });
    s.call("ask_enum");
    let (answered, _) = s.form().await;
    s.answer(&answered, json!({"color": "red"}));
    s.finished().await.unwrap();
    s.call("ask_enum");
    let (pending, _) = s.form().await;
    let session = s.session.clone();
    let (live, _) = host.subscribe(&session).unwrap();
    host.shutdown().await;

    let store = formwork_host::store::Store::open(&path).unwrap();
    let host = Host::with_store(config("", approve()), HostOptions::default(), store)
        .await
        .unwrap();
    assert_eq!(host.sessions(), std::slice::from_ref(&session));
    let (replayed, _) = host.subscribe(&session).unwrap();
    let kept = |event: &Arc<Event>| {
        !matches!(
            **event,
            Event::TurnStarted { .. } | Event::TurnEnded { .. } | Event::FormShown { .. }
        )
    };
    let live: Vec<Arc<Event>> = live.into_iter().filter(kept).collect();
    // Everything the live session showed comes back, in order; the form left open ends as
    // cancelled because the host stopped, and its call as failed.
    assert_eq!(replayed[..live.len()], live[..]);
    let rest: Vec<String> = replayed[live.len()..]
        .iter()
        .map(|event| match event.as_ref() {
            Event::FormResolved {
                form_id,
                action,
                reason,
                ..
            } => {
                format!(
                    "{} {action} {}",
                    *form_id == pending,
                    reason.clone().unwrap_or_default()
                )
            }
            Event::ToolCallFinished { error, .. } => {
                format!("call {}", error.clone().unwrap_or_default())
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(rest[0], "true cancel host-stopped");
    assert!(rest[1].starts_with("call "), "{rest:?}");
    host.shutdown().await;

    // The store keeps what the plugin asked (its params, in its key order; the TS SDK adds
    // `mode` last) apart from what the person was shown.
    let store = formwork_host::store::Store::open(&path).unwrap();
    let form = store.form(&answered).await.unwrap().unwrap();
    assert_eq!(
        form.request.get(),
        r#"{"message":"Please give color","requestedSchema":{"type":"object","properties":{"color":{"type":"string","title":"Color","enum":["red","green","blue"]}},"required":["color"]},"mode":"form"}"#
    );
    let shown: Value = serde_json::from_str(form.render.unwrap().get()).unwrap();
    assert_eq!(shown["mode"], "form", "{shown}");
    assert_eq!(shown["render"]["type"], "request_user_input", "{shown}");
}

/// A form still open when its call ends is cancelled (`call-ended`), before the call's end is
/// announced, and the plugin is told.
#[tokio::test]
async fn a_form_whose_call_ended_is_cancelled() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_and_return");
    let (form, _) = s.form().await;
    let (ended, action, reason) = s.resolved().await;
    assert_eq!(
        (ended, action.as_str(), reason.as_deref()),
        (form, "cancel", Some("call-ended"))
    );
    assert_eq!(s.finished().await.unwrap(), "returned");
    s.call("last_outcome");
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"cancel"}"#
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_url_form_reports_the_plugins_completion() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_url");
    let (form, _) = s.form().await;
    s.send(Command::AnswerForm {
        form_id: form.clone(),
        answer: FormAnswer::AcceptUrl,
    });
    let completed = s
        .next(|event| match event {
            Event::FormCompleted { form_id } => Some(form_id.clone()),
            _ => None,
        })
        .await;
    assert_eq!(completed, form);
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"accept"}"#
    );
    host.shutdown().await;
}

/// A plugin that opens more forms at once than `[forms] max_pending` allows: the one past the
/// limit is declined at once, with a diagnostic naming the limit; the others are shown.
#[tokio::test]
async fn a_form_past_the_pending_limit_is_declined_at_once() {
    for (top, limit) in [("", 16), ("[forms]\nmax_pending = 3", 3)] {
        let host = host(config(top, approve()));
        let s = Watch::open(&host);
        s.send(Command::CallTool {
            server: "ts".to_owned(),
            tool: "ask_many".to_owned(),
            arguments: Some(json!({ "count": limit + 1 })),
        });
        let (forms, diagnostic) = until_logged(
            &host,
            &s.session,
            "the forms and the diagnostic",
            |events| {
                let forms: Vec<String> = events
                    .iter()
                    .filter_map(|event| match &**event {
                        Event::FormRequested { form_id, .. } => Some(form_id.clone()),
                        _ => None,
                    })
                    .collect();
                let diagnostic = events.iter().find_map(|event| match &**event {
                    Event::Diagnostic { code, message } => Some((code.clone(), message.clone())),
                    _ => None,
                })?;
                (forms.len() >= limit).then_some((forms, diagnostic))
            },
        )
        .await;
        assert_eq!(forms.len(), limit);
        assert_eq!(
            diagnostic,
            (
                "form-limit".to_owned(),
                format!(
                    "ts: declined: {limit} forms of this tool call already wait for an answer, \
                     the most [forms] max_pending = {limit} allows"
                )
            )
        );
        for form in &forms {
            s.answer(form, json!({"agree": true}));
        }
        let result = until_logged(&host, &s.session, "the call's end", |events| {
            events.iter().find_map(|event| match &**event {
                Event::ToolCallFinished { result, .. } => result.clone(),
                _ => None,
            })
        })
        .await;
        let text = result["content"][0]["text"].as_str().unwrap();
        let results: Value = serde_json::from_str(text.strip_prefix("result: ").unwrap()).unwrap();
        let declined = results
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| **r == json!({"action": "decline"}))
            .count();
        let accepted = results
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| **r == json!({"action": "accept", "content": {"agree": true}}))
            .count();
        assert_eq!((accepted, declined), (limit, 1), "{results}");
        host.shutdown().await;
    }
}

/// A field that names a secret is marked in the render block; with
/// `[forms] sensitive_fields = "decline"` the form is declined before the person sees it.
#[tokio::test]
async fn a_form_that_asks_for_a_secret_is_marked_or_declined() {
    let host = host(config("", approve()));
    let mut s = Watch::open(&host);
    s.call("ask_password");
    let body = s
        .next(|event| match event {
            Event::FormRequested { body, .. } => Some(body.clone()),
            _ => None,
        })
        .await;
    let ElicitationRequest::Form(FormRequest { render, .. }) = body else {
        panic!("not a form body")
    };
    let marks: Vec<(String, bool)> = render
        .block()
        .unwrap()
        .questions
        .iter()
        .map(|q| (q.id.clone(), q.sensitive))
        .collect();
    assert_eq!(
        marks,
        [("user".to_owned(), false), ("password".to_owned(), true)]
    );
    host.shutdown().await;

    let host = host_with(
        config("[forms]\nsensitive_fields = \"decline\"", approve()),
        HostOptions::default(),
    );
    let mut s = Watch::open(&host);
    s.call("ask_password");
    let (code, message) = s
        .next(|event| match event {
            Event::Diagnostic { code, message } => Some((code.clone(), message.clone())),
            Event::FormRequested { .. } => panic!("a form asking for a secret was shown"),
            _ => None,
        })
        .await;
    assert_eq!(code, "form-asks-for-a-secret");
    assert_eq!(
        message,
        "ts: declined: the form asks for a secret (password), which plugins must not ask for in \
         a form, and [forms] sensitive_fields = \"decline\""
    );
    assert_eq!(
        s.finished().await.unwrap(),
        r#"result: {"action":"decline"}"#
    );
    host.shutdown().await;
}

/// Hosts that share one store must never mint the same id: each id carries its host's own
/// random mark between the time and the counter, so two hosts started together differ.
#[tokio::test]
async fn two_hosts_mint_ids_with_marks_of_their_own() {
    let parts = |id: &str| {
        let (time, rest) = id
            .strip_prefix('s')
            .and_then(|rest| rest.split_once('-'))
            .unwrap_or_else(|| panic!("{id}: not s<time>-<mark>-<n>"));
        let (mark, count) = rest
            .split_once('-')
            .unwrap_or_else(|| panic!("{id}: no mark"));
        assert!(u64::from_str_radix(time, 16).is_ok(), "{id}");
        assert!(
            mark.len() == 8 && mark.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        (mark.to_owned(), count.parse::<u64>().unwrap())
    };
    let first = host(config("", approve()));
    let second = host(config("", approve()));
    let (a1, n1) = parts(&first.create_session());
    let (a2, n2) = parts(&first.create_session());
    let (b1, _) = parts(&second.create_session());
    assert_eq!(a1, a2, "one host, one mark");
    assert!(n2 > n1, "its counter goes on");
    assert_ne!(a1, b1, "two hosts, two marks");
}
