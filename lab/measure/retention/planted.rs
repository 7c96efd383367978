//! Planted facts: must-keep values placed into a session at the positions
//! where designs lose things, then followed by the [`Retention`](super::Retention)
//! observer to the end of the replay.

use serde::Serialize;

use crate::message::{Block, Content, Message, Role};

/// Where a fact is planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Position {
    /// A constraint appended to the first user message.
    FirstUserTurn,
    /// A value inside the first tool result past a quarter of the session.
    ToolResult,
    /// A value inside a thinking block of the first assistant message.
    Thinking,
    /// A value in a text block beside an image, in the first user message.
    BesideImage,
    /// A value inside one result of the first parallel batch (a call with ≥2 tool uses).
    ParallelBatch,
}

impl Position {
    /// Every position, in table order.
    pub const ALL: [Position; 5] = [
        Position::FirstUserTurn,
        Position::ToolResult,
        Position::Thinking,
        Position::BesideImage,
        Position::ParallelBatch,
    ];

    /// Name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Position::FirstUserTurn => "first_user_turn",
            Position::ToolResult => "tool_result",
            Position::Thinking => "thinking",
            Position::BesideImage => "beside_image",
            Position::ParallelBatch => "parallel_batch",
        }
    }

    /// The fact's verbatim text: unique, and unlike anything a session holds.
    pub fn fact(self) -> String {
        match self {
            Position::FirstUserTurn => {
                "CONSTRAINT-7Q: never edit files under vendor/ (they are generated)".into()
            }
            Position::ToolResult => "VALUE-3K: the staging port is 48213".into(),
            Position::Thinking => "VALUE-9T: the flaky test is test_retry_backoff".into(),
            Position::BesideImage => "VALUE-5M: the broken button is #checkout-submit".into(),
            Position::ParallelBatch => "VALUE-2P: the release branch is rel/2026.11".into(),
        }
    }
}

fn append_text(m: &mut Message, text: &str) {
    match &mut m.content {
        Content::Text(t) => {
            t.push('\n');
            t.push_str(text);
        }
        Content::Blocks(b) => b.push(Block::Text { text: text.into() }),
    }
}

/// Put `text` in the middle of the result of call `id` (at a line break).
fn into_result(messages: &mut [Message], id: &str, text: &str) -> bool {
    for m in messages.iter_mut() {
        for b in m.blocks_mut() {
            if let Block::ToolResult {
                tool_use_id,
                content,
            } = b
            {
                if tool_use_id == id {
                    let mid = content.len() / 2;
                    let at = content[mid..]
                        .find('\n')
                        .map_or(content.len(), |i| mid + i + 1);
                    content.insert_str(at, &format!("{text}\n"));
                    return true;
                }
            }
        }
    }
    false
}

/// `messages` with a fact planted at each position that the session has a
/// place for; returns the session and the `(label, fact)` pairs planted.
pub fn plant(
    messages: &[Message],
    positions: &[Position],
) -> (Vec<Message>, Vec<(String, String)>) {
    let mut out = messages.to_vec();
    let mut planted = Vec::new();
    for &p in positions {
        if plant_one(&mut out, p) {
            planted.push((p.name().to_string(), p.fact()));
        }
    }
    (out, planted)
}

fn plant_one(out: &mut [Message], p: Position) -> bool {
    let fact = p.fact();
    let first_user = out
        .iter()
        .position(|m| m.role == Role::User && !m.is_tool_result());
    match p {
        Position::FirstUserTurn => first_user.is_some_and(|i| {
            append_text(&mut out[i], &fact);
            true
        }),
        Position::BesideImage => first_user.is_some_and(|i| {
            let m = &mut out[i];
            if let Content::Text(t) = &m.content {
                m.content = Content::Blocks(vec![Block::Text { text: t.clone() }]);
            }
            if let Content::Blocks(b) = &mut m.content {
                b.push(Block::Image {
                    source: "image/png".into(),
                });
                b.push(Block::Text { text: fact });
            }
            true
        }),
        Position::Thinking => match out.iter().position(|m| m.role == Role::Assistant) {
            Some(i) => {
                if let Content::Blocks(b) = &mut out[i].content {
                    b.insert(0, Block::Thinking { thinking: fact });
                    return true;
                }
                false
            }
            None => false,
        },
        Position::ToolResult => {
            let ids: Vec<String> = out
                .iter()
                .flat_map(|m| m.tool_use_ids())
                .map(str::to_string)
                .collect();
            match ids.get(ids.len() / 4) {
                Some(id) => into_result(out, &id.clone(), &fact),
                None => false,
            }
        }
        Position::ParallelBatch => {
            let id = out
                .iter()
                .map(|m| m.tool_use_ids())
                .find(|ids| ids.len() >= 2)
                .map(|ids| ids[1].to_string());
            id.is_some_and(|id| into_result(out, &id, &fact))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_position_lands_where_it_says() {
        let s = vec![
            Message::user_text("task"),
            Message::assistant(vec![
                Block::ToolUse {
                    id: "a".into(),
                    name: "x".into(),
                    input: json!({}).into(),
                },
                Block::ToolUse {
                    id: "b".into(),
                    name: "x".into(),
                    input: json!({}).into(),
                },
            ]),
            Message::tool_results(vec![
                ("a".into(), "1\n2\n".into()),
                ("b".into(), "3\n4\n".into()),
            ]),
        ];
        let (out, planted) = plant(&s, &Position::ALL);
        assert_eq!(planted.len(), 5);
        let first = serde_json::to_string(&out[0]).unwrap();
        assert!(first.contains("CONSTRAINT-7Q") && first.contains("image/png"));
        assert!(matches!(out[1].blocks()[0], Block::Thinking { .. }));
        let results = crate::retention::request_text(&out[2..]);
        assert!(
            results.contains("VALUE-3K") && results.contains("VALUE-2P"),
            "{results}"
        );
        // A session without a parallel batch has no place for that fact.
        let (_, planted) = plant(&s[..1], &[Position::ParallelBatch]);
        assert!(planted.is_empty());
    }
}
