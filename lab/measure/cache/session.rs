//! Cache requests from the message lists a replay sends, and the cost of a
//! replayed session under each arm.
//!
//! [`RequestBuilder`] turns each request's messages into segments (one per
//! message, keyed by its JSON, counted once per distinct message with the
//! chosen tokenizer) with breakpoints on the system segment and the last
//! message, as Claude Code places them. [`none_requests`] is the
//! no-compaction arm: every model call sends the whole history.
//!
//! The replayed requests carry no system prompt or tool list (the
//! transcripts do not record them) and no send times (every arm would get
//! the recorded ones, but a compacting arm sends other requests at those
//! times; TTL effects are measured on the recorded arm only).

use std::collections::HashMap;

use super::{CacheRequest, Segment};
use crate::message::{Message, Role};
use crate::tokens::sizes::MessageSize;
use crate::tokens::{TokenCounter, Tokens};

/// Builds [`CacheRequest`]s, remembering the size of every message seen.
#[derive(Debug)]
pub struct RequestBuilder {
    counter: Box<dyn TokenCounter>,
    sizes: HashMap<u64, u64>,
    system: Segment,
}

impl RequestBuilder {
    /// A builder counting with `tokens`; `system_tokens` sizes the (unrecorded)
    /// system prompt and tools.
    pub fn new(tokens: Tokens, system_tokens: u64) -> RequestBuilder {
        RequestBuilder {
            counter: tokens.counter(),
            sizes: HashMap::new(),
            system: Segment::new("system", "system", system_tokens),
        }
    }

    /// Resize the system segment (the replay's fixed prefix changed, as
    /// after a product's compaction): a prefix of another size is another
    /// prefix, so its cache key changes with it.
    pub fn set_system_tokens(&mut self, tokens: u64) {
        if tokens != self.system.tokens {
            self.system = Segment::new("system", ("system", tokens), tokens);
        }
    }

    /// Tokens of the system segment every request starts with.
    pub fn system_tokens(&self) -> u64 {
        self.system.tokens
    }

    /// The tokenizer's report name.
    pub fn tokenizer(&self) -> &'static str {
        self.counter.name()
    }

    /// The request sending `messages` at `turn`.
    pub fn request(&mut self, messages: &[Message], turn: usize) -> CacheRequest {
        build(
            &mut self.sizes,
            &self.system,
            messages,
            turn,
            Measured::Count(self.counter.as_ref()),
        )
    }

    /// [`RequestBuilder::request`] counting with `counter` (a replay's own
    /// counter); use one counter per builder, sizes are remembered.
    pub fn request_counted(
        &mut self,
        messages: &[Message],
        turn: usize,
        counter: &dyn TokenCounter,
    ) -> CacheRequest {
        build(
            &mut self.sizes,
            &self.system,
            messages,
            turn,
            Measured::Count(counter),
        )
    }

    /// [`RequestBuilder::request_counted`] with the messages' sizes already
    /// measured by that counter (a replay's [`MessageSize`]s, one per
    /// message): no message is hashed or counted again.
    pub fn request_sized(
        &mut self,
        messages: &[Message],
        turn: usize,
        sized: &[MessageSize],
    ) -> CacheRequest {
        build(
            &mut self.sizes,
            &self.system,
            messages,
            turn,
            Measured::Sized(sized),
        )
    }
}

/// How a request's messages get their keys and tokens.
#[derive(Clone, Copy)]
enum Measured<'a> {
    /// Hash and count each one.
    Count(&'a dyn TokenCounter),
    /// Already measured, one per message.
    Sized(&'a [MessageSize]),
}

fn build(
    sizes: &mut HashMap<u64, u64>,
    system: &Segment,
    messages: &[Message],
    turn: usize,
    measured: Measured<'_>,
) -> CacheRequest {
    let mut segments = Vec::with_capacity(messages.len() + 1);
    segments.push(system.clone());
    for (i, m) in messages.iter().enumerate() {
        let (key, tokens) = match measured {
            Measured::Count(counter) => {
                let key = crate::tokens::sizes::key(m);
                let n = *sizes
                    .entry(key)
                    .or_insert_with(|| counter.count_message(m) as u64);
                (key, n)
            }
            Measured::Sized(s) => (
                s[i].key,
                *sizes.entry(s[i].key).or_insert(s[i].tokens as u64),
            ),
        };
        let role = if m.role == Role::User {
            "user"
        } else {
            "assistant"
        };
        segments.push(Segment {
            label: format!("msg {i} {role}"),
            key,
            tokens,
            cause: None,
        });
    }
    CacheRequest::with_last_breakpoint(segments, None, turn)
}

/// Is `m` a user prompt (not a tool result)? Prompts start turns.
pub fn starts_turn(m: &Message) -> bool {
    m.role == Role::User && !m.is_tool_result()
}

/// The no-compaction arm: before every assistant message of `main`, the
/// whole history so far; from each message of `resumes` on (where the
/// product resumed from its log), without the content the log does not keep.
pub fn none_requests(
    main: &[Message],
    resumes: &[usize],
    builder: &mut RequestBuilder,
) -> Vec<CacheRequest> {
    let mut turn = 0;
    let mut out = Vec::new();
    // A copy only once a resume changes the history.
    let mut resumed: Option<Vec<Message>> = None;
    for (i, m) in main.iter().enumerate() {
        if resumes.contains(&i) {
            let history = resumed.get_or_insert_with(|| main.to_vec());
            for m in &mut history[..i] {
                m.drop_unlogged();
            }
        }
        if m.role == Role::Assistant {
            let history = resumed.as_deref().unwrap_or(main);
            out.push(builder.request(&history[..i], turn));
        }
        turn += starts_turn(m) as usize;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{cost, prices, Provider};
    use ctxlab_import::generate::synthetic_main;

    #[test]
    fn the_none_arm_sends_the_whole_history_and_never_breaks() {
        let main = synthetic_main(6, 2_000);
        let mut b = RequestBuilder::new(Tokens::Approx, 1_500);
        let reqs = none_requests(&main, &[], &mut b);
        assert_eq!(reqs.len(), 7);
        assert_eq!(reqs[1].segments.len(), 4);
        let r = cost(
            &reqs,
            &Provider::Anthropic(Default::default()),
            prices::sheet("gpt-5").unwrap(),
        );
        assert_eq!(r.breaks, 0);
        assert_eq!(r.turns, 1);
        // Every request after the first reads all of the previous one.
        for w in r.requests.windows(2) {
            assert_eq!(w[1].cache_read_tokens, w[0].input_tokens);
        }
    }

    #[test]
    fn a_changed_message_changes_its_key_and_is_counted_once() {
        let main = synthetic_main(2, 100);
        let mut b = RequestBuilder::new(Tokens::Claude, 0);
        let a = b.request(&main, 0);
        let mut edited = main.clone();
        edited[2] = Message::tool_results(vec![("toolu_syn_000000".into(), "short".into())]);
        let e = b.request(&edited, 0);
        assert_eq!(a.segments[1].key, e.segments[1].key);
        assert_ne!(a.segments[3].key, e.segments[3].key);
        assert!(e.segments[3].tokens < a.segments[3].tokens);
        assert_eq!(b.tokenizer(), "claude");
    }
}
