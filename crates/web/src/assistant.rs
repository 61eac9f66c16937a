//! Runs the scripted model after a person's message: issues the rule's tool call and adds its
//! reply once the call returned a result.

use formwork_host::{Command, Event};

use crate::AppState;

/// Called after the host accepted a `send_message` command.
pub(crate) fn on_message(state: &AppState, session: &str, text: &str) {
    let Some(model) = &state.model else {
        return;
    };
    let Some(rule) = model.respond(text) else {
        return;
    };
    let reply = rule.reply.clone();
    let Some(call) = rule.call.clone() else {
        if let Some(reply) = reply {
            add_reply(state, session, reply);
        }
        return;
    };
    // Subscribe before the call starts, so its events cannot be missed.
    let Ok((_, mut live)) = state.host.subscribe(session) else {
        return;
    };
    let command = Command::CallTool {
        server: call.server.clone(),
        tool: call.tool.clone(),
        arguments: call.arguments.clone(),
    };
    if let Err(err) = state.host.command(session, command) {
        let _ = state.host.add_diagnostic(
            session,
            "scripted-model-call-failed",
            format!(
                "the scripted model could not call {}.{}: {err}",
                call.server, call.tool
            ),
        );
        return;
    }
    let Some(reply) = reply else {
        return;
    };
    let state = state.clone();
    let session = session.to_owned();
    tokio::spawn(async move {
        let mut call_id: Option<String> = None;
        loop {
            let event = tokio::select! {
                () = state.shutdown.cancelled() => return,
                event = live.recv() => event,
            };
            let event = match event {
                Ok(event) => event,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            match event.as_ref() {
                // The scripted call, not one an app made of the same tool.
                Event::ToolCallStarted {
                    call_id: id,
                    server,
                    tool,
                    asked_by: None,
                    ..
                } if call_id.is_none() && *server == call.server && *tool == call.tool => {
                    call_id = Some(id.clone());
                }
                Event::ToolCallFinished {
                    call_id: id,
                    result,
                    ..
                } if call_id.as_deref() == Some(id.as_str()) => {
                    if result.as_ref().is_some_and(|result| !result.is_null()) {
                        add_reply(&state, &session, reply);
                    }
                    return;
                }
                _ => {}
            }
        }
    });
}

fn add_reply(state: &AppState, session: &str, text: String) {
    let _ = state.host.add_assistant_message(session, text);
}
