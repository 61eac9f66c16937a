//! Codex's own log (its stderr), read for what it tells only there: a plugin's form that Codex
//! refused before it sent anything to its client.

/// Something Codex's log says that formwork acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogNotice {
    /// Codex could not read a plugin's `requestedSchema` into its typed schema, so it answered
    /// the plugin `cancel` without asking its client.
    SchemaRefused {
        /// The plugin (Codex's server name).
        server: String,
        /// Codex's reason, e.g. ``unknown field `title`, expected one of `$schema`, ...``.
        reason: String,
    },
}

/// What Codex 0.171.0 logs when it refuses a form's schema.
pub const SCHEMA_REFUSED: &str = "failed to parse typed MCP elicitation schema";

/// Reads one line of Codex's log (colour codes and all).
pub fn read_line(line: &str) -> Option<LogNotice> {
    let line = strip_colours(line);
    let (_, rest) = line.split_once(SCHEMA_REFUSED)?;
    let reason = rest
        .split_once("error=")
        .map(|(_, error)| {
            error
                .split_once(" server_name=")
                .map_or(error, |(reason, _)| reason)
        })
        .unwrap_or_default()
        .trim()
        .to_owned();
    let server = rest
        .split_once("server_name=\"")
        .and_then(|(_, name)| name.split_once('"'))
        .map(|(name, _)| name.to_owned())?;
    Some(LogNotice::SchemaRefused { server, reason })
}

/// The text without ANSI escape sequences (`ESC [ ... letter`).
fn strip_colours(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_schema_names_the_server_and_the_reason() {
        let line = "\u{1b}[2m2026-12-05T21:31:25.614405Z\u{1b}[0m \u{1b}[31mERROR\u{1b}[0m \u{1b}[2mcodex_app_server::bespoke_event_handling\u{1b}[0m\u{1b}[2m:\u{1b}[0m failed to parse typed MCP elicitation schema \u{1b}[3merror\u{1b}[0m\u{1b}[2m=\u{1b}[0munknown field `title`, expected one of `$schema`, `type`, `properties`, `required` \u{1b}[3mserver_name\u{1b}[0m\u{1b}[2m=\u{1b}[0m\"py\" \u{1b}[3mrequest_id\u{1b}[0m\u{1b}[2m=\u{1b}[0mString(\"codex-mcp-elicitation-0\")";
        assert_eq!(
            read_line(line),
            Some(LogNotice::SchemaRefused {
                server: "py".to_owned(),
                reason: "unknown field `title`, expected one of `$schema`, `type`, `properties`, `required`".to_owned(),
            })
        );
        assert_eq!(read_line("WARN codex_models_manager: Unknown model"), None);
    }
}
