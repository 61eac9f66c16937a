//! Asking from a tool: one call, whichever protocol era the request came in.
//!
//! On a handshake-era session (up to 2025-11-25) [`Asker::ask`] sends `elicitation/create` (or
//! `openai/elicitation/create`) to the client and waits for the answer. On 2026-07-28 there are no
//! server-to-client requests: the first time a question is met, `ask` records it and returns
//! [`AskError::InputRequired`], the tool returns early with `?`, and [`Forms::run`] answers the
//! call with an `InputRequiredResult`. The client retries with the answer and the sealed
//! `requestState`; `run` opens the state and runs the tool again, and this time `ask` returns the
//! answer. A tool with several questions takes one round per question, or one round for all the
//! questions it asks at once.
//!
//! A question's key is a digest of what it asks, so an answer reaches only the question it was
//! given for, whatever the order of the questions or of the client's `inputResponses`.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, CustomRequest,
    ErrorData, InputRequest, InputRequiredResult, ProtocolVersion, ServerRequest,
};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::consumed::{ConsumedStates, Refusal};
use crate::schema::{Elicit, FormSchema, SchemaError};
use crate::state::{Binding, State, StateKey, now_millis};

/// The extension id of OpenAI's form elicitation.
const OPENAI_EXTENSION: &str = "openai/elicitation";

/// How a question ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask<T> {
    /// The person submitted the form, and the content fits it.
    Accepted(T),
    /// The person said no.
    Declined,
    /// The person dismissed the form without choosing.
    Cancelled,
    /// The client cannot show this form (it did not declare elicitation, or for a form with the
    /// `openai/elicitation` vocabulary, that extension's `form`). Nothing was sent: fall back to
    /// the tool's arguments.
    NotSupported,
    /// Handshake era only: the client accepted with content that does not fit the form (on
    /// 2026-07-28 the question is asked again instead). The text says what is wrong.
    Invalid(String),
}

/// Why a question has no outcome.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// 2026-07-28: the question goes to the client with this call's result. Return this error from
    /// the tool (`?` does); [`Forms::run`] turns the call into an `InputRequiredResult`.
    #[error("the question goes to the client; the tool runs again with the answer")]
    InputRequired,
    /// The type cannot be asked as a form.
    #[error("cannot ask for this type: {0}")]
    Schema(#[from] SchemaError),
    /// The elicitation request failed (the client went away, or answered with an error).
    #[error("the elicitation request failed: {0}")]
    Service(#[from] ServiceError),
}

impl From<AskError> for ErrorData {
    fn from(error: AskError) -> ErrorData {
        ErrorData::internal_error(error.to_string(), None)
    }
}

/// The plugin-wide side of asking: the key that seals `requestState`, how long it lives, and the
/// record of the states retries already presented. Clones share that record: make one `Forms` per
/// process and clone it into every handler.
#[derive(Debug, Clone)]
pub struct Forms {
    key: StateKey,
    ttl: Duration,
    consumed: Arc<Mutex<ConsumedStates>>,
}

impl Forms {
    /// How long a 2026-07-28 round's `requestState` is accepted unless [`Forms::ttl`] says
    /// otherwise.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(600);

    /// How many presented states are remembered unless [`Forms::consumed_limit`] says otherwise.
    pub const DEFAULT_CONSUMED_LIMIT: usize = 100_000;

    /// Asking with state sealed by `key`.
    pub fn new(key: StateKey) -> Forms {
        Forms {
            key,
            ttl: Forms::DEFAULT_TTL,
            consumed: Arc::new(Mutex::new(ConsumedStates::new(
                Forms::DEFAULT_CONSUMED_LIMIT,
            ))),
        }
    }

    /// Sets how long the client has to answer one round.
    pub fn ttl(mut self, ttl: Duration) -> Forms {
        self.ttl = ttl;
        self
    }

    /// Sets how many presented states are remembered at most (each record is a few dozen bytes
    /// and lasts as long as its state). Past the limit the record that expires first is dropped,
    /// and every state expiring no later than it is then refused as expired, so a replay is never
    /// accepted; a client whose state is refused that way starts the call again.
    pub fn consumed_limit(mut self, limit: usize) -> Forms {
        self.consumed = Arc::new(Mutex::new(ConsumedStates::new(limit)));
        self
    }

    /// Runs one `tools/call` with an [`Asker`]. Call it from `ServerHandler::call_tool` with the
    /// request and context rmcp passes in; `tool` is the tool's own code.
    ///
    /// On 2026-07-28 a retry's `requestState` is opened first: state that was tampered with,
    /// expired, or minted for another tool, other arguments or another principal is refused with
    /// `-32602` `"requestState is invalid or expired"`, and state that a retry already presented
    /// with `-32602` `"requestState was already used"`; either way `tool` does not run. Each
    /// state is accepted once, even when the tool then fails: a client that lost the result
    /// calls the tool again without state.
    ///
    /// Of the retry's `inputResponses` only the keys the state asked for are read; others are
    /// ignored, and a question left unanswered is asked again.
    pub async fn run<F, Fut>(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        tool: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(Asker) -> Fut,
        Fut: Future<Output = Result<CallToolResult, ErrorData>>,
    {
        self.run_for(None, request, context, tool).await
    }

    /// [`Forms::run`] for a call made by `principal` (e.g. the authenticated user): the state of
    /// its rounds opens only for that principal.
    pub async fn run_for<F, Fut>(
        &self,
        principal: Option<&str>,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        tool: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(Asker) -> Fut,
        Fut: Future<Output = Result<CallToolResult, ErrorData>>,
    {
        let version = context.protocol_version();
        let modern = version
            .as_ref()
            .is_some_and(|version| *version >= ProtocolVersion::V_2026_07_28);
        let binding = Binding {
            tool: &request.name,
            arguments: request.arguments.as_ref(),
            principal,
        };
        let mut answers = Map::new();
        if modern && let Some(text) = &request.request_state {
            let now = now_millis();
            let (id, state) = self
                .key
                .open(text, &binding, now)
                .ok_or_else(invalid_state)?;
            self.consumed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .consume(id, state.expires, now)
                .map_err(|refusal| match refusal {
                    Refusal::Consumed => {
                        ErrorData::invalid_params("requestState was already used", None)
                    }
                    Refusal::Forgotten => invalid_state(),
                })?;
            answers = state.answers;
            let responses = request.input_responses.as_ref();
            for key in state.asking {
                if let Some(answer) = responses.and_then(|responses| responses.get(&key)) {
                    answers.insert(key, answer.clone());
                }
            }
        }
        let capabilities = context
            .client_capabilities()
            .and_then(|capabilities| serde_json::to_value(capabilities).ok())
            .unwrap_or(Value::Null);
        let asker = Asker {
            round: Arc::new(Mutex::new(Round {
                asked: HashMap::new(),
                answers,
                pending: Vec::new(),
            })),
            era: if modern {
                Era::Modern
            } else {
                Era::Handshake {
                    peer: context.peer.clone(),
                }
            },
            capabilities,
        };
        let result = tool(asker.clone()).await;
        let (pending, answers) = asker.finish();
        if pending.is_empty() {
            return result.map(CallToolResponse::Complete);
        }
        let mut input_requests = BTreeMap::new();
        for (key, question) in pending {
            let input_request: InputRequest = serde_json::from_value(question.clone())
                .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
            if serde_json::to_value(&input_request).ok().as_ref() != Some(&question) {
                return Err(ErrorData::internal_error(
                    "rmcp would not send this question as written",
                    Some(question),
                ));
            }
            input_requests.insert(key, input_request);
        }
        let asking = input_requests.keys().cloned().collect();
        let state = self
            .key
            .seal(&State::new(self.ttl, asking, answers), &binding);
        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(input_requests),
            Some(state),
        )))
    }
}

