//! A seeded coding session of any length, calibrated on the shared real
//! sessions' shapes, produced one message at a time.
//!
//! Calibration (measured on the nine Claude Code logs of
//! `../shared/transcripts/claude_code/`, 2,681 assistant records, 1,536
//! tool calls, 1,535 tool results; the script is in `notes/horizon.md`):
//! - **tool result sizes** (chars): quantiles 10 % 22, 25 % 96, 50 % 371,
//!   75 % 1,299, 90 % 4,477, 95 % 9,088, 99 % 20,031, max 51,383 (mean
//!   1,804). [`RESULT_QUANTILES`] samples by the inverse of that table,
//!   linear between its points;
//! - **calls per model call**: one (Claude Code writes one `tool_use` per
//!   assistant record); 1,145 of 2,681 assistant records (43 %) are text,
//!   median 91 chars, mean 281: here a call carries a text block with
//!   probability [`TEXT_SHARE`], of 1 to [`TEXT_MAX`] chars (mean ~280);
//! - **user turns**: 142 user texts per 1,536 calls (one per 10.8 calls),
//!   median 133 chars: a user turn follows a result with probability
//!   [`USER_SHARE`], of [`USER_CHARS`] chars;
//! - **re-reads**: 475 of 1,157 fetch keys (file path or command, 41 %)
//!   repeat a key fetched earlier in the same log: a call fetches again a
//!   key of the last [`REREAD_WINDOW`] with probability [`REREAD_SHARE`]
//!   (same result text, as an unchanged file would give).
//!
//! Not calibrated (an assumption, stated): half the calls are `Read` of a
//! path, half `Bash` of a command; a result's text is numbered lines of its
//! key, so no two differ by chance.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha12Rng;

use crate::message::{Block, Message};
use crate::tokens::{Approx, TokenCounter};

/// Tool result sizes in chars: (cumulative share, chars), from the shared
/// Claude Code logs (see the module doc).
pub const RESULT_QUANTILES: [(f64, f64); 9] = [
    (0.0, 1.0),
    (0.10, 22.0),
    (0.25, 96.0),
    (0.50, 371.0),
    (0.75, 1_299.0),
    (0.90, 4_477.0),
    (0.95, 9_088.0),
    (0.99, 20_031.0),
    (1.0, 51_383.0),
];
/// Share of calls whose message also carries text (1,145 / 2,681).
pub const TEXT_SHARE: f64 = 0.43;
/// Longest generated assistant text, chars (uniform 1..=TEXT_MAX, mean ~280).
pub const TEXT_MAX: usize = 560;
/// Share of results followed by a user turn (142 / 1,536).
pub const USER_SHARE: f64 = 0.092;
/// Chars of a user turn (the shared logs' median).
pub const USER_CHARS: usize = 133;
/// Share of calls that fetch again a recent key (475 / 1,157).
pub const REREAD_SHARE: f64 = 0.41;
/// Keys a re-read chooses among: the most recent ones.
pub const REREAD_WINDOW: usize = 64;

/// One fetch key and the size of its result.
#[derive(Debug, Clone)]
struct Key {
    name: String,
    read: bool,
    chars: usize,
}

/// The session, one message at a time: a task, then calls and results (and
/// now and then a user turn) until the messages so far hold at least
/// `target` tokens, then a closing answer. The horizon's length is the
/// tokens of transcript appended: the sum over its messages of
/// [`Approx`]'s `count_message`, each message counted once.
#[derive(Debug)]
pub struct Generator {
    rng: ChaCha12Rng,
    target: u64,
    appended: u64,
    queue: std::collections::VecDeque<Message>,
    recent: std::collections::VecDeque<Key>,
    calls: usize,
    done: bool,
}

impl Generator {
    /// A session of at least `target` tokens, from `seed`.
    pub fn new(seed: u64, target: u64) -> Generator {
        let mut queue = std::collections::VecDeque::new();
        queue.push_back(Message::user_text(
            "Work through the backlog of the service: fix each failing test.",
        ));
        Generator {
            rng: ChaCha12Rng::seed_from_u64(seed),
            target,
            appended: 0,
            queue,
            recent: std::collections::VecDeque::new(),
            calls: 0,
            done: false,
        }
    }

    /// A tool result size drawn from [`RESULT_QUANTILES`].
    fn result_chars(&mut self) -> usize {
        let u: f64 = self.rng.gen();
        let i = RESULT_QUANTILES
            .windows(2)
            .position(|w| u <= w[1].0)
            .unwrap_or(RESULT_QUANTILES.len() - 2);
        let ((p0, c0), (p1, c1)) = (RESULT_QUANTILES[i], RESULT_QUANTILES[i + 1]);
        let at = if p1 > p0 { (u - p0) / (p1 - p0) } else { 0.0 };
        (c0 + at * (c1 - c0)).round().max(1.0) as usize
    }

