//! Per-message sizes of a request (Python-JSON chars, tokens, cache key),
//! measured once per message a run sends instead of once per request.
//!
//! A request is mostly the previous request plus what arrived since, that
//! with a few messages edited in place, or its tail after the oldest
//! messages were replaced or dropped. [`Memo`] keeps the sizes of the last
//! request's messages in order; a message of the next request equal (`==`,
//! a memory compare) to the message at the same position of the previous
//! list, or at the same distance from its end, takes its sizes, and every
//! other message is measured. Sizes are pure functions of a message, so
//! reuse never changes a number: it only saves re-serialising and
//! re-counting the whole request at every call, which made a replay
//! quadratic in its session.

use std::hash::Hasher;

use super::TokenCounter;
use crate::message::Message;

/// What is measured of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageSize {
    /// `len(json.dumps(message, ensure_ascii=False))`.
    pub chars: usize,
    /// Tokens by the run's counter.
    pub tokens: usize,
    /// The prompt cache's key of the message ([`key`]).
    pub key: u64,
}

impl MessageSize {
    /// Measure `m` with `counter`.
    pub fn of(m: &Message, counter: &dyn TokenCounter) -> MessageSize {
        // One serialisation gives both the length and the key.
        let text = crate::pyjson::dumps(m);
        MessageSize {
            chars: text.chars().count(),
            tokens: counter.count_message(m),
            key: key_of_text(&text),
        }
    }
}

/// The prompt cache's key of a message: the hash of its Python JSON text
/// (`json.dumps`, which [`MessageSize::of`] builds anyway), so equal
/// messages share a key (the cache model compares prefixes by it) and
/// different ones differ (the text is injective) up to a 64-bit collision.
pub fn key(m: &Message) -> u64 {
    key_of_text(&crate::pyjson::dumps(m))
}

fn key_of_text(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(text.as_bytes());
    h.finish()
}

/// `len(json.dumps(request, ensure_ascii=False))` from its messages' sizes:
/// the brackets, and `", "` between messages.
pub fn request_chars(sizes: &[MessageSize]) -> usize {
    let inner: usize = sizes.iter().map(|s| s.chars).sum();
    2 + inner + 2 * sizes.len().saturating_sub(1)
}

/// Tokens of a request from its messages' sizes (a counter counts a request
/// as the sum of its messages).
pub fn request_tokens(sizes: &[MessageSize]) -> usize {
    sizes.iter().map(|s| s.tokens).sum()
}

/// The sizes of the last request measured, reused for the next one.
#[derive(Debug, Default, Clone)]
pub struct Memo {
    sizes: Vec<MessageSize>,
    /// Per message of the last request, the position in the request
    /// measured before it of the equal message whose sizes it took.
    from: Vec<Option<usize>>,
}

impl Memo {
    /// Measure `request`. `previous` is the list the memo's sizes describe,
    /// in order: the last request measured, possibly followed by messages
    /// that arrived after it (never measured, so measured now if sent).
    pub fn measure(
        &mut self,
        previous: &[Message],
        request: &[Message],
        counter: &dyn TokenCounter,
    ) {
        let known = self.sizes.len().min(previous.len());
        // How far the tail of `request` sits from the tail of `previous`.
        let shift = previous.len() as isize - request.len() as isize;
        let reuse = |i: usize| -> Option<usize> {
            let m = &request[i];
            let front = (i < known && previous[i] == *m).then_some(i);
            front.or_else(|| {
                let j = usize::try_from(i as isize + shift).ok()?;
                (j != i && j < known && previous[j] == *m).then_some(j)
            })
        };
        let from: Vec<Option<usize>> = (0..request.len()).map(reuse).collect();
        let sizes: Vec<MessageSize> = from
            .iter()
            .enumerate()
            .map(|(i, j)| {
                j.map_or_else(|| MessageSize::of(&request[i], counter), |j| self.sizes[j])
            })
            .collect();
        self.sizes = sizes;
        self.from = from;
    }

    /// Per message of the last request measured, the position in the
    /// request measured before it of a message equal to it (`==`), when
    /// one was found at the same position or the same distance from the
    /// end; `None` for a message measured afresh. Observers that keep
    /// something per message reuse it by this map instead of comparing
    /// the messages again.
    pub fn reused(&self) -> &[Option<usize>] {
        &self.from
    }