fn invalid_state() -> ErrorData {
    ErrorData::invalid_params("requestState is invalid or expired", None)
}

#[derive(Debug, Clone)]
enum Era {
    Handshake { peer: Peer<RoleServer> },
    Modern,
}

#[derive(Debug)]
struct Round {
    /// How often each question (by the digest of what it asks) was asked so far in this run.
    asked: HashMap<[u8; 32], u32>,
    /// Answers (`ElicitResult` JSON) by question key.
    answers: Map<String, Value>,
    /// The questions to send with this call's result (2026-07-28), by key.
    pending: Vec<(String, Value)>,
}

impl Round {
    /// The key of `question`: `ask-` and 16 hex digits of a SHA-256 digest of the question as
    /// sent and how many identical questions this run asked before it, so the same question
    /// gets the same key in every run and an answer never reaches another question.
    fn key(&mut self, question: &Value) -> String {
        let text = serde_json::to_vec(question).unwrap_or_default();
        let earlier = self.asked.entry(Sha256::digest(&text).into()).or_insert(0);
        let digest = Sha256::new()
            .chain_update(&text)
            .chain_update(earlier.to_be_bytes())
            .finalize();
        *earlier += 1;
        let hex: String = digest[..8]
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        format!("ask-{hex}")
    }
}

/// A tool's handle for asking the person, given to it by [`Forms::run`].
#[derive(Debug, Clone)]
pub struct Asker {
    round: Arc<Mutex<Round>>,
    era: Era,
    capabilities: Value,
}

