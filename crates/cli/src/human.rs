//! What `tools`, `call`, `doctor` and `config check` print for a person: when stdout is a terminal and
//! `--json` is not given. Piped (or with `--json`) they print exactly their JSON, so scripts
//! keep working. Every piece of plugin text goes through [`inert`]: a plugin cannot move the
//! cursor or forge a line.

use std::io::IsTerminal;
use std::sync::OnceLock;

use serde_json::Value;

use crate::terminal::inert;

static JSON: OnceLock<bool> = OnceLock::new();

/// Records `--json` (once, from `main`).
pub fn set_json(json: bool) {
    let _ = JSON.set(json);
}

/// Whether output is for a person: stdout is a terminal and `--json` was not given.
pub fn for_people() -> bool {
    !JSON.get().copied().unwrap_or(false) && std::io::stdout().is_terminal()
}

/// A description's first line, at most this many characters in the table.
const DESCRIPTION_WIDTH: usize = 72;

/// `formwork tools`: one line per tool, name then description, and a count.
pub fn tools_table(tools: &[Value]) -> String {
    let rows: Vec<(String, String)> = tools
        .iter()
        .map(|tool| {
            let text = |key: &str| tool.get(key).and_then(Value::as_str).unwrap_or_default();
            let description = text("description").lines().next().unwrap_or_default();
            let mut description = inert(description);
            if description.chars().count() > DESCRIPTION_WIDTH {
                description = description.chars().take(DESCRIPTION_WIDTH - 1).collect();
                description.push('…');
            }
            (inert(text("name")), description)
        })
        .collect();
    let width = rows
        .iter()
        .map(|(name, _)| name.chars().count())
        .max()
        .unwrap_or(0)
        .max("TOOL".len());
    let mut out = format!("{:<width$}  DESCRIPTION\n", "TOOL");
    for (name, description) in &rows {
        out.push_str(format!("{name:<width$}  {description}").trim_end());
        out.push('\n');
    }
    out.push_str(&match rows.len() {
        1 => "1 tool\n".to_owned(),
        n => format!("{n} tools\n"),
    });
    out
}

/// `formwork call`: the result's content blocks (text as text, others named), its structured
/// content, and how the call ended.
pub fn call_result(result: &Value) -> String {
    let mut out = String::new();
    for block in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        let line = match text("type") {
            "text" => text("text")
                .split('\n')
                .map(|line| inert(line.strip_suffix('\r').unwrap_or(line)))
                .collect::<Vec<_>>()
                .join("\n"),
            kind @ ("image" | "audio") => format!(
                "[{kind} {}, {} bytes of base64]",
                inert(text("mimeType")),
                text("data").len()
            ),
            "resource_link" => format!("[link {}: {}]", inert(text("name")), inert(text("uri"))),
            "resource" => {
                let resource = block.get("resource");
                let field = |key: &str| {
                    resource
                        .and_then(|r| r.get(key))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                };
                match field("text") {
                    "" => format!("[resource {}]", inert(field("uri"))),
                    body => format!("[resource {}]\n{}", inert(field("uri")), inert(body)),
                }
            }
            other => format!("[{} block]", inert(other)),
        };
        out.push_str(&line);
        out.push('\n');
    }
    if let Some(structured) = result.get("structuredContent") {
        out.push_str("Structured content:\n");
        let pretty = serde_json::to_string_pretty(structured).unwrap_or_default();
        for line in pretty.lines() {
            out.push_str("  ");
            out.push_str(&inert(line));
            out.push('\n');
        }
    }
    let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
    out.push_str(if failed {
        "✗ The tool reported an error.\n"
    } else {
        "✓ The tool returned.\n"
    });
    out
}

/// `formwork doctor`: the connection, then each row of the symptom table as a checklist item
/// (✗ applies, ✓ does not, ? only a `--tool` call can tell).
pub fn doctor_checklist(report: &Value) -> String {
    let connection = &report["connection"];
    let mut out = String::new();
    let target = connection["target"]
        .as_object()
        .and_then(|target| target.values().next())
        .and_then(Value::as_str)
        .unwrap_or_default();
    if connection["connected"] == Value::Bool(true) {
        out.push_str(&format!(
            "✓ Connected to {} (protocol {}, {})\n",
            inert(target),
            inert(connection["protocol_version"].as_str().unwrap_or("?")),
            inert(connection["era"].as_str().unwrap_or("?")),
        ));
        let tools = report["tools"].as_array().map_or(0, Vec::len);
        out.push_str(&format!("✓ {tools} tools listed\n"));
    } else {
        out.push_str(&format!(
            "✗ Could not connect to {}: {}\n",
            inert(target),
            inert(connection["error"].as_str().unwrap_or("unknown error"))
        ));
        for step in connection["sign_in"].as_array().into_iter().flatten() {
            out.push_str(&format!(
                "    {} at {}: {}\n",
                inert(step["step"].as_str().unwrap_or_default()),
                inert(step["url"].as_str().unwrap_or_default()),
                inert(step["outcome"].as_str().unwrap_or_default()),
            ));
        }
    }
    out.push_str(&call_line(report, "called"));
    out.push_str(&symptom_lines(report));
    out
}