    /// The key of the next call: a recent one again, or a new one.
    fn next_key(&mut self) -> Key {
        if !self.recent.is_empty() && self.rng.gen_bool(REREAD_SHARE) {
            let i = self.rng.gen_range(0..self.recent.len());
            return self.recent[i].clone();
        }
        let n = self.calls;
        let read = self.rng.gen_bool(0.5);
        let name = if read {
            format!("/srv/app/src/module_{n:06}.rs")
        } else {
            format!("cargo test -p app module_{n:06}")
        };
        let key = Key {
            name,
            read,
            chars: self.result_chars(),
        };
        self.recent.push_back(key.clone());
        if self.recent.len() > REREAD_WINDOW {
            self.recent.pop_front();
        }
        key
    }

    /// One call, its result and maybe a user turn, queued.
    fn turn(&mut self) {
        let key = self.next_key();
        let id = format!("toolu_{:07}", self.calls);
        self.calls += 1;
        let mut blocks = Vec::new();
        if self.rng.gen_bool(TEXT_SHARE) {
            let n = self.rng.gen_range(1..=TEXT_MAX);
            blocks.push(Block::Text {
                text: filler("Next I check the module and its test. ", n),
            });
        }
        let (name, input) = if key.read {
            ("Read", serde_json::json!({ "file_path": key.name }))
        } else {
            ("Bash", serde_json::json!({ "command": key.name }))
        };
        blocks.push(Block::ToolUse {
            id: id.clone(),
            name: name.into(),
            input: input.into(),
        });
        self.queue.push_back(Message::assistant(blocks));
        let line = format!("{}: line of output\n", key.name);
        self.queue
            .push_back(Message::tool_results(vec![(id, filler(&line, key.chars))]));
        if self.rng.gen_bool(USER_SHARE) {
            self.queue.push_back(Message::user_text(filler(
                "Also look at the next failing case, please. ",
                USER_CHARS,
            )));
        }
    }
}

/// `unit` repeated and cut to exactly `chars` chars.
fn filler(unit: &str, chars: usize) -> String {
    unit.chars().cycle().take(chars).collect()
}

impl Iterator for Generator {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        if self.queue.is_empty() && !self.done {
            if self.appended >= self.target {
                self.done = true;
                self.queue.push_back(Message::assistant(vec![Block::Text {
                    text: "Every failing test of the backlog passes now.".into(),
                }]));
            } else {
                self.turn();
            }
        }
        let m = self.queue.pop_front()?;
        self.appended += Approx.count_message(&m) as u64;
        Some(m)
    }
}

/// A synthetic main conversation for benchmarks and tests: one user prompt,
/// then `turns` rounds of one tool call whose result is `result_chars` chars
/// (cycling 1x, 2x, 3x), then a closing assistant text. No transcript data.
pub fn synthetic_main(turns: usize, result_chars: usize) -> Vec<Message> {
    let mut m = vec![Message::user_text("synthetic task")];
    for t in 0..turns {
        let id = format!("toolu_syn_{t:06}");
        m.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "bash".into(),
            input: serde_json::json!({ "turn": t }).into(),
        }]));
        m.push(Message::tool_results(vec![(
            id,
            "x".repeat(result_chars * (1 + t % 3)),
        )]));
    }
    m.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same seed gives the same session; the length passes the target
    /// by less than one turn; every call is answered.
    #[test]
    fn seeded_sessions_reach_their_target_and_pair_every_call() {
        let a: Vec<Message> = Generator::new(3, 200_000).collect();
        let b: Vec<Message> = Generator::new(3, 200_000).collect();
        assert_eq!(a, b);
        let tokens: u64 = a.iter().map(|m| Approx.count_message(m) as u64).sum();
        assert!((200_000..200_000 + 20_000).contains(&tokens), "{tokens}");
        // Every call is answered in the very next message (the validity
        // oracle itself, a crate up, runs on generated sessions in
        // `tests/policy`).
        for (i, m) in a.iter().enumerate() {
            for b in m.blocks() {
                if let Block::ToolUse { id, .. } = b {
                    let next = a.get(i + 1).map(Message::blocks).unwrap_or(&[]);
                    assert!(
                        next.iter().any(|r| matches!(r, Block::ToolResult { tool_use_id, .. } if tool_use_id == id)),
                        "call {id} at message {i} unanswered"
                    );
                }
            }
        }
    }

    /// The sampled sizes follow the calibration table: the median of many
    /// draws is near 371 chars, and none passes the largest real result.
    #[test]
    fn result_sizes_follow_the_quantiles() {
        let mut g = Generator::new(1, 0);
        let mut sizes: Vec<usize> = (0..4001).map(|_| g.result_chars()).collect();
        sizes.sort_unstable();
        assert!((300..450).contains(&sizes[2000]), "{}", sizes[2000]);
        assert!(*sizes.last().unwrap() <= 51_383);
        assert!((3_500..5_500).contains(&sizes[3600]), "{}", sizes[3600]);
    }
}
