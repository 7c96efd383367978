//! The checker's view of an archived transcript: only the texts it scans for
//! pointers and fingerprints, borrowed from the file's bytes.
//!
//! Parsing every archived line into [`Message`]s copied every string of
//! every archive (the course archives the whole context on each snip) and
//! buffered each block to find its `type` tag; that was a fifth of an oracle
//! cell. [`for_each_archived_text`] reads one line into a flat, borrowed view
//! instead and visits the same texts, in the same order, that
//! [`for_each_text`] visits on the parsed message. A line the view cannot
//! vouch for (any shape it does not know to be a valid message) is parsed as
//! a [`Message`] after all, so a line is used exactly when it parses as one.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use crate::message::{for_each_text, Message, Role, Thinking};

/// Any JSON value, noting only that one was there (a present `null` counts,
/// as it does for [`crate::message::Block::ToolUse`]'s `input`).
#[derive(Default)]
struct Seen(bool);

impl<'de> Deserialize<'de> for Seen {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Seen(true))
    }
}

/// A JSON string, borrowed from the line when it has no escapes. (serde's
/// own `Cow<str>` borrows only as a bare field, never inside an `Option`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// One content block, every variant's fields side by side.
#[derive(Deserialize)]
struct BlockView<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(default, borrow)]
    text: Option<Text<'a>>,
    #[serde(default, borrow)]
    tool_use_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    content: Option<Text<'a>>,
    #[serde(default, borrow)]
    thinking: Option<Text<'a>>,
    #[serde(default, borrow)]
    id: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default)]
    input: Seen,
    #[serde(default, borrow)]
    source: Option<Text<'a>>,
}

impl BlockView<'_> {
    /// Would [`crate::message::Block`] accept this block? Every field its
    /// variant requires is present (as a string here; a field of another
    /// variant is ignored by the block, so the view is only stricter).
    fn is_valid(&self) -> bool {
        match &*self.kind {
            "text" => self.text.is_some(),
            "tool_use" => self.id.is_some() && self.name.is_some() && self.input.0,
            "tool_result" => self.tool_use_id.is_some() && self.content.is_some(),
            "thinking" => self.thinking.is_some(),
            "image" => self.source.is_some(),
            _ => false,
        }
    }
}

/// Message content: a string or a list of blocks.
enum ContentView<'a> {
    Text(Text<'a>),
    Blocks(Vec<BlockView<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentView<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ContentView<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ContentView::Text(Text(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ContentView::Text(Text(Cow::Owned(v.to_string()))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(4));
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(ContentView::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

/// One archived line as the view reads it.
#[derive(Deserialize)]
struct MessageView<'a> {
    #[allow(dead_code)] // Parsed so that a line with a bad role is refused, as by `Message`.
    role: Role,
    #[serde(borrow)]
    content: ContentView<'a>,
}

/// Visit the texts of one archived JSONL line as [`for_each_text`] with
/// [`Thinking::Skip`] visits those of the message it parses to; a line that
/// is not a message visits nothing.
pub fn for_each_archived_text(line: &str, mut f: impl FnMut(Option<&str>, &str)) {
    let view = serde_json::from_str::<MessageView>(line)
        .ok()
        .filter(|v| match &v.content {
            ContentView::Text(_) => true,
            ContentView::Blocks(b) => b.iter().all(BlockView::is_valid),
        });
    let Some(view) = view else {
        // Not a shape the view vouches for: the full parse decides.
        if let Ok(m) = serde_json::from_str::<Message>(line) {
            for_each_text(std::slice::from_ref(&m), Thinking::Skip, f);
        }
        return;
    };
    match &view.content {
        ContentView::Text(t) => f(None, &t.0),
        ContentView::Blocks(blocks) => {
            for b in blocks {
                match &*b.kind {
                    "text" => f(None, b.text.as_deref().unwrap_or_default()),
                    "tool_result" => f(
                        b.tool_use_id.as_deref(),
                        b.content.as_deref().unwrap_or_default(),
                    ),
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Block;
    use proptest::prelude::*;

    /// The texts of a line as the full parse visits them.
    fn by_parsing(line: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        if let Ok(m) = serde_json::from_str::<Message>(line) {
            for_each_text(std::slice::from_ref(&m), Thinking::Skip, |id, t| {
                out.push((id.map(str::to_string), t.to_string()))
            });
        }
        out
    }

    fn by_view(line: &str) -> Vec<(Option<String>, String)> {
        let mut out = Vec::new();
        for_each_archived_text(line, |id, t| {
            out.push((id.map(str::to_string), t.to_string()))
        });
        out
    }

    #[test]
    fn odd_lines_agree_with_the_full_parse() {
        let lines = [
            r#"{"role": "user", "content": "a \"quoted\" \n text"}"#,
            r#"{"role": "system", "content": "x"}"#,
            r#"{"role": "user", "content": 3}"#,
            r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": null}]}"#,
            r#"{"role": "user", "content": [{"type": "text", "text": "a", "content": 5}]}"#,
            r#"{"role": "user", "content": [{"type": "text", "text": "a", "content": "x", "content": "y"}]}"#,
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n"}]}"#,
            r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": null}, {"type": "text", "text": "b"}]}"#,
            r#"{"role": "user", "content": [{"type": "video", "text": "a"}]}"#,
            r#"{"role": "user", "content": [{"type": "thinking", "thinking": "hm"}, {"type": "image", "source": "png"}]}"#,
            r#"{"content": "no role", "role": "user", "extra": [1, {"a": 2}]}"#,
            "not json",
            "",
        ];
        for line in lines {
            assert_eq!(by_view(line), by_parsing(line), "{line}");
        }
    }

    fn block() -> impl Strategy<Value = Block> {
        let s = "(?s).{0,12}";
        prop_oneof![
            s.prop_map(|text| Block::Text { text }),
            (s, s).prop_map(|(id, name)| Block::ToolUse {
                id,
                name,
                input: serde_json::json!({"k": [1, null]}),
            }),
            (s, s).prop_map(|(tool_use_id, content)| Block::ToolResult {
                tool_use_id,
                content,
            }),
            s.prop_map(|thinking| Block::Thinking { thinking }),
            s.prop_map(|source| Block::Image { source }),
        ]
    }

    proptest! {
        #[test]
        fn written_lines_read_as_the_parsed_message(
            text in proptest::option::of("(?s).{0,12}"),
            blocks in proptest::collection::vec(block(), 0..5),
            user in any::<bool>(),
        ) {
            let m = match text {
                Some(t) => Message::user_text(t),
                None if user => Message { role: Role::User, ..Message::assistant(blocks) },
                None => Message::assistant(blocks),
            };
            let line = crate::pyjson::dumps(&m);
            prop_assert_eq!(by_view(&line), by_parsing(&line));
        }
    }
}
