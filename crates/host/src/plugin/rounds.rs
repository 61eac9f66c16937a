//! The 2026-07-28 round driver: a `tools/call`, `prompts/get` or `resources/read` that answers
//! `resultType: "input_required"` has its `inputRequests` answered (each form through the same
//! responder as a pushed `elicitation/create`), then is sent again under a new id with the same
//! params, `inputResponses` for every key and `requestState` echoed as it came.

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{ServedRequest, Shared, elicitation};
use crate::HostError;
use crate::jsonrpc::RawId;

/// The most `input_required` answers one request may get; the next one fails it.
pub const MAX_ROUNDS: u32 = 10;

/// The pause before retrying a result that carried only `requestState` (the plugin asked the
/// host to come back, e.g. while it sheds load): it doubles from the first to the last.
const STATE_ONLY_PAUSE_FIRST: Duration = Duration::from_millis(50);
const STATE_ONLY_PAUSE_MAX: Duration = Duration::from_millis(250);

/// The methods whose results may be `input_required`.
pub(crate) fn may_ask(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// One `input_required` answer, as the host starts serving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputRound {
    /// 1 for the first `input_required` answer of the request, and so on.
    pub round: u32,
    /// The keys of `inputRequests`, in the plugin's order.
    pub keys: Vec<String>,
    /// The `requestState` the answer carried, as the plugin sent it.
    pub state: Option<String>,
}

/// Where a call carried on from the store starts again (another replica began it): the retry of
/// the round it had reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    /// The round whose answers the retry sends.
    pub round: u32,
    /// Its `inputResponses`, by key; `None` after a round that carried only `requestState`.
    pub responses: Option<Map<String, Value>>,
    /// Its `requestState`, exactly as stored.
    pub state: Option<String>,
}

/// Told of each round before its forms are shown (the session records it).
pub type RoundObserver<'a> = &'a (dyn Fn(&InputRound) + Send + Sync);

/// What one result asks of the host.
enum Outcome {
    Complete,
    InputRequired {
        requests: Vec<(String, Value)>,
        state: Option<String>,
    },
}

/// What a retry carries besides the params: the answers (none after a `requestState`-only
/// result) and the state.
type Retry = (Option<Map<String, Value>>, Option<String>);

/// Sends `method` under `first_id` (or, from `resume`, its retry) and serves its rounds until a
/// result is complete.
pub(super) async fn drive(
    shared: &Shared,
    first_id: u64,
    method: &str,
    params: Value,
    on_round: RoundObserver<'_>,
    resume: Option<Resume>,
) -> Result<Value, HostError> {
    let invalid = |reason: RoundError| HostError::InvalidResponse {
        method: method.to_owned(),
        reason: reason.to_string(),
    };
    let mut id = first_id;
    let mut round = resume.as_ref().map_or(0, |resume| resume.round);
    let mut retry: Option<Retry> = resume.map(|resume| (resume.responses, resume.state));
    let mut pause = STATE_ONLY_PAUSE_FIRST;
    loop {
        round += 1;
        let mut sent = params.clone();
        if let (Some((responses, state)), Value::Object(sent)) = (retry.take(), &mut sent) {
            if let Some(responses) = responses {
                sent.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = state {
                sent.insert("requestState".into(), Value::String(state));
            }
        }
        let mut result = shared.request_with_id(id, method, Some(sent)).await?;
        let (requests, state) = match read_outcome(&mut result).map_err(invalid)? {
            Outcome::Complete => return Ok(result),
            Outcome::InputRequired { .. } if !may_ask(method) => {
                return Err(invalid(RoundError::MayNotAsk {
                    method: method.to_owned(),
                }));
            }
            Outcome::InputRequired { .. } if round > MAX_ROUNDS => {
                return Err(invalid(RoundError::TooManyRounds));
            }
            Outcome::InputRequired { requests, state } => (requests, state),
        };
        on_round(&InputRound {
            round,
            keys: requests.iter().map(|(key, _)| key.clone()).collect(),
            state: state.clone(),
        });
        let responses = if requests.is_empty() {
            // Only `requestState`: the plugin asks to be called again, after a pause.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(STATE_ONLY_PAUSE_MAX);
            None
        } else {
            pause = STATE_ONLY_PAUSE_FIRST;
            let answers = requests
                .iter()
                .map(|(key, request)| answer(shared, first_id, key, request));
            let answers = futures::future::join_all(answers).await;
            let mut responses = Map::new();
            for ((key, _), answer) in requests.into_iter().zip(answers) {
                responses.insert(key, answer.map_err(invalid)?);
            }
            Some(responses)
        };
        retry = Some((responses, state));
        id = shared.next_id();
    }
}

/// Why a round cannot go on: its result, or one of the requests in it, is not one formwork
/// can carry out.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(
        "the plugin answered `{method}` with `input_required`, which only tools/call, prompts/get and resources/read may do"
    )]
    MayNotAsk { method: String },
    #[error(
        "the plugin still asked for input after {MAX_ROUNDS} rounds; formwork stopped retrying"
    )]
    TooManyRounds,
    /// The type, clipped.
    #[error("the result type `{0}` is not one formwork handles")]
    UnknownResultType(String),
    #[error("`resultType` must be a string, not {0}")]
    ResultTypeNotString(Value),
    #[error("`requestState` must be a string")]
    StateNotString,
    #[error("`inputRequests` must be an object")]
    RequestsNotObject,
    #[error("an `input_required` result needs `inputRequests` or `requestState`")]
    NothingAsked,
    #[error("{place} has no `method`")]
    NoMethod { place: String },
    #[error(
        "{place} asks for `{method}`, which formwork does not offer (it declares no {capability} capability)"
    )]
    NotOffered {
        place: String,
        method: String,
        capability: &'static str,
    },
    /// The method, clipped.
    #[error("{place} asks for `{method}`, which formwork does not know")]
    UnknownMethod { place: String, method: String },
    #[error("{place}: {reason}")]
    Failed { place: String, reason: String },
}

