//! The message model, in Anthropic Messages shape.
//!
//! A request is a list of [`Message`]s; content is either a plain string or a
//! list of [`Block`]s. Tool results carry their text as a plain string: the lab
//! measures what a compaction design does to that text, so richer result
//! shapes are flattened by the importers before they reach the pipeline.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};

/// Who sent a message. Tool results travel in `user` messages, as in the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or the harness speaking for tools.
    User,
    /// The model.
    Assistant,
}

/// One content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call by the model.
    ToolUse {
        /// Call id, answered by exactly one `tool_result`.
        id: String,
        /// Tool name.
        name: String,
        /// Tool input (any JSON).
        #[schemars(with = "serde_json::Value")]
        input: ToolInput,
    },
    /// The harness's answer to a tool call.
    ToolResult {
        /// The `tool_use` id this answers.
        tool_use_id: String,
        /// The result text (what compaction persists, snips and shortens).
        content: String,
    },
    /// Model reasoning, kept as its own kind so replays do not mistake it for text.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// An image, kept by reference only (its bytes are never needed by the lab).
    Image {
        /// Media type or a short description of the source.
        source: String,
    },
    /// Content the product sent with this message that its log does not
    /// keep (a Claude Code attachment: an @-mentioned file, a changed file's
    /// diff), known only by its size: every counter counts it as `tokens`.
    /// Replays add it where recorded usage shows it (`replay::unlogged`);
    /// it travels with its message and goes when a policy drops that.
    Unlogged {
        /// What the product attached, as the lab inferred it.
        what: String,
        /// Its size in the run's counter's tokens, sized from recorded usage.
        tokens: usize,
    },
}

/// A tool call's input (any JSON), shared between the copies of a history
/// and carrying its sizes once counted.
///
/// Policies copy their history and count it whole at every call; a tool
/// input is a tree of maps and strings, so copying and measuring it was
/// most of that work although inputs almost never change. Copies share one
/// value (a reference count), and the two character counts the lab asks of
/// an input ([`ToolInput::compact_chars`], [`ToolInput::python_chars`]) are
/// computed at most once per value. Every mutable access goes through
/// [`ToolInput::make_mut`] (also behind `DerefMut`), which un-shares the
/// value and forgets its counts, so a stale count cannot be read.
/// Serialises, compares and prints exactly as the value does.
#[derive(Clone, Default)]
pub struct ToolInput(Arc<Input>);

/// The value behind a [`ToolInput`] and its counts, filled on first use.
#[derive(Clone, Default)]
struct Input {
    value: serde_json::Value,
    compact: OnceLock<usize>,
    python: OnceLock<usize>,
}

impl ToolInput {
    /// An input holding `value`.
    pub fn new(value: serde_json::Value) -> Self {
        ToolInput(Arc::new(Input {
            value,
            compact: OnceLock::new(),
            python: OnceLock::new(),
        }))
    }

    /// The JSON value.
    pub fn value(&self) -> &serde_json::Value {
        &self.0.value
    }

    /// The value, editable: un-shared from other copies first, its
    /// remembered counts forgotten.
    pub fn make_mut(&mut self) -> &mut serde_json::Value {
        let input = Arc::make_mut(&mut self.0);
        input.compact = OnceLock::new();
        input.python = OnceLock::new();
        &mut input.value
    }

    /// The value, taken out (copied if shared).
    pub fn into_value(self) -> serde_json::Value {
        match Arc::try_unwrap(self.0) {
            Ok(input) => input.value,
            Err(shared) => shared.value.clone(),
        }
    }

    /// Characters of `value.to_string()` (serde_json's compact text, as
    /// the API receives it), counted once per value.
    pub fn compact_chars(&self) -> usize {
        *self
            .0
            .compact
            .get_or_init(|| compact_json_chars(&self.0.value))
    }

    /// Characters of `json.dumps(value, ensure_ascii=False)`
    /// ([`python_json_chars`]), counted once per value.
    pub fn python_chars(&self) -> usize {
        *self
            .0
            .python
            .get_or_init(|| python_json_chars(&self.0.value))
    }
}

