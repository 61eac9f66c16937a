//! The scripted model: a small JSON file of rules that stands in for a language model in demos
//! and tests.
//!
//! ```json
//! [
//!   {"match": "(?i)deploy", "reply": "Deployed.", "call": {"server": "demo", "tool": "deploy",
//!    "arguments": {"service": "web"}}},
//!   {"match": "(?i)^hello", "reply": "Hello! Ask me to deploy."}
//! ]
//! ```
//!
//! The first rule whose `match` (a regular expression, unanchored, in the `regex` crate's
//! syntax) finds the message wins. Its `call` is issued as a tool call of the session, and its
//! `reply` is added as the assistant's message: at once when there is no call, else once the
//! call returned a result (a call that failed or was stopped gets no reply, as a stopped model
//! says nothing more). A message that matches no rule is only recorded.

use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// The rules of a scripted model, in file order.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    rules: Vec<Rule>,
}

/// One rule: a pattern, and what the model does when a message matches it.
#[derive(Debug, Clone)]
pub struct Rule {
    pattern: Regex,
    /// The assistant's reply.
    pub reply: Option<String>,
    /// The tool call to make.
    pub call: Option<ScriptedCall>,
}

/// A tool call a rule makes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The configured server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments, an object; none sends the call without arguments.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// Why a model file is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The file could not be read.
    #[error("cannot read the model file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is not a JSON array of rules.
    #[error("the model file {path} is not a list of rules: {message}")]
    Parse {
        /// The file.
        path: String,
        /// serde's message, with line and column.
        message: String,
    },
    /// One rule is wrong.
    #[error("the model file {path}, rule {index}: {message}")]
    Rule {
        /// The file.
        path: String,
        /// The rule's position, from 0.
        index: usize,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleText {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    reply: Option<String>,
    #[serde(default)]
    call: Option<ScriptedCall>,
}

impl ScriptedModel {
    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<ScriptedModel, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| ModelError::Read {
            path: path.display().to_string(),
            source,
        })?;
        ScriptedModel::from_json(&text, &path.display().to_string())
    }

    /// Parses model text; `path` names it in errors.
    pub fn from_json(text: &str, path: &str) -> Result<ScriptedModel, ModelError> {
        let rules: Vec<RuleText> = serde_json::from_str(text).map_err(|err| ModelError::Parse {
            path: path.to_owned(),
            message: err.to_string(),
        })?;
        let rule_error = |index: usize, message: String| ModelError::Rule {
            path: path.to_owned(),
            index,
            message,
        };
        let rules = rules
            .into_iter()
            .enumerate()
            .map(|(index, rule)| {
                let pattern = Regex::new(&rule.pattern)
                    .map_err(|err| rule_error(index, format!("bad `match`: {err}")))?;
                if rule.reply.is_none() && rule.call.is_none() {
                    return Err(rule_error(
                        index,
                        "needs a `reply`, a `call` or both".into(),
                    ));
                }
                if let Some(arguments) = rule.call.as_ref().and_then(|call| call.arguments.as_ref())
                    && !arguments.is_object()
                {
                    return Err(rule_error(
                        index,
                        "`call.arguments` must be an object".into(),
                    ));
                }
                Ok(Rule {
                    pattern,
                    reply: rule.reply,
                    call: rule.call,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(ScriptedModel { rules })
    }

    /// The rule that answers `message`: the first whose pattern finds it.
    pub fn respond(&self, message: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|rule| rule.pattern.is_match(message))
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }
}

impl Rule {
    /// The rule's pattern as written.
    pub fn pattern(&self) -> &str {
        self.pattern.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(text: &str) -> Result<ScriptedModel, ModelError> {
        ScriptedModel::from_json(text, "model.json")
    }

    #[test]
    fn first_match_wins() {
        let model = model(
            r#"[{"match": "(?i)deploy", "call": {"server": "demo", "tool": "deploy"}},
                {"match": "deploy|hello", "reply": "hi"}]"#,
        )
        .expect("model");
        let rule = model.respond("please DEPLOY it").expect("a rule");
        assert_eq!(
            rule.call.as_ref().map(|call| call.tool.as_str()),
            Some("deploy")
        );
        assert_eq!(
            model.respond("hello").and_then(|r| r.reply.as_deref()),
            Some("hi")
        );
        assert!(model.respond("nothing").is_none());
    }

    #[test]
    fn bad_files_name_the_rule() {
        let err = model(r#"[{"match": "("}]"#).expect_err("bad regex");
        assert!(err.to_string().contains("rule 0: bad `match`"), "{err}");
        let err = model(r#"[{"match": "x", "reply": "a"}, {"match": "y"}]"#).expect_err("empty");
        assert!(err.to_string().contains("rule 1: needs"), "{err}");
        let err =
            model(r#"[{"match": "x", "call": {"server": "a", "tool": "b", "arguments": 3}}]"#)
                .expect_err("arguments");
        assert!(err.to_string().contains("must be an object"), "{err}");
        let err = model(r#"{"match": "x"}"#).expect_err("not a list");
        assert!(err.to_string().contains("not a list of rules"), "{err}");
        let err = model(r#"[{"match": "x", "reply": "a", "extra": 1}]"#).expect_err("unknown key");
        assert!(err.to_string().contains("extra"), "{err}");
    }
}
