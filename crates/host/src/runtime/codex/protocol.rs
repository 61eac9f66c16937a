//! The part of Codex's app-server protocol (v2, as Codex 0.171.0 speaks it) that formwork
//! uses: the params it sends, and Codex's requests to the client read into what they ask.
//! Shapes that formwork passes on to the form engine stay raw JSON.

use serde_json::{Map, Value, json};

/// `mcpServer/elicitation/request`: a plugin's form (or Codex's own tool approval form).
pub const ELICITATION_REQUEST: &str = "mcpServer/elicitation/request";
/// `item/tool/requestUserInput`: questions for the person (Codex's fallback tool approval, or
/// the model's `request_user_input`).
pub const USER_INPUT_REQUEST: &str = "item/tool/requestUserInput";
/// `item/commandExecution/requestApproval`.
pub const COMMAND_APPROVAL_REQUEST: &str = "item/commandExecution/requestApproval";
/// `item/fileChange/requestApproval`.
pub const FILE_CHANGE_APPROVAL_REQUEST: &str = "item/fileChange/requestApproval";
/// `item/permissions/requestApproval`.
pub const PERMISSIONS_APPROVAL_REQUEST: &str = "item/permissions/requestApproval";

/// `_meta.codex_approval_kind` of Codex's tool approval form.
pub const TOOL_APPROVAL_KIND: &str = "mcp_tool_call";
/// The id prefix of Codex's tool approval question (`mcp_tool_call_approval_<call_id>`).
pub const TOOL_APPROVAL_QUESTION: &str = "mcp_tool_call_approval_";

/// `thread/start`'s params.
pub fn thread_start(cwd: &str, approval_policy: &Value) -> Value {
    json!({ "cwd": cwd, "approvalPolicy": approval_policy })
}

/// `thread/resume`'s params: the thread by id, without its history (formwork has the
/// transcript).
pub fn thread_resume(thread: &str, cwd: &str, approval_policy: &Value) -> Value {
    json!({
        "threadId": thread,
        "cwd": cwd,
        "approvalPolicy": approval_policy,
        "excludeTurns": true,
    })
}

/// `turn/start`'s params: one text message.
pub fn turn_start(thread: &str, text: &str, approval_policy: &Value) -> Value {
    json!({
        "threadId": thread,
        "input": [{ "type": "text", "text": text, "text_elements": [] }],
        "approvalPolicy": approval_policy,
    })
}

/// `turn/interrupt`'s params.
pub fn turn_interrupt(thread: &str, turn: &str) -> Value {
    json!({ "threadId": thread, "turnId": turn })
}

/// `mcpServer/tool/call`'s params: a tool called outside a turn (the palette).
pub fn tool_call(thread: &str, server: &str, tool: &str, arguments: &Value) -> Value {
    json!({ "threadId": thread, "server": server, "tool": tool, "arguments": arguments })
}

/// `mcpServerStatus/list`'s params for one server's tools, on a thread's own connection.
pub fn server_tools(thread: &str, server: &str) -> Value {
    json!({ "threadId": thread, "serverName": server, "detail": "toolsAndAuthOnly" })
}

/// `mcpServerStatus/list`'s params for every server's tools on a thread: answered once the
/// thread's servers are up (or failed).
pub fn all_server_tools(thread: &str) -> Value {
    json!({ "threadId": thread, "detail": "toolsAndAuthOnly" })
}

/// The servers of an `mcpServerStatus/list` answer whose tools could not be listed, and why.
pub fn tool_errors(status: &Value) -> Vec<(String, String)> {
    status
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|server| {
            let error = server.get("toolsError")?.as_str()?;
            let name = server.get("name")?.as_str()?;
            Some((name.to_owned(), error.to_owned()))
        })
        .collect()
}

/// The thread a message of Codex's concerns, when it names one.
pub fn thread_of(params: &Value) -> Option<&str> {
    params.get("threadId").and_then(Value::as_str)
}