impl From<serde_json::Value> for ToolInput {
    fn from(value: serde_json::Value) -> Self {
        ToolInput::new(value)
    }
}

impl std::ops::Deref for ToolInput {
    type Target = serde_json::Value;
    fn deref(&self) -> &serde_json::Value {
        &self.0.value
    }
}

impl std::ops::DerefMut for ToolInput {
    fn deref_mut(&mut self) -> &mut serde_json::Value {
        self.make_mut()
    }
}

impl PartialEq for ToolInput {
    fn eq(&self, other: &Self) -> bool {
        // Copies of one history share their inputs: the pointer settles
        // most comparisons without walking the trees.
        Arc::ptr_eq(&self.0, &other.0) || self.0.value == other.0.value
    }
}

impl PartialEq<serde_json::Value> for ToolInput {
    fn eq(&self, other: &serde_json::Value) -> bool {
        self.0.value == *other
    }
}

impl std::fmt::Debug for ToolInput {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl std::fmt::Display for ToolInput {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for ToolInput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(ToolInput::new)
    }
}

/// Characters of `value.to_string()`, counted as serde_json writes them
/// (the UTF-8 bytes that start a character), with no string built.
pub fn compact_json_chars(value: &serde_json::Value) -> usize {
    struct Chars(usize);
    impl std::io::Write for Chars {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.iter().filter(|&&b| (b as i8) >= -0x40).count();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut chars = Chars(0);
    // Writing to a counter cannot fail, and a `Value` always serialises.
    let _ = serde_json::to_writer(&mut chars, value);
    chars.0
}

/// Message content: a plain string or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Content {
    /// A plain string (user prompts, markers, summaries).
    Text(String),
    /// Structured blocks.
    Blocks(Vec<Block>),
}

// By hand instead of `#[serde(untagged)]`: untagged buffers the whole
// content (every result string copied once more) before trying each variant,
// which was a seventh of the checker's cost reading archived transcripts.
impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content::Text(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content::Text(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(b) = seq.next_element()? {
                    blocks.push(b);
                }
                Ok(Content::Blocks(blocks))
            }
        }
        d.deserialize_any(V)
    }
}

/// One message of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// Sender.
    pub role: Role,
    /// Content.
    pub content: Content,
}

