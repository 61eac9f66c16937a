//! The conversation as the model knows it.

use serde::{Deserialize, Serialize};

/// One entry of the model's conversation. Stored as JSON, in order, per session, so that a
/// conversation continues after a restart and with either wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Item {
    /// A message the person sent.
    User { text: String },
    /// Text the model answered.
    Assistant { text: String },
    /// A function call the model made; `arguments` is the JSON text as the model sent it.
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// What the model is told a call gave.
    Output { call_id: String, output: String },
}

/// `items` with an output for every call that has none (a turn stopped, or a host that stopped,
/// before the call ended): both wires refuse a call without its output.
pub(crate) fn repaired(items: &[Item]) -> Vec<Item> {
    let answered: std::collections::HashSet<&str> = items
        .iter()
        .filter_map(|item| match item {
            Item::Output { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(items.len());
    let mut missing = Vec::new();
    for (index, item) in items.iter().enumerate() {
        out.push(item.clone());
        if let Item::Call { call_id, .. } = item
            && !answered.contains(call_id.as_str())
        {
            missing.push(call_id.clone());
        }
        let next_is_call = matches!(items.get(index + 1), Some(Item::Call { .. }));
        if !next_is_call {
            for call_id in missing.drain(..) {
                out.push(Item::Output {
                    call_id,
                    output: "This call did not finish: the turn ended before it did.".to_owned(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> Item {
        Item::Call {
            call_id: id.into(),
            name: "demo__ask".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn a_call_without_output_gets_one_after_its_group() {
        let items = vec![
            Item::User { text: "hi".into() },
            call("c1"),
            call("c2"),
            Item::Output {
                call_id: "c2".into(),
                output: "ok".into(),
            },
            Item::User {
                text: "again".into(),
            },
        ];
        let fixed = repaired(&items);
        assert_eq!(fixed.len(), 6);
        assert_eq!(
            fixed[3],
            Item::Output {
                call_id: "c1".into(),
                output: "This call did not finish: the turn ended before it did.".into()
            }
        );
        assert_eq!(repaired(&fixed), fixed);
    }
}