/// A request of Codex's, read.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerRequest {
    /// A plugin's form, as MCP `elicitation/create` params (mode, message, schema or URL,
    /// `_meta`), in Codex's key order.
    Form {
        /// The plugin (Codex's name for the server).
        server: String,
        /// The turn, when Codex could tell.
        turn: Option<String>,
        /// The MCP params.
        params: Value,
    },
    /// Codex asks whether a tool call may run (`_meta.codex_approval_kind = "mcp_tool_call"`,
    /// or its fallback question).
    ToolApproval(ToolApprovalAsk),
    /// The model's own questions (`request_user_input`).
    Questions {
        /// The questions as Codex sent them.
        questions: Vec<Question>,
    },
    /// Codex asks whether a shell command may run.
    Command {
        /// The command line, when Codex says.
        command: Option<String>,
        /// Its working directory.
        cwd: Option<String>,
        /// Why it asks.
        reason: Option<String>,
    },
    /// Codex asks whether a file change may be applied.
    FileChange {
        /// Why it asks.
        reason: Option<String>,
        /// A root it asks write access for, for the session.
        grant_root: Option<String>,
    },
    /// Codex asks for more permissions (network, file system) than its sandbox gives.
    Permissions {
        /// Why it asks.
        reason: Option<String>,
        /// What it asks for, `{network, fileSystem}` as Codex wrote it.
        permissions: Value,
    },
    /// Something formwork does not serve.
    Unsupported,
}

/// A tool approval Codex asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolApprovalAsk {
    /// The server.
    pub server: String,
    /// The tool, when Codex names it.
    pub tool: Option<String>,
    /// The tool's description.
    pub tool_description: Option<String>,
    /// The call's arguments.
    pub arguments: Option<Value>,
    /// Codex offers "for this session".
    pub session: bool,
    /// Codex offers "always".
    pub always: bool,
    /// How it asked, which decides how it is answered.
    pub asked_as: ApprovalAskedAs,
    /// The question Codex wrote.
    pub message: String,
}

/// How a tool approval was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAskedAs {
    /// As an elicitation form: answered `{action, content, _meta: {persist}}`.
    Form,
    /// As a `request_user_input` question with this id: answered with a label.
    Question(String),
}

/// One question of `item/tool/requestUserInput`.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Its id, the key of its answer.
    pub id: String,
    /// A short header.
    pub header: String,
    /// The question.
    pub question: String,
    /// Free text is allowed beside the options.
    pub is_other: bool,
    /// The answer is a secret.
    pub is_secret: bool,
    /// The options (label, description), if any.
    pub options: Vec<(String, String)>,
}

/// Reads a request of Codex's.
pub fn read_request(method: &str, params: &Value) -> ServerRequest {
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    match method {
        ELICITATION_REQUEST => read_elicitation(params),
        USER_INPUT_REQUEST => read_questions(params),
        COMMAND_APPROVAL_REQUEST => ServerRequest::Command {
            command: text("command"),
            cwd: text("cwd"),
            reason: text("reason"),
        },
        FILE_CHANGE_APPROVAL_REQUEST => ServerRequest::FileChange {
            reason: text("reason"),
            grant_root: text("grantRoot"),
        },
        PERMISSIONS_APPROVAL_REQUEST => ServerRequest::Permissions {
            reason: text("reason"),
            permissions: params.get("permissions").cloned().unwrap_or(Value::Null),
        },
        _ => ServerRequest::Unsupported,
    }
}

