//! A plugin that offers 2026-07-28 but pushes its forms (`elicitation/create`, as the Python
//! SDK's `ctx.elicit` and fastmcp do) has its calls fail there: its SDK refuses to send the
//! form. The failure names the fix, and the person may take it with one click: formwork then
//! speaks 2025-11-25 to the server, writing it into their config, and runs the call again.

use std::sync::Arc;

use serde_json::Value;

use super::calls::Caller;
use super::wire::Event;
use super::{CommandError, Session};
use crate::plugin::{PUSH_VERSION, push_fix};

impl Session {
    /// For a call that failed because its plugin pushed a form on a 2026-07-28 connection
    /// (`plugin::push_refusal`): offers the older version for the call and gives the fix in
    /// words, to add to what the person sees.
    pub(super) fn offer_older_protocol(&self, call_id: &str, server: &str) -> String {
        self.emit(Event::OlderProtocolOffered {
            call_id: call_id.to_owned(),
            server: server.to_owned(),
            version: PUSH_VERSION.to_owned(),
        });
        push_fix(server, true)
    }

    /// `Command::UseOlderProtocol`: writes `protocol_version = "2025-11-25"` for the server of
    /// `call_id` into the file formwork may write for it (the user config or the `--config`
    /// file, never a project's), takes the new config, drops the session's connection to the
    /// server, and runs the call again with its arguments.
    pub(super) fn use_older_protocol(self: &Arc<Self>, call_id: &str) -> Result<(), CommandError> {
        let (server, tool, arguments) = self.offered_call(call_id)?;
        let host = self
            .host
            .upgrade()
            .ok_or_else(|| CommandError::NoSession(self.id.clone()))?;
        let config = host.config();
        let Some(path) = config.remember_file(&server) else {
            return Err(CommandError::Mismatch(format!(
                "formwork writes no file that holds [mcp_servers.{server}] (a project's is never \
                 written): set protocol_version = \"{PUSH_VERSION}\" there yourself"
            )));
        };
        let written = crate::config::remember_protocol_version(&path, &server, PUSH_VERSION)
            .and_then(|()| config.reload())
            .map_err(|err| CommandError::Mismatch(err.to_string()))?;
        if let Ok(mut slot) = host.config.write() {
            *slot = Arc::new(written);
        }
        self.lock().plugins.remove(&server);
        self.diagnostic(
            "protocol-version-written",
            format!(
                "{server} now speaks {PUSH_VERSION}: protocol_version written into {}",
                path.display()
            ),
        );
        self.start_call(&server, &tool, Some(arguments), Caller::Person)
            .map(drop)
    }

    /// The server, tool and arguments of `call_id`, a call that was offered the older version.
    fn offered_call(&self, call_id: &str) -> Result<(String, String, Value), CommandError> {
        let state = self.lock();
        let offered = state.log.iter().any(|event| {
            matches!(&**event, Event::OlderProtocolOffered { call_id: id, .. } if id == call_id)
        });
        let started = state.log.iter().find_map(|event| match &**event {
            Event::ToolCallStarted {
                call_id: id,
                server,
                tool,
                arguments,
                ..
            } if id == call_id => Some((server.clone(), tool.clone(), arguments.to_value())),
            _ => None,
        });
        match (offered, started) {
            (true, Some(call)) => Ok(call),
            _ => Err(CommandError::NotOpen(call_id.to_owned())),
        }
    }
}