/// Reads `resultType` (absent means `complete`) and, for `input_required`, what is asked.
fn read_outcome(result: &mut Value) -> Result<Outcome, RoundError> {
    let Some(object) = result.as_object_mut() else {
        return Ok(Outcome::Complete);
    };
    match object.get("resultType") {
        None => return Ok(Outcome::Complete),
        Some(Value::String(kind)) if kind == "complete" => return Ok(Outcome::Complete),
        Some(Value::String(kind)) if kind == "input_required" => {}
        Some(Value::String(kind)) => {
            return Err(RoundError::UnknownResultType(
                crate::budget::clipped(kind).to_string(),
            ));
        }
        Some(other) => return Err(RoundError::ResultTypeNotString(other.clone())),
    }
    let state = match object.remove("requestState") {
        None => None,
        Some(Value::String(state)) => Some(state),
        Some(_) => return Err(RoundError::StateNotString),
    };
    let requests = match object.remove("inputRequests") {
        None => None,
        Some(Value::Object(requests)) => Some(requests.into_iter().collect::<Vec<_>>()),
        Some(_) => return Err(RoundError::RequestsNotObject),
    };
    if requests.is_none() && state.is_none() {
        return Err(RoundError::NothingAsked);
    }
    Ok(Outcome::InputRequired {
        requests: requests.unwrap_or_default(),
        state,
    })
}

/// The answer to one entry of `inputRequests`. Forms go through the connection's responder,
/// exactly as a pushed `elicitation/create` would; what formwork does not offer (sampling,
/// roots: it declares neither) or cannot read fails the request.
async fn answer(
    shared: &Shared,
    call: u64,
    key: &str,
    request: &Value,
) -> Result<Value, RoundError> {
    let place = format!("inputRequests[{}]", Value::from(key));
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return Err(RoundError::NoMethod { place });
    };
    match method {
        "elicitation/create" => {}
        "sampling/createMessage" | "roots/list" => {
            return Err(RoundError::NotOffered {
                place,
                method: method.to_owned(),
                capability: if method == "roots/list" {
                    "roots"
                } else {
                    "sampling"
                },
            });
        }
        other => {
            return Err(RoundError::UnknownMethod {
                place,
                method: crate::budget::clipped(other).to_string(),
            });
        }
    }
    let params = match request
        .get("params")
        .map(|params| RawValue::from_string(params.to_string()))
        .transpose()
    {
        Ok(params) => params,
        Err(err) => {
            return Err(RoundError::Failed {
                place,
                reason: err.to_string(),
            });
        }
    };
    let id = RawId::string(key);
    let observed = shared
        .on_request
        .as_ref()
        .map(|_| request.get("params").cloned());
    let cancelled = shared.closed.child_token();
    let answer =
        elicitation::handle(shared, &id, method, params, Some(call), cancelled.clone()).await;
    if let (Some(observer), Some(params)) = (&shared.on_request, observed) {
        observer(&ServedRequest {
            id: Value::from(key),
            method: method.to_owned(),
            params,
            answer: (!cancelled.is_cancelled()).then(|| answer.result.clone()),
            on_call_stream: true,
        });
    }
    answer.result.map_err(|error| RoundError::Failed {
        place,
        reason: error.message,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn outcome(result: Value) -> Result<(Vec<String>, Option<String>), String> {
        let mut result = result;
        match read_outcome(&mut result).map_err(|err| err.to_string())? {
            Outcome::Complete => Ok((vec!["<complete>".to_owned()], None)),
            Outcome::InputRequired { requests, state } => {
                Ok((requests.into_iter().map(|(key, _)| key).collect(), state))
            }
        }
    }

    #[test]
    fn a_missing_result_type_is_complete() {
        assert_eq!(outcome(json!({"content": []})).unwrap().0, ["<complete>"]);
        assert_eq!(
            outcome(json!({"resultType": "complete"})).unwrap().0,
            ["<complete>"]
        );
    }

    #[test]
    fn input_required_keeps_the_keys_in_order_and_the_state_as_sent() {
        let (keys, state) = outcome(json!({
            "resultType": "input_required",
            "inputRequests": {"zeta": {}, "alpha": {}},
            "requestState": "s\u{e9}\"1",
        }))
        .unwrap();
        assert_eq!(keys, ["zeta", "alpha"]);
        assert_eq!(state.as_deref(), Some("s\u{e9}\"1"));
        assert_eq!(
            outcome(json!({"resultType": "input_required", "requestState": "x"}))
                .unwrap()
                .0,
            Vec::<String>::new()
        );
    }

    #[test]
    fn malformed_input_required_results_are_errors() {
        for (result, expected) in [
            (
                json!({"resultType": "input_required"}),
                "an `input_required` result needs `inputRequests` or `requestState`",
            ),
            (
                json!({"resultType": "input_required", "inputRequests": []}),
                "`inputRequests` must be an object",
            ),
            (
                json!({"resultType": "input_required", "requestState": 7}),
                "`requestState` must be a string",
            ),
            (
                json!({"resultType": "task"}),
                "the result type `task` is not one formwork handles",
            ),
            (
                json!({"resultType": 1}),
                "`resultType` must be a string, not 1",
            ),
        ] {
            assert_eq!(outcome(result).unwrap_err(), expected);
        }
    }
}