    /// The sizes of the last request measured, one per message.
    pub fn sizes(&self) -> &[MessageSize] {
        &self.sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Block;
    use crate::tokens::Approx;

    fn call(i: usize) -> Message {
        Message::assistant(vec![Block::ToolUse {
            id: format!("t{i}"),
            name: "read".into(),
            input: serde_json::json!({"path": format!("/src/é{i}.rs"), "n": 1.5}).into(),
        }])
    }

    fn result(i: usize, text: &str) -> Message {
        Message::tool_results(vec![(format!("t{i}"), format!("{text}\n\"{i}\""))])
    }

    fn fresh_sizes(request: &[Message]) -> Vec<MessageSize> {
        request
            .iter()
            .map(|m| MessageSize::of(m, &Approx))
            .collect()
    }

    #[test]
    fn request_figures_equal_the_whole_request_measured() {
        for n in 0..4 {
            let request: Vec<Message> = (0..n).map(|i| result(i, "ü x")).collect();
            let sizes = fresh_sizes(&request);
            assert_eq!(request_chars(&sizes), crate::pyjson::dumps_len(&request));
            assert_eq!(request_tokens(&sizes), Approx.count_messages(&request));
        }
    }

    /// Appends, an edit in place, a front replaced by a summary, the oldest
    /// dropped: the memo's sizes always equal a fresh measurement.
    #[test]
    fn reused_sizes_equal_fresh_ones() {
        let mut history = vec![Message::user_text("fix it")];
        let mut memo = Memo::default();
        let mut previous: Vec<Message> = Vec::new();
        for step in 0..12 {
            history.push(call(step));
            history.push(result(step, &"x".repeat(step * 7)));
            let mut request = history.clone();
            match step % 4 {
                1 => request[2] = result(0, "[cleared]"),
                2 => {
                    request.drain(..3);
                    request.insert(0, Message::user_text("summary"));
                }
                3 => {
                    request.drain(..4);
                }
                _ => {}
            }
            memo.measure(&previous, &request, &Approx);
            assert_eq!(memo.sizes(), &fresh_sizes(&request)[..], "step {step}");
            assert_eq!(memo.reused().len(), request.len());
            let sent = previous.len().saturating_sub(1);
            for (i, j) in memo.reused().iter().enumerate() {
                if let Some(j) = *j {
                    assert!(
                        j < sent && previous[j] == request[i],
                        "step {step} {i}->{j}"
                    );
                }
            }
            previous = request;
            previous.push(Message::user_text("arrived after"));
        }
    }

    /// As the engine calls it (the last request plus the messages that
    /// arrived since), under a policy that edits its history in place or
    /// replaces its front with a summary: only the message it changed and
    /// the two that arrived are measured.
    #[test]
    fn only_changed_and_new_messages_are_measured() {
        let mut memo = Memo::default();
        let mut history = vec![Message::user_text("fix it")];
        memo.measure(&[], &history, &Approx);
        let mut seen = history.clone();
        for m in [call(0), result(0, "a")] {
            history.push(m.clone());
            seen.push(m);
        }
        for step in 1..13 {
            let changed = match step % 3 {
                1 => {
                    let at = history.len() - 3;
                    history[at] = Message::user_text(format!("[cleared {step}]"));
                    1
                }
                2 => {
                    history.drain(..2);
                    history[0] = Message::user_text(format!("summary {step}"));
                    1
                }
                _ => 0,
            };
            memo.measure(&seen, &history, &Approx);
            let fresh = memo.reused().iter().filter(|j| j.is_none()).count();
            assert_eq!(fresh, changed + 2, "step {step}");
            assert_eq!(memo.sizes(), &fresh_sizes(&history)[..], "step {step}");
            seen = history.clone();
            for m in [call(step), result(step, &"y".repeat(step))] {
                history.push(m.clone());
                seen.push(m);
            }
        }
    }

    #[test]
    fn equal_messages_share_a_key_and_different_ones_do_not() {
        assert_eq!(key(&result(1, "a")), key(&result(1, "a")));
        assert_ne!(key(&result(1, "a")), key(&result(1, "b")));
    }
}