impl Message {
    /// A user message with plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: Content::Text(text.into()),
        }
    }

    /// An assistant message with blocks.
    pub fn assistant(blocks: Vec<Block>) -> Self {
        Message {
            role: Role::Assistant,
            content: Content::Blocks(blocks),
        }
    }

    /// A user message with blocks (tool results travel in these).
    pub fn user_blocks(blocks: Vec<Block>) -> Self {
        Message {
            role: Role::User,
            content: Content::Blocks(blocks),
        }
    }

    /// A user message carrying tool results.
    pub fn tool_results(results: Vec<(String, String)>) -> Self {
        Self::user_blocks(
            results
                .into_iter()
                .map(|(tool_use_id, content)| Block::ToolResult {
                    tool_use_id,
                    content,
                })
                .collect(),
        )
    }

    /// The blocks, or an empty slice for string content.
    pub fn blocks(&self) -> &[Block] {
        match &self.content {
            Content::Blocks(b) => b,
            Content::Text(_) => &[],
        }
    }

    /// Mutable blocks, or an empty slice for string content.
    pub fn blocks_mut(&mut self) -> &mut [Block] {
        match &mut self.content {
            Content::Blocks(b) => b,
            Content::Text(_) => &mut [],
        }
    }

    /// Drops the [`Block::Unlogged`] blocks (what a product resumed from
    /// its log no longer sends); whether there were any.
    pub fn drop_unlogged(&mut self) -> bool {
        let Content::Blocks(b) = &mut self.content else {
            return false;
        };
        let before = b.len();
        b.retain(|b| !matches!(b, Block::Unlogged { .. }));
        b.len() != before
    }

    /// Ids of the `tool_use` blocks of an assistant message (course: `has_tool_use`).
    pub fn tool_use_ids(&self) -> Vec<&str> {
        if self.role != Role::Assistant {
            return Vec::new();
        }
        self.blocks()
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Does this assistant message call a tool?
    pub fn has_tool_use(&self) -> bool {
        self.role == Role::Assistant
            && self
                .blocks()
                .iter()
                .any(|b| matches!(b, Block::ToolUse { .. }))
    }

    /// Is this a user message carrying at least one tool result?
    pub fn is_tool_result(&self) -> bool {
        self.role == Role::User
            && self
                .blocks()
                .iter()
                .any(|b| matches!(b, Block::ToolResult { .. }))
    }

    /// Ids answered by the `tool_result` blocks of this message.
    pub fn tool_result_ids(&self) -> Vec<&str> {
        if self.role != Role::User {
            return Vec::new();
        }
        self.blocks()
            .iter()
            .filter_map(|b| match b {
                Block::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Append `json.dumps(message, ensure_ascii=False)`: the bytes
    /// [`crate::pyjson::dumps`] writes for this message, without going
    /// through serde (the course archives the whole context on every snip,
    /// so this writer runs over every string of the history each time).
    /// Field order is the serialisation order of the types above.
    pub fn write_pyjson(&self, out: &mut Vec<u8>) {
        use crate::pyjson::write_str;
        out.extend_from_slice(match self.role {
            Role::User => br#"{"role": "user", "content": "#,
            Role::Assistant => br#"{"role": "assistant", "content": "#,
        });
        match &self.content {
            Content::Text(t) => write_str(out, t),
            Content::Blocks(blocks) => {
                out.push(b'[');
                for (i, b) in blocks.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    write_block(out, b);
                }
                out.push(b']');
            }
        }
        out.push(b'}');
    }

    /// The text of a message: the string, or its text blocks joined by newlines.
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(t) => t.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// The text a wire format shows for [`Block::Unlogged`] content: what it
/// was and its size, since its words are not known.
pub fn unlogged_text(what: &str, tokens: usize) -> String {
    format!("[{what}: {tokens} tokens the log does not keep]")
}

/// One block as [`Message::write_pyjson`] writes it.
fn write_block(out: &mut Vec<u8>, block: &Block) {
    use crate::pyjson::write_str;
    let field = |out: &mut Vec<u8>, key: &[u8], value: &str| {
        out.extend_from_slice(key);
        write_str(out, value);
    };
    match block {
        Block::Text { text } => field(out, br#"{"type": "text", "text": "#, text),
        Block::ToolUse { id, name, input } => {
            field(out, br#"{"type": "tool_use", "id": "#, id);
            field(out, br#", "name": "#, name);
            out.extend_from_slice(br#", "input": "#);
            crate::pyjson::write_value(out, input);
        }
        Block::ToolResult {
            tool_use_id,
            content,
        } => {
            field(
                out,
                br#"{"type": "tool_result", "tool_use_id": "#,
                tool_use_id,
            );
            field(out, br#", "content": "#, content);
        }
        Block::Thinking { thinking } => {
            field(out, br#"{"type": "thinking", "thinking": "#, thinking)
        }
        Block::Image { source } => field(out, br#"{"type": "image", "source": "#, source),
        Block::Unlogged { what, tokens } => {
            field(out, br#"{"type": "unlogged", "what": "#, what);
            out.extend_from_slice(format!(r#", "tokens": {tokens}"#).as_bytes());
        }
    }
    out.push(b'}');
}

/// Every `tool_result` in the user messages of `messages`, in order, as
/// `(message index, block index, content)`: the walk steps 3 and fit share.
pub fn tool_result_positions(messages: &[Message]) -> impl Iterator<Item = (usize, usize, &str)> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .flat_map(|(mi, m)| {
            m.blocks()
                .iter()
                .enumerate()
                .filter_map(move |(bi, b)| match b {
                    Block::ToolResult { content, .. } => Some((mi, bi, content.as_str())),
                    _ => None,
                })
        })
}

/// Every `tool_result` in the user messages of `messages`, in order, as
/// `(tool_use_id, content)` with the content editable in place: the walk
/// the policies that rewrite results share.
pub fn tool_results_mut(messages: &mut [Message]) -> impl Iterator<Item = (&String, &mut String)> {
    messages
        .iter_mut()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.blocks_mut().iter_mut())
        .filter_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
            } => Some((&*tool_use_id, content)),
            _ => None,
        })
}

/// Whether a walk over texts reads thinking blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    /// Thinking is left out: the compaction checker looks only where its
    /// steps write pointers, and no step writes into thinking.
    Skip,
    /// Thinking is read like any other text the model sees.
    Read,
}

/// Visit every text of `messages`: plain content and text blocks (`None`),
/// tool-result content (`Some(tool_use_id)`), and thinking (`None`) when
/// `thinking` says so.
pub fn for_each_text<'a>(
    messages: &'a [Message],
    thinking: Thinking,
    mut f: impl FnMut(Option<&'a str>, &'a str),
) {
    for m in messages {
        match &m.content {
            Content::Text(t) => f(None, t),
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text } => f(None, text),
                        Block::Thinking { thinking: t } if thinking == Thinking::Read => f(None, t),
                        Block::ToolResult {
                            tool_use_id,
                            content,
                        } => f(Some(tool_use_id), content),
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Python-compatible size estimate: the length in characters of
/// `json.dumps(messages, ensure_ascii=False)`, which is what the course
/// compares against its `CONTEXT_CHAR_LIMIT`. Python's default separators are
/// `", "` and `": "`; serde_json's compact form has none, so one char per
/// separator is added back.
pub fn estimate_chars(messages: &[Message]) -> usize {
    // "[" + "]" + ", " between messages.
    let mut total = 2 + messages.len().saturating_sub(1) * 2;
    for m in messages {
        total += message_chars(m);
    }
    total
}

/// Chars of an object's fixed part: braces, `", "` between fields, and per
/// field its quoted ASCII key, `": "`, and (for the `type` tag, given as a
/// field's value) the quoted tag. Evaluated at compile time.
const fn object_overhead(keys: &[&str], tag: &str) -> usize {
    let mut total = 2 + 2 * (keys.len() - 1);
    let mut i = 0;
    while i < keys.len() {
        total += keys[i].len() + 2 + 2;
        i += 1;
    }
    if tag.is_empty() {
        total
    } else {
        total + tag.len() + 2
    }
}

/// `{"role": "user", "content": …}` without the content.
const USER: usize = object_overhead(&["role", "content"], "user");
/// `{"role": "assistant", "content": …}` without the content.
const ASSISTANT: usize = object_overhead(&["role", "content"], "assistant");

/// [`estimate_chars`] of one message as an element of the list.
///
/// Computed by walking the message rather than serialising it: the pipeline
/// estimates before and after several steps on every call, and copying every
/// result string into a `serde_json::Value` would dominate its cost. The
/// fixed parts of each object are constants; only the strings are counted.
pub fn message_chars(message: &Message) -> usize {
    const TEXT: usize = object_overhead(&["type", "text"], "text");
    const TOOL_USE: usize = object_overhead(&["type", "id", "name", "input"], "tool_use");
    const TOOL_RESULT: usize = object_overhead(&["type", "tool_use_id", "content"], "tool_result");
    const THINKING: usize = object_overhead(&["type", "thinking"], "thinking");
    const IMAGE: usize = object_overhead(&["type", "source"], "image");
    const UNLOGGED: usize = object_overhead(&["type", "what", "tokens"], "unlogged");
    let frame = match message.role {
        Role::User => USER,
        Role::Assistant => ASSISTANT,
    };
    let content = match &message.content {
        Content::Text(t) => json_str_chars(t),
        Content::Blocks(blocks) => {
            2 + blocks.len().saturating_sub(1) * 2
                + blocks
                    .iter()
                    .map(|b| match b {
                        Block::Text { text } => TEXT + json_str_chars(text),
                        Block::ToolUse { id, name, input } => {
                            TOOL_USE
                                + json_str_chars(id)
                                + json_str_chars(name)
                                + input.python_chars()
                        }
                        Block::ToolResult {
                            tool_use_id,
                            content,
                        } => TOOL_RESULT + json_str_chars(tool_use_id) + json_str_chars(content),
                        Block::Thinking { thinking } => THINKING + json_str_chars(thinking),
                        Block::Image { source } => IMAGE + json_str_chars(source),
                        // The size is a number: its digits, not quoted.
                        Block::Unlogged { what, tokens } => {
                            UNLOGGED + json_str_chars(what) + tokens.to_string().len() - 2
                        }
                    })
                    .sum::<usize>()
        }
    };
    frame + content
}

/// Characters of `json.dumps(value, ensure_ascii=False)` with Python's separators.
pub fn python_json_chars(value: &serde_json::Value) -> usize {
    use serde_json::Value as V;
    match value {
        V::Null => 4,
        V::Bool(true) => 4,
        V::Bool(false) => 5,
        // Floats as Python's repr prints them (`1e-07`, not serde_json's `1e-7`).
        V::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) => crate::pyjson::float_repr(f).len(),
            None => n.to_string().len(),
        },
        V::String(s) => json_str_chars(s),
        V::Array(items) => {
            2 + items.len().saturating_sub(1) * 2
                + items.iter().map(python_json_chars).sum::<usize>()
        }
        V::Object(map) => {
            2 + map.len().saturating_sub(1) * 2
                + map
                    .iter()
                    .map(|(k, v)| json_str_chars(k) + 2 + python_json_chars(v))
                    .sum::<usize>()
        }
    }
}

/// Characters of a JSON string literal as Python writes it with `ensure_ascii=False`
/// (used to update a running estimate when one string changes).
pub fn json_str_chars(s: &str) -> usize {
    // The estimate walks the whole history on every request, so the common
    // case, plain ASCII with nothing to escape (one char per byte), is one
    // vectorised test; the rest from the first other byte (a char
    // boundary: every byte before it is ASCII) is counted in full.
    // Between two such bytes every byte is one plain char, so the text is
    // read once: an escape adds its backslash form, and a run of non-ASCII
    // bytes (up to the next ASCII byte) is counted by its chars.
    let bytes = s.as_bytes();
    let mut total = 2;
    let mut at = 0;
    while let Some(i) = crate::scan::find(&bytes[at..], crate::scan::ESCAPE_OR_HIGH) {
        total += i;
        at += i;
        if bytes[at] < 0x80 {
            total += match bytes[at] {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
                _ => 6,
            };
            at += 1;
        } else {
            let end = bytes[at..]
                .iter()
                .position(|&b| b < 0x80)
                .map_or(bytes.len(), |j| at + j);
            // `at` and `end` are char boundaries: ASCII bytes never continue a char.
            total += s[at..end].chars().count();
            at = end;
        }
    }
    total + bytes.len() - at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trips_anthropic_shape() {
        let raw = r#"[{"role":"user","content":"hi"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls"}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\nb"}]}]"#;
        let msgs: Vec<Message> = serde_json::from_str(raw).unwrap();
        assert_eq!(msgs.len(), 3);
        assert!(msgs[1].has_tool_use());
        assert!(msgs[2].is_tool_result());
        assert_eq!(msgs[2].tool_result_ids(), vec!["t1"]);
        let back = serde_json::to_string(&msgs).unwrap();
        let again: Vec<Message> = serde_json::from_str(&back).unwrap();
        assert_eq!(msgs, again);
    }

    /// A kept count is never stale: copies share the value and its
    /// counts, an edit through `make_mut` or `DerefMut` un-shares it and
    /// the counts are taken again; printing, comparing and serialising
    /// are the value's own.
    #[test]
    fn a_tool_input_edit_forgets_its_counts_and_leaves_copies_alone() {
        let fresh = |v: &serde_json::Value| (v.to_string().chars().count(), python_json_chars(v));
        let mut a = ToolInput::from(serde_json::json!({"command": "ls é", "n": 1.5}));
        let b = a.clone();
        assert_eq!((a.compact_chars(), a.python_chars()), fresh(a.value()));
        assert!(Arc::ptr_eq(&a.0, &b.0));
        a.make_mut()["command"] = "cat \"a\"\n\u{1F600}".into();
        assert_eq!((a.compact_chars(), a.python_chars()), fresh(a.value()));
        assert_eq!((b.compact_chars(), b.python_chars()), fresh(b.value()));
        assert_ne!(a, b);
        if let serde_json::Value::Object(map) = &mut *a {
            map.insert("more".into(), serde_json::json!([null, true, 1e-7]));
        }
        assert_eq!((a.compact_chars(), a.python_chars()), fresh(a.value()));
        let v = a.value().clone();
        assert_eq!(format!("{a:?}"), format!("{v:?}"));
        assert_eq!(a.to_string(), v.to_string());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        assert_eq!(a, ToolInput::from(v));
    }

    #[test]
    fn walking_estimate_equals_the_serialised_one() {
        let msgs: Vec<Message> = serde_json::from_str(
            r#"[{"role":"user","content":"héllo \"x\"\n"},
            {"role":"assistant","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls","n":[1,2.5,null,true]}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a\tb\u0001"}]},
            {"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"image","source":"png"}]}]"#,
        )
        .unwrap();
        for m in &msgs {
            let v = serde_json::to_value(m).unwrap();
            assert_eq!(message_chars(m), python_json_chars(&v), "{m:?}");
        }
    }

    #[test]
    fn estimate_matches_python_json_dumps() {
        // python3 -c 'import json;print(len(json.dumps([{"role":"user","content":"héllo\n"}],ensure_ascii=False)))'
        // -> 40
        let msgs = vec![Message::user_text("héllo\n")];
        assert_eq!(estimate_chars(&msgs), 40);
        let two = vec![Message::user_text("a"), Message::user_text("b")];
        // [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}] -> 68
        assert_eq!(estimate_chars(&two), 68);
    }

    fn any_block() -> impl proptest::strategy::Strategy<Value = Block> {
        use proptest::prelude::*;
        let s = "(?s).{0,16}";
        prop_oneof![
            s.prop_map(|text| Block::Text { text }),
            (s, s, proptest::option::of(-1e20f64..1e20)).prop_map(|(id, name, x)| {
                Block::ToolUse {
                    id,
                    name,
                    input: serde_json::json!({"command": "ls \"a\"", "x": x, "n": [1, null, true]})
                        .into(),
                }
            }),
            (s, s).prop_map(|(tool_use_id, content)| Block::ToolResult {
                tool_use_id,
                content
            }),
            s.prop_map(|thinking| Block::Thinking { thinking }),
            s.prop_map(|source| Block::Image { source }),
        ]
    }

    /// A user or assistant message with plain text or up to four blocks.
    fn any_message() -> impl proptest::strategy::Strategy<Value = Message> {
        use proptest::prelude::*;
        let content = proptest::prop_oneof![
            "(?s).{0,24}".prop_map(Content::Text),
            proptest::collection::vec(any_block(), 0..5).prop_map(Content::Blocks),
        ];
        (proptest::bool::ANY, content).prop_map(|(user, content)| Message {
            role: if user { Role::User } else { Role::Assistant },
            content,
        })
    }

    proptest::proptest! {
        #[test]
        fn message_chars_equals_the_python_dump_length(
            m in any_message(),
        ) {
            proptest::prop_assert_eq!(message_chars(&m), crate::pyjson::dumps_len(&m));
        }

        #[test]
        fn write_pyjson_equals_the_serde_dump(
            m in any_message(),
        ) {
            let mut out = Vec::new();
            m.write_pyjson(&mut out);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), crate::pyjson::dumps(&m));
        }

        #[test]
        fn json_str_chars_equals_the_python_dump(s in "(?s).{0,40}") {
            proptest::prop_assert_eq!(json_str_chars(&s), crate::pyjson::dumps_len(&s));
        }

        #[test]
        fn json_str_chars_counts_control_chars_and_escapes(
            s in "[\\x00-\\x20\"\\\\a\u{7f}\u{85}é\u{2028}\u{1F600}]{0,30}"
        ) {
            proptest::prop_assert_eq!(json_str_chars(&s), crate::pyjson::dumps_len(&s));
        }
    }
}