/// The line of a doctor's `--tool` call (none without one): `• TOOL <how>: OUTCOME`.
fn call_line(report: &Value, how: &str) -> String {
    let Some(call) = report["call"].as_object() else {
        return String::new();
    };
    let text = |key: &str| inert(call.get(key).and_then(Value::as_str).unwrap_or_default());
    format!("• {} {how}: {}\n", text("tool"), text("outcome"))
}

/// The symptom rows of a doctor's report: what applies with why and what to do, what does not,
/// and what only a call can tell.
fn symptom_lines(report: &Value) -> String {
    let mut out = String::new();
    for symptom in report["symptoms"].as_array().into_iter().flatten() {
        let text = |key: &str| inert(symptom[key].as_str().unwrap_or_default());
        match symptom["applies"].as_bool() {
            Some(true) => out.push_str(&format!(
                "✗ {}\n    why: {}\n    do: {}\n",
                text("symptom"),
                text("cause"),
                text("action")
            )),
            Some(false) => out.push_str(&format!("✓ {}\n", text("symptom"))),
            None => out.push_str(&format!("? {} (a --tool call tells)\n", text("symptom"))),
        }
    }
    out
}

/// `formwork doctor --runtime codex`'s report for people: how Codex ran, the call, each row.
pub fn codex_doctor_checklist(report: &Value) -> String {
    let codex = &report["codex"];
    let mut out = String::new();
    match codex["error"].as_str() {
        Some(error) => out.push_str(&format!("✗ Codex could not run: {}\n", inert(error))),
        None => {
            out.push_str(&format!(
                "✓ Codex ran ({}, CODEX_HOME {})\n",
                inert(codex["command"].as_str().unwrap_or_default()),
                inert(codex["home"].as_str().unwrap_or_default()),
            ));
            let server = &report["server"];
            match server["tools_error"].as_str() {
                Some(error) => out.push_str(&format!(
                    "✗ Codex could not list the tools of {}: {}\n",
                    inert(server["name"].as_str().unwrap_or_default()),
                    inert(error)
                )),
                None => out.push_str(&format!(
                    "✓ Codex lists {} tools of {}\n",
                    server["tools"].as_array().map_or(0, Vec::len),
                    inert(server["name"].as_str().unwrap_or_default())
                )),
            }
        }
    }
    out.push_str(&call_line(report, "called through Codex"));
    out.push_str(&symptom_lines(report));
    out
}

/// `formwork config check`: which files applied, whether plugin forms reach the person, the
/// policy in a line, the model in a line, and a line per server.
pub fn config_summary(report: &Value) -> String {
    let text = |value: &Value| inert(value.as_str().unwrap_or_default());
    let mut out = String::new();
    for source in report["sources"].as_array().into_iter().flatten() {
        let mark = if source["applied"] == Value::Bool(true) {
            "✓"
        } else {
            "·"
        };
        out.push_str(&format!(
            "{mark} {} {}: {}\n",
            text(&source["layer"]),
            text(&source["file"]),
            text(&source["reason"])
        ));
    }
    let forms = &report["plugin_forms"];
    let mark = if forms["allowed"] == Value::Bool(true) {
        "✓"
    } else {
        "✗"
    };
    out.push_str(&format!("{mark} {}\n", text(&forms["reason"])));
    out.push_str(&format!(
        "  approval_policy {} · approval card {} · at most {} forms pending\n",
        text(&report["approval_policy"]),
        text(&report["approval_card"]),
        report["forms"]["max_pending"]
    ));
    out.push_str(&model_line(&report["model"]));
    if report["runtime"] == "codex" {
        let codex = &report["codex"];
        out.push_str(&format!(
            "  runtime: codex ({}; CODEX_HOME {})\n",
            codex["command"]
                .as_str()
                .map_or_else(|| "`codex` on PATH".to_owned(), inert),
            codex["home"]
                .as_str()
                .map_or_else(|| "`codex` in the data directory".to_owned(), inert),
        ));
    }
    let servers = report["mcp_servers"].as_object();
    let width = servers
        .into_iter()
        .flat_map(|servers| servers.keys())
        .map(|name| inert(name).chars().count())
        .max()
        .unwrap_or(0);
    for (name, server) in servers.into_iter().flatten() {
        let target = match server["url"].as_str() {
            Some(url) => inert(url),
            None if server["builtin"] == Value::Bool(true) => "built in".to_owned(),
            None => {
                let mut line = text(&server["command"]);
                for arg in server["args"].as_array().into_iter().flatten() {
                    line.push(' ');
                    line.push_str(&text(arg));
                }
                line
            }
        };
        let state = if server["enabled"] == Value::Bool(false) {
            " (disabled)"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {:<width$}  {}  tools: {}{state}\n",
            inert(name),
            target,
            text(&server["default_tools_approval_mode"]),
        ));
    }
    out
}