fn read_elicitation(params: &Value) -> ServerRequest {
    let server = params
        .get("serverName")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let meta = params.get("_meta").filter(|meta| meta.is_object());
    let kind = meta
        .and_then(|meta| meta.get("codex_approval_kind"))
        .and_then(Value::as_str);
    if kind == Some(TOOL_APPROVAL_KIND) {
        let meta = meta.cloned().unwrap_or(Value::Null);
        let persist: Vec<&str> = match meta.get("persist") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        return ServerRequest::ToolApproval(ToolApprovalAsk {
            server,
            tool: meta
                .get("tool_name")
                .and_then(Value::as_str)
                .map(str::to_owned),
            tool_description: meta
                .get("tool_description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            arguments: meta.get("tool_params").cloned(),
            session: persist.contains(&"session"),
            always: persist.contains(&"always"),
            asked_as: ApprovalAskedAs::Form,
            message: params
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        });
    }
    // The MCP params are Codex's without its correlation keys; `openaiForm` is the alias
    // spelling of `openai/form`.
    let mut mcp = Map::new();
    if let Some(fields) = params.as_object() {
        for (key, value) in fields {
            match key.as_str() {
                "threadId" | "turnId" | "serverName" | "environmentId" => {}
                "_meta" if value.is_null() => {}
                "mode" if value == "openaiForm" => {
                    mcp.insert(key.clone(), json!("openai/form"));
                }
                _ => {
                    mcp.insert(key.clone(), value.clone());
                }
            }
        }
    }
    ServerRequest::Form {
        server,
        turn: params
            .get("turnId")
            .and_then(Value::as_str)
            .map(str::to_owned),
        params: Value::Object(mcp),
    }
}

fn read_questions(params: &Value) -> ServerRequest {
    let questions: Vec<Question> = params
        .get("questions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|question| {
            let text = |key: &str| {
                question
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let flag = |key: &str| question.get(key).and_then(Value::as_bool) == Some(true);
            Question {
                id: text("id"),
                header: text("header"),
                question: text("question"),
                is_other: flag("isOther"),
                is_secret: flag("isSecret"),
                options: question
                    .get("options")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|option| {
                        let text = |key: &str| {
                            option
                                .get(key)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        (text("label"), text("description"))
                    })
                    .collect(),
            }
        })
        .collect();
    // Codex's tool approval, asked as a question when `tool_call_mcp_elicitation` is off.
    if let [only] = questions.as_slice()
        && only.id.starts_with(TOOL_APPROVAL_QUESTION)
    {
        let labels: Vec<&str> = only
            .options
            .iter()
            .map(|(label, _)| label.as_str())
            .collect();
        let (server, tool) = approval_target(&only.question);
        return ServerRequest::ToolApproval(ToolApprovalAsk {
            server: server.unwrap_or_default(),
            tool,
            tool_description: None,
            arguments: None,
            session: labels.contains(&"Allow for this session"),
            always: labels.contains(&"Allow and don't ask me again"),
            asked_as: ApprovalAskedAs::Question(only.id.clone()),
            message: only.question.clone(),
        });
    }
    ServerRequest::Questions { questions }
}

/// The server and tool of Codex's question `Allow the <server> MCP server to run tool
/// "<tool>"?`.
fn approval_target(question: &str) -> (Option<String>, Option<String>) {
    let server = question
        .strip_prefix("Allow the ")
        .and_then(|rest| rest.split_once(" MCP server"))
        .map(|(server, _)| server.to_owned());
    let tool = question
        .split_once("run tool \"")
        .and_then(|(_, rest)| rest.rsplit_once('"'))
        .map(|(tool, _)| tool.to_owned());
    (server, tool)
}

/// The elicitation schema of the model's questions, for the form engine: one string field
/// per question (single choice among its options, free text with them as suggestions when
/// `isOther`), all required. The answer to each is its label or text.
pub fn questions_schema(questions: &[Question]) -> Value {
    let mut properties = Map::new();
    for question in questions {
        let mut field = Map::new();
        field.insert("type".into(), json!("string"));
        if !question.header.is_empty() {
            field.insert("title".into(), json!(question.header));
        }
        if !question.question.is_empty() {
            field.insert("description".into(), json!(question.question));
        }
        if !question.options.is_empty() {
            let options: Vec<Value> = question
                .options
                .iter()
                .map(|(label, description)| {
                    let mut option = json!({ "const": label, "title": label });
                    if !description.is_empty() {
                        option["description"] = json!(description);
                    }
                    option
                })
                .collect();
            let key = if question.is_other {
                "x-openai-suggestions"
            } else {
                "oneOf"
            };
            field.insert(key.into(), Value::Array(options));
        }
        properties.insert(question.id.clone(), Value::Object(field));
    }
    let required: Vec<&str> = questions
        .iter()
        .map(|question| question.id.as_str())
        .collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

/// `item/permissions/requestApproval`'s answer: what is granted (the permissions asked for, or
/// none), and for how long.
pub fn permissions_answer(asked: &Value, granted: bool, for_session: bool) -> Value {
    let mut permissions = Map::new();
    if granted {
        for key in ["network", "fileSystem"] {
            if let Some(value) = asked.get(key).filter(|value| !value.is_null()) {
                permissions.insert(key.to_owned(), value.clone());
            }
        }
    }
    json!({
        "permissions": permissions,
        "scope": if for_session { "session" } else { "turn" },
    })
}

/// What a permissions request asks for, in words: `network access and to write in /a`.
pub fn permissions_summary(asked: &Value) -> String {
    let mut parts = Vec::new();
    if asked
        .pointer("/network/enabled")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        parts.push("network access".to_owned());
    }
    for (key, verb) in [("read", "to read"), ("write", "to write")] {
        let paths: Vec<&str> = asked
            .pointer(&format!("/fileSystem/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !paths.is_empty() {
            parts.push(format!("{verb} in {}", paths.join(", ")));
        }
    }
    if parts.is_empty() {
        return "more permissions".to_owned();
    }
    parts.join(" and ")
}

/// The ids of the questions that ask for a secret (`isSecret`): no card may ask them, since
/// secrets never ride in forms.
pub fn secret_questions(questions: &[Question]) -> Vec<&str> {
    questions
        .iter()
        .filter(|question| question.is_secret)
        .map(|question| question.id.as_str())
        .collect()
}

/// `item/tool/requestUserInput`'s answer: each question's answer as a list of strings.
pub fn questions_answer(content: Option<&Map<String, Value>>) -> Value {
    let mut answers = Map::new();
    for (id, value) in content.into_iter().flatten() {
        let texts: Vec<Value> = match value {
            Value::String(text) => vec![json!(text)],
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .map(|text| json!(text))
                .collect(),
            Value::Null => Vec::new(),
            other => vec![json!(other.to_string())],
        };
        answers.insert(id.clone(), json!({ "answers": texts }));
    }
    json!({ "answers": answers })
}

/// `mcpServer/elicitation/request`'s answer: Codex's shape, all three keys present.
pub fn elicitation_answer(action: &str, content: Option<Value>, meta: Option<Value>) -> Value {
    json!({
        "action": action,
        "content": content.unwrap_or(Value::Null),
        "_meta": meta.unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_form_loses_codexs_correlation_keys_and_keeps_the_rest_in_order() {
        let params = json!({"threadId": "t", "turnId": "u", "serverName": "doc", "environmentId": null,
            "mode": "form", "_meta": {"zz": 1, "aa": 2}, "message": "Pick",
            "requestedSchema": {"type": "object", "properties": {}}});
        let ServerRequest::Form {
            server,
            turn,
            params,
        } = read_request(ELICITATION_REQUEST, &params)
        else {
            panic!("not a form");
        };
        assert_eq!((server.as_str(), turn.as_deref()), ("doc", Some("u")));
        assert_eq!(
            params.to_string(),
            r#"{"mode":"form","_meta":{"zz":1,"aa":2},"message":"Pick","requestedSchema":{"type":"object","properties":{}}}"#
        );
    }

    #[test]
    fn codexs_approvals_are_read_from_both_renderings() {
        let form = json!({"threadId": "t", "turnId": "u", "serverName": "doc", "mode": "form",
            "_meta": {"codex_approval_kind": "mcp_tool_call", "tool_name": "go", "persist": ["session", "always"],
                      "tool_params": {"a": 1}},
            "message": "Allow the doc MCP server to run tool \"go\"?",
            "requestedSchema": {"type": "object", "properties": {}}});
        let ServerRequest::ToolApproval(ask) = read_request(ELICITATION_REQUEST, &form) else {
            panic!("not an approval");
        };
        assert_eq!(
            (ask.tool.as_deref(), ask.session, ask.always),
            (Some("go"), true, true)
        );
        assert_eq!(ask.arguments, Some(json!({"a": 1})));
        let question = json!({"threadId": "t", "turnId": "u", "itemId": "call_1", "questions": [{
            "id": "mcp_tool_call_approval_call_1", "header": "Approve app tool call?",
            "question": "Allow the doc MCP server to run tool \"choose_strategy\"?", "isOther": false,
            "isSecret": false, "options": [{"label": "Allow", "description": "Run the tool and continue."},
            {"label": "Cancel", "description": "Cancel this tool call."}]}], "isBlocking": true});
        let ServerRequest::ToolApproval(ask) = read_request(USER_INPUT_REQUEST, &question) else {
            panic!("not an approval");
        };
        assert_eq!(ask.server, "doc");
        assert_eq!(ask.tool.as_deref(), Some("choose_strategy"));
        assert_eq!((ask.session, ask.always), (false, false));
        assert_eq!(
            ask.asked_as,
            ApprovalAskedAs::Question("mcp_tool_call_approval_call_1".to_owned())
        );
    }

    #[test]
    fn permissions_are_granted_as_asked_or_not_at_all() {
        let asked = json!({"network": {"enabled": true}, "fileSystem": null});
        assert_eq!(
            permissions_answer(&asked, true, false),
            json!({"permissions": {"network": {"enabled": true}}, "scope": "turn"})
        );
        assert_eq!(
            permissions_answer(&asked, false, true),
            json!({"permissions": {}, "scope": "session"})
        );
        let ServerRequest::Permissions { permissions, .. } = read_request(
            PERMISSIONS_APPROVAL_REQUEST,
            &json!({"threadId": "t", "permissions": asked, "reason": "fetch"}),
        ) else {
            panic!("not a permissions request");
        };
        assert_eq!(permissions, asked);
        assert_eq!(permissions_summary(&asked), "network access");
        assert_eq!(
            permissions_summary(
                &json!({"network": null, "fileSystem": {"read": null, "write": ["/a", "/b"]}})
            ),
            "to write in /a, /b"
        );
        assert_eq!(permissions_summary(&json!({})), "more permissions");
    }

    #[test]
    fn questions_become_a_schema_and_answers_lists_of_labels() {
        let questions = vec![Question {
            id: "color".into(),
            header: "Color".into(),
            question: "Which color?".into(),
            is_other: false,
            is_secret: false,
            options: vec![
                ("Red".into(), "warm".into()),
                ("Blue".into(), String::new()),
            ],
        }];
        assert_eq!(
            questions_schema(&questions),
            json!({"type": "object", "properties": {"color": {"type": "string", "title": "Color",
                "description": "Which color?", "oneOf": [{"const": "Red", "title": "Red", "description": "warm"},
                {"const": "Blue", "title": "Blue"}]}}, "required": ["color"]})
        );
        let content = json!({"color": "Red"});
        assert_eq!(
            questions_answer(content.as_object()),
            json!({"answers": {"color": {"answers": ["Red"]}}})
        );
        assert_eq!(secret_questions(&questions), Vec::<&str>::new());
        let token = Question {
            id: "token".into(),
            is_secret: true,
            ..questions[0].clone()
        };
        assert_eq!(secret_questions(&[questions[0].clone(), token]), ["token"]);
    }
}