impl Asker {
    fn with_round<R>(&self, f: impl FnOnce(&mut Round) -> R) -> R {
        f(&mut self.round.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn finish(&self) -> (Vec<(String, Value)>, Map<String, Value>) {
        self.with_round(|round| {
            (
                std::mem::take(&mut round.pending),
                std::mem::take(&mut round.answers),
            )
        })
    }

    /// Asks the person to fill in a `T`, with `message` above the form.
    ///
    /// On 2026-07-28 a question's key is a digest of what it asks (the form, the message) and of
    /// how many identical questions came before it in this run, so an answer is only ever given to
    /// the question it answers: a tool that asks something else when it runs again (a message
    /// that names what changed meanwhile) gets that question asked, not an old answer. Questions
    /// asked at once (`tokio::join!`) go to the client in one round.
    pub async fn ask<T: Elicit>(&self, message: &str) -> Result<Ask<T>, AskError> {
        let form = T::form()?;
        let openai = form.uses_openai_vocabulary();
        if !can_show(&self.capabilities, openai, matches!(self.era, Era::Modern)) {
            return Ok(Ask::NotSupported);
        }
        match &self.era {
            Era::Handshake { peer } => {
                let method = if openai {
                    "openai/elicitation/create"
                } else {
                    "elicitation/create"
                };
                let params =
                    json!({"mode": "form", "message": message, "requestedSchema": form.to_value()});
                let request =
                    ServerRequest::CustomRequest(CustomRequest::new(method, Some(params)));
                let answer = match peer.send_request(request).await? {
                    ClientResult::ElicitResult(result) => {
                        serde_json::to_value(result).unwrap_or(Value::Null)
                    }
                    ClientResult::CustomResult(result) => result.0,
                    other => serde_json::to_value(other).unwrap_or(Value::Null),
                };
                Ok(read_answer(&form, &answer))
            }
            Era::Modern => {
                let params = if openai {
                    json!({
                        "mode": "form",
                        "message": message,
                        "requestedSchema": {"type": "object", "properties": {}},
                        "_meta": {OPENAI_EXTENSION: {"requestedSchema": form.to_value()}},
                    })
                } else {
                    json!({"mode": "form", "message": message, "requestedSchema": form.to_value()})
                };
                let question = json!({"method": "elicitation/create", "params": params});
                let (key, answer) = self.with_round(|round| {
                    let key = round.key(&question);
                    let answer = round.answers.get(&key).cloned();
                    (key, answer)
                });
                if let Some(answer) = answer {
                    match read_answer::<T>(&form, &answer) {
                        Ask::Invalid(_) => {
                            self.with_round(|round| round.answers.remove(&key));
                        }
                        outcome => return Ok(outcome),
                    }
                }
                self.with_round(|round| round.pending.push((key, question)));
                Err(AskError::InputRequired)
            }
        }
    }
}

/// Whether a client with `capabilities` can show a form: it declared form elicitation (`{}` counts
/// as form) and, for an OpenAI form, `extensions["openai/elicitation"].form` (on 2026-07-28 both;
/// before, the extension alone).
fn can_show(capabilities: &Value, openai: bool, modern: bool) -> bool {
    let elicitation = match capabilities.get("elicitation") {
        Some(Value::Object(modes)) => {
            modes.get("form").is_some_and(Value::is_object)
                || (!modes.contains_key("form") && !modes.contains_key("url"))
        }
        _ => false,
    };
    let extension = capabilities
        .get("extensions")
        .and_then(|extensions| extensions.get(OPENAI_EXTENSION))
        .and_then(|extension| extension.get("form"))
        .is_some_and(Value::is_object);
    match (openai, modern) {
        (false, _) => elicitation,
        (true, true) => elicitation && extension,
        (true, false) => extension,
    }
}

/// The outcome an `ElicitResult` stands for: accepted content is checked against the form by the
/// form engine, then read into `T`.
fn read_answer<T: Elicit>(form: &FormSchema, answer: &Value) -> Ask<T> {
    match answer.get("action").and_then(Value::as_str) {
        Some("decline") => Ask::Declined,
        Some("cancel") => Ask::Cancelled,
        Some("accept") => match accepted(form, answer.get("content")) {
            Ok(value) => Ask::Accepted(value),
            Err(reason) => Ask::Invalid(reason),
        },
        _ => Ask::Invalid(format!("the answer is not an elicitation result: {answer}")),
    }
}

fn accepted<T: Elicit>(form: &FormSchema, content: Option<&Value>) -> Result<T, String> {
    let empty = Value::Object(Map::new());
    let content = content.unwrap_or(&empty);
    let Some(fields) = content.as_object() else {
        return Err(format!("content is not an object: {content}"));
    };
    form.check_content(fields)?;
    serde_json::from_value(content.clone()).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::can_show;
    use serde_json::json;

    #[test]
    fn a_form_needs_the_form_mode_and_an_openai_form_the_extension() {
        let form = json!({"elicitation": {"form": {}}});
        let empty = json!({"elicitation": {}});
        let url_only = json!({"elicitation": {"url": {}}});
        let extension_only = json!({"extensions": {"openai/elicitation": {"form": {}}}});
        let both = json!({"elicitation": {}, "extensions": {"openai/elicitation": {"form": {}}}});
        for modern in [false, true] {
            assert!(can_show(&form, false, modern));
            assert!(can_show(&empty, false, modern));
            assert!(!can_show(&url_only, false, modern));
            assert!(!can_show(&json!({}), false, modern));
            assert!(!can_show(&form, true, modern));
            assert!(can_show(&both, true, modern));
        }
        // Before 2026-07-28 the extension alone is enough; on 2026-07-28 core form is needed too.
        assert!(can_show(&extension_only, true, false));
        assert!(!can_show(&extension_only, true, true));
    }
}