/// `model: gpt-5 via OpenAI (responses, https://api.openai.com/v1); OPENAI_API_KEY is set`, or
/// that there is none.
fn model_line(model: &Value) -> String {
    let text = |value: &Value| inert(value.as_str().unwrap_or_default());
    if model.is_null() {
        return "  model: none; messages are only recorded\n".to_owned();
    }
    let provider = &model["provider"];
    let key = match provider["env_key"].as_str() {
        None => "no API key is sent".to_owned(),
        Some(key) if model["api_key_set"] == Value::Bool(true) => format!("{} is set", inert(key)),
        Some(key) => format!("{} is not set", inert(key)),
    };
    format!(
        "  model: {} via {} ({}, {}); {key}\n",
        text(&model["model"]),
        text(&provider["name"]),
        text(&provider["wire_api"]),
        text(&provider["base_url"]),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_are_a_table_with_inert_text() {
        let tools = [
            json!({"name": "echo", "description": "Echoes back the input\nSecond line"}),
            json!({"name": "trigger-elicitation-request", "description": "Asks\u{1b}[2J for your name"}),
            json!({"name": "bare"}),
        ];
        assert_eq!(
            tools_table(&tools),
            "TOOL                         DESCRIPTION\n\
             echo                         Echoes back the input\n\
             trigger-elicitation-request  Asks\\u{1b}[2J for your name\n\
             bare\n\
             3 tools\n"
        );
        let long = [json!({"name": "x", "description": "d".repeat(100)})];
        assert_eq!(
            tools_table(&long),
            format!("TOOL  DESCRIPTION\nx     {}…\n1 tool\n", "d".repeat(71))
        );
    }

    #[test]
    fn a_call_shows_its_blocks_and_outcome() {
        let result = json!({
            "content": [
                {"type": "text", "text": "Hello\nAda\u{7}"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"},
                {"type": "resource_link", "name": "notes", "uri": "file:///notes.txt"},
                {"type": "resource", "resource": {"uri": "mem://a", "text": "body"}},
            ],
            "structuredContent": {"n": 1},
        });
        assert_eq!(
            call_result(&result),
            "Hello\nAda\\u{7}\n[image image/png, 4 bytes of base64]\n[link notes: file:///notes.txt]\n\
             [resource mem://a]\nbody\nStructured content:\n  {\n    \"n\": 1\n  }\n✓ The tool returned.\n"
        );
        assert_eq!(
            call_result(&json!({"content": [], "isError": true})),
            "✗ The tool reported an error.\n"
        );
    }

    #[test]
    fn the_doctor_is_a_checklist() {
        let report = json!({
            "connection": {"target": {"plugin": "node p.mjs"}, "connected": true,
                           "protocol_version": "2025-11-25", "era": "handshake"},
            "tools": [{}, {}],
            "call": null,
            "symptoms": [
                {"symptom": "A", "applies": true, "cause": "because", "action": "change it"},
                {"symptom": "B", "applies": false},
                {"symptom": "C", "applies": null},
            ],
        });
        assert_eq!(
            doctor_checklist(&report),
            "✓ Connected to node p.mjs (protocol 2025-11-25, handshake)\n✓ 2 tools listed\n\
             ✗ A\n    why: because\n    do: change it\n✓ B\n? C (a --tool call tells)\n"
        );
        let failed = json!({
            "connection": {"target": {"url": "https://x/mcp"}, "connected": false, "error": "refused",
                           "sign_in": [{"step": "sign-in", "url": "https://as", "outcome": "needs you"}]},
            "symptoms": [],
        });
        assert_eq!(
            doctor_checklist(&failed),
            "✗ Could not connect to https://x/mcp: refused\n    sign-in at https://as: needs you\n"
        );
    }

    #[test]
    fn the_codex_doctor_is_a_checklist() {
        let report = json!({
            "codex": {"command": "codex", "home": "/d/codex-doctor", "error": null},
            "server": {"name": "doc", "tools": [{"name": "a"}], "tools_error": null},
            "call": {"tool": "a", "outcome": "returned"},
            "symptoms": [{"symptom": "A", "applies": true, "cause": "because", "action": "change it"},
                         {"symptom": "B", "applies": false}],
        });
        assert_eq!(
            codex_doctor_checklist(&report),
            "✓ Codex ran (codex, CODEX_HOME /d/codex-doctor)\n✓ Codex lists 1 tools of doc\n\
             • a called through Codex: returned\n✗ A\n    why: because\n    do: change it\n✓ B\n"
        );
        let failed = json!({"codex": {"error": "codex app-server could not be started (codex): gone"},
                            "symptoms": []});
        assert_eq!(
            codex_doctor_checklist(&failed),
            "✗ Codex could not run: codex app-server could not be started (codex): gone\n"
        );
    }

    #[test]
    fn the_config_is_a_summary() {
        let report = json!({
            "approval_policy": "on-request",
            "plugin_forms": {"allowed": true, "reason": "plugin forms are shown: approval_policy = \"on-request\" allows them"},
            "forms": {"max_pending": 16},
            "approval_card": "request_user_input",
            "mcp_servers": {
                "docs": {"enabled": true, "url": "https://docs.example/mcp", "default_tools_approval_mode": "prompt"},
                "demo": {"enabled": false, "builtin": true, "args": ["demo-plugin"], "default_tools_approval_mode": "approve"},
                "local": {"enabled": true, "command": "node", "args": ["p.mjs"], "default_tools_approval_mode": "auto"},
            },
            "sources": [
                {"layer": "user", "file": "/u/formwork.toml", "applied": false, "reason": "no such file"},
                {"layer": "explicit", "file": "f.toml", "applied": true, "reason": "named with --config"},
            ],
        });
        assert_eq!(
            config_summary(&report),
            "· user /u/formwork.toml: no such file\n✓ explicit f.toml: named with --config\n\
             ✓ plugin forms are shown: approval_policy = \"on-request\" allows them\n\
             \x20 approval_policy on-request · approval card request_user_input · at most 16 forms pending\n\
             \x20 model: none; messages are only recorded\n\
             \x20 docs   https://docs.example/mcp  tools: prompt\n\
             \x20 demo   built in  tools: approve (disabled)\n\
             \x20 local  node p.mjs  tools: auto\n"
        );
    }

    #[test]
    fn the_codex_runtime_is_one_line_of_the_config() {
        let mut report =
            json!({"runtime": "codex", "codex": {"command": null, "home": "/srv/codex"}});
        assert!(
            config_summary(&report)
                .contains("  runtime: codex (`codex` on PATH; CODEX_HOME /srv/codex)\n"),
            "{}",
            config_summary(&report)
        );
        report["runtime"] = json!("formwork");
        assert!(!config_summary(&report).contains("runtime"));
    }

    #[test]
    fn the_model_is_one_line() {
        let openai = |api_key_set| {
            json!({"provider_id": "openai", "model": "gpt-5", "api_key_set": api_key_set,
                   "provider": {"name": "OpenAI", "wire_api": "responses",
                                "base_url": "https://api.openai.com/v1", "env_key": "OPENAI_API_KEY"}})
        };
        assert_eq!(
            model_line(&openai(true)),
            "  model: gpt-5 via OpenAI (responses, https://api.openai.com/v1); OPENAI_API_KEY is set\n"
        );
        assert_eq!(
            model_line(&openai(false)),
            "  model: gpt-5 via OpenAI (responses, https://api.openai.com/v1); OPENAI_API_KEY is not set\n"
        );
        let local = json!({"provider_id": "lab", "model": "qwen3\u{1b}[2J", "api_key_set": false,
                           "provider": {"name": "Lab", "wire_api": "chat",
                                        "base_url": "http://127.0.0.1:8080/v1", "env_key": null}});
        assert_eq!(
            model_line(&local),
            "  model: qwen3\\u{1b}[2J via Lab (chat, http://127.0.0.1:8080/v1); no API key is sent\n"
        );
        assert_eq!(
            model_line(&Value::Null),
            "  model: none; messages are only recorded\n"
        );
    }
}
