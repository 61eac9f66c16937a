//! Plugin tools as function tools. A provider accepts names of `[A-Za-z0-9_-]`, 64 bytes at
//! most; a tool is offered as `<server>__<tool>` with any other character turned into `_`. When
//! two tools come out the same, or a name is too long, each such name is cut and ends in `_`
//! and 12 hex digits of a SHA-256 of the server and tool, so it stays unique and stable.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

const MAX_NAME: usize = 64;
const HASH_DIGITS: usize = 12;

/// A tool as the model is offered it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FunctionTool {
    pub name: String,
    pub description: Option<String>,
    /// The tool's `inputSchema`, always an object schema with `properties`.
    pub parameters: Value,
}

/// The tools of one request, and where each name leads.
#[derive(Debug, Default)]
pub(crate) struct FunctionNames {
    pub tools: Vec<FunctionTool>,
    targets: HashMap<String, (String, String)>,
}

impl FunctionNames {
    /// `listed`: each server's name with one tool of its `tools/list`, in the order offered.
    pub(crate) fn new(listed: &[(String, Value)]) -> FunctionNames {
        let plain: Vec<(String, String, String)> = listed
            .iter()
            .filter_map(|(server, tool)| {
                let name = tool.get("name")?.as_str()?;
                Some((
                    server.clone(),
                    name.to_owned(),
                    format!("{}__{}", sanitized(server), sanitized(name)),
                ))
            })
            .collect();
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for (_, _, name) in &plain {
            *counts.entry(name.as_str()).or_default() += 1;
        }
        let mut names = FunctionNames::default();
        for ((server, tool, name), (_, listing)) in plain.iter().zip(listed) {
            let clash = counts.get(name.as_str()).copied().unwrap_or(0) > 1;
            let name = if clash || name.len() > MAX_NAME {
                hashed(name, server, tool)
            } else {
                name.clone()
            };
            if names.targets.contains_key(&name) {
                // The same tool listed twice: offer it once.
                continue;
            }
            names
                .targets
                .insert(name.clone(), (server.clone(), tool.clone()));
            names.tools.push(FunctionTool {
                name,
                description: listing
                    .get("description")
                    .or_else(|| listing.get("title"))
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                parameters: parameters(listing.get("inputSchema")),
            });
        }
        names
    }

    /// The server and tool a function name stands for.
    pub(crate) fn target(&self, name: &str) -> Option<(&str, &str)> {
        self.targets
            .get(name)
            .map(|(server, tool)| (server.as_str(), tool.as_str()))
    }
}

fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn hashed(name: &str, server: &str, tool: &str) -> String {
    let mut digest = Sha256::new();
    digest.update(server.as_bytes());
    digest.update([0]);
    digest.update(tool.as_bytes());
    let hex: String = digest
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let keep = MAX_NAME - HASH_DIGITS - 1;
    // The name is ASCII by now, so any byte is a boundary.
    let head = &name[..name.len().min(keep)];
    format!("{head}_{}", &hex[..HASH_DIGITS])
}

/// An object schema for the model: the tool's own, with `type` and `properties` when missing.
fn parameters(schema: Option<&Value>) -> Value {
    let mut schema = match schema {
        Some(Value::Object(schema)) => schema.clone(),
        _ => Map::new(),
    };
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    schema.entry("properties").or_insert_with(|| json!({}));
    Value::Object(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(pairs: &[(&str, &str)]) -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(server, tool)| ((*server).to_owned(), json!({ "name": tool })))
            .collect()
    }

    #[test]
    fn names_are_valid_unique_and_map_back() {
        let long = "t".repeat(70);
        let names = FunctionNames::new(&listed(&[
            ("demo", "echo.tool"),
            ("demo", "echo_tool"),
            ("my server", "ask"),
            ("demo", &long),
        ]));
        let got: Vec<&str> = names.tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(got[2], "my_server__ask");
        assert!(
            got[0].starts_with("demo__echo_tool_") && got[0].len() == 28,
            "{got:?}"
        );
        assert!(got[1].starts_with("demo__echo_tool_") && got[0] != got[1]);
        assert_eq!(got[3].len(), 64);
        for name in &got {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            );
        }
        assert_eq!(names.target(got[0]), Some(("demo", "echo.tool")));
        assert_eq!(names.target(got[1]), Some(("demo", "echo_tool")));
        assert_eq!(names.target(got[3]), Some(("demo", long.as_str())));
        assert_eq!(names.target("demo__nothing"), None);
        // Stable: the same tools get the same names.
        let again = FunctionNames::new(&listed(&[("demo", "echo.tool"), ("demo", "echo_tool")]));
        assert_eq!(again.tools[0].name, got[0]);
    }

    #[test]
    fn a_schema_without_properties_gets_them() {
        assert_eq!(
            parameters(None),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            parameters(Some(&json!({"type": "object", "required": ["a"]}))),
            json!({"type": "object", "required": ["a"], "properties": {}})
        );
    }
}
