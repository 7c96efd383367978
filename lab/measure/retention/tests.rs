//! The incremental observer against the whole-request matcher: on generated
//! sessions under a policy that clears results into files, drops and
//! summarises its front, edits a request in place and deletes files, every
//! artifact's status at every request is what a plain `contains` over the
//! whole request and the files its pointers reach says.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use proptest::prelude::*;

use super::planted::Position;
use super::*;
use crate::policy::findings::{pointers_in_file, pointers_in_messages};
use crate::policy::PointerRule;
use crate::storage::{MemFs, Storage};
use crate::tokens::sizes::Memo;
use crate::tokens::Approx;

const RULES: &[PointerRule] = &[PointerRule::line_prefix("Full output: ")];

/// A multi-line fact, split across two lines of a result when planted.
const SPLIT: &str = "VALUE-7Z: the key\nis in vault 9";

/// One turn of a generated session and what the policy does before it.
type Turn = (usize, usize, usize, usize, usize, u8);

fn session(turns: &[Turn]) -> Vec<Message> {
    let mut out = vec![Message::user_text("fix https://ex.am/start please")];
    for (t, &(a, b, c, d, _, _)) in turns.iter().enumerate() {
        let id = format!("c{t}");
        let input = if a % 2 == 0 {
            serde_json::json!({ "file_path": format!("/src/m{}.rs", a / 2) })
        } else {
            serde_json::json!({ "command": format!("make t{}", a / 2) })
        };
        out.push(Message::assistant(vec![
            Block::Text {
                text: format!("PLAN: step {}", b % 3),
            },
            Block::ToolUse {
                id: id.clone(),
                name: "tool".into(),
                input: input.into(),
            },
        ]));
        // A result may name a file or a command that a later call brings
        // as an artifact (found in an old message once it arrives).
        let mut lines = vec![
            format!("error: bad thing {b}"),
            format!("see /src/m{c}.rs and make t{}", c / 2),
            format!("docs at https://ex.am/p{d}"),
        ];
        if d == 0 {
            lines.push(SPLIT.to_string());
        }
        if c == 1 {
            lines.push(Position::ToolResult.fact());
        }
        out.push(Message::tool_results(vec![(id, lines.join("\n"))]));
    }
    out
}

/// The policy's history and storage.
struct Policy {
    history: Vec<Message>,
    storage: MemFs,
    /// Files written and not deleted.
    written: Vec<String>,
    /// Files written in all (each name is used once).
    count: usize,
}

impl Policy {
    /// Act before a call; the request sent (the history, or a copy with
    /// one message changed when `op` says so).
    fn act(&mut self, op: usize, n: u8) -> Vec<Message> {
        let len = self.history.len();
        let at = usize::from(n) % len.max(1);
        match op {
            1 => self.clear(at),
            2 if len > 3 => {
                self.history.drain(..at.min(len - 2));
            }
            3 if len > 3 => self.summarise(at.clamp(1, len - 2)),
            4 if !self.written.is_empty() => {
                let p = self.written.remove(at % self.written.len());
                self.storage.remove_file(Path::new(&p)).expect("written");
            }
            5 => {
                let mut request = self.history.clone();
                request[at] = Message::user_text(format!("edited {n}"));
                return request;
            }
            _ => {}
        }
        self.history.clone()
    }

    fn path(&mut self, what: &str) -> String {
        let p = format!("/ctxlab/p/{what}{}.txt", self.count);
        self.count += 1;
        self.written.push(p.clone());
        p
    }

    /// Clear the first result at or after `at` into a file.
    fn clear(&mut self, at: usize) {
        let Some(i) = (at..self.history.len()).find(|&i| {
            self.history[i]
                .blocks()
                .iter()
                .any(|b| matches!(b, Block::ToolResult { .. }))
        }) else {
            return;
        };
        let p = self.path("r");
        for (_, content) in crate::message::tool_results_mut(&mut self.history[i..=i]) {
            self.storage
                .write(Path::new(&p), content.as_bytes())
                .expect("mem");
            *content = format!("Full output: {p}");
        }
    }

    /// Replace the first `k` messages with a summary pointing to a JSON
    /// Lines archive of them (which points on to the previous archive).
    fn summarise(&mut self, k: usize) {
        let dropped: Vec<Message> = self.history.drain(..k).collect();
        let earlier = self.written.last().cloned();
        let p = self.path("s");
        let mut archive: String = dropped
            .iter()
            .map(|m| serde_json::to_string(m).expect("json") + "\n")
            .collect();
        if let Some(e) = earlier {
            archive.push_str(&format!("Full output: {e}\n"));
        }
        self.storage
            .write(Path::new(&p), archive.as_bytes())
            .expect("mem");
        let summary = format!("Summary: worked on /src/m1.rs\nFull output: {p}");
        self.history.insert(0, Message::user_text(summary));
    }
}

/// The whole-request reference: a status per registered artifact.
struct Reference {
    files: HashMap<String, String>,
}

impl Reference {
    fn statuses(&mut self, texts: &[String], request: &[Message], fs: &MemFs) -> Vec<Status> {
        let whole = request_text(request);
        let present: Vec<bool> = texts.iter().map(|t| whole.contains(t.as_str())).collect();
        let mut reached = Vec::new();
        if present.contains(&false) {
            let mut frontier: Vec<String> =
                pointers_in_messages(RULES, request).into_iter().collect();
            let mut visited = HashSet::new();
            while let Some(p) = frontier.pop() {
                if !visited.insert(p.clone()) || fs.kind(Path::new(&p)).is_none() {
                    continue;
                }
                let text = self.files.entry(p.clone()).or_insert_with(|| {
                    let raw = String::from_utf8(fs.read(Path::new(&p)).expect("read")).unwrap();
                    let mut decoded = String::new();
                    for line in raw.lines() {
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                            collect_strings(&v, &mut decoded);
                        }
                    }
                    if decoded.is_empty() {
                        raw
                    } else {
                        format!("{raw}\n{decoded}")
                    }
                });
                frontier.extend(pointers_in_file(RULES, text));
                reached.push(text.clone());
            }
        }
        (0..texts.len())
            .map(|i| {
                if present[i] {
                    Status::Present
                } else if reached.iter().any(|f| f.contains(texts[i].as_str())) {
                    Status::Reachable
                } else {
                    Status::Gone
                }
            })
            .collect()
    }
}

fn view<'a>(fs: &'a MemFs, memo: Option<&'a Memo>) -> View<'a> {
    View {
        storage: fs,
        root: Path::new("/ctxlab/p"),
        rules: RULES,
        tokens: &Approx,
        envelope: 0,
        sizes: memo.map_or(&[], Memo::sizes),
        same: memo.map_or(&[], Memo::reused),
    }
}

/// Replay `turns` as the engine does (a call before each assistant
/// message) with three observers: incremental with the memo's map, the
/// same without a map, and one without a prepared finder; each must agree
/// with the reference at every request, and their keyed facts and
/// re-fetches with those read from each whole request. Returns how many
/// messages the incremental observer read, how many it was sent, and the
/// statuses at each request; and how many bytes of request text the
/// incremental observer searched whole, of how many its requests held.
fn check(turns: &[Turn]) -> (usize, usize, Vec<Vec<Status>>, (usize, usize)) {
    let facts = vec![
        ("split".to_string(), SPLIT.to_string()),
        ("port".to_string(), Position::ToolResult.fact()),
    ];
    let messages = session(turns);
    // The first two share one preparation, as every policy's run of a
    // session does.
    let prepared = Retention::prepare(&messages, facts.clone());
    let mut observers = [
        Retention::from_prepared(&prepared),
        Retention::from_prepared(&prepared),
        Retention::with_facts(facts),
    ];
    let mut reference = Reference {
        files: HashMap::new(),
    };
    let mut policy = Policy {
        history: Vec::new(),
        storage: MemFs::new(),
        written: Vec::new(),
        count: 0,
    };
    let mut ledger = facts::FactLedger::default();
    let mut refetch = RefetchDemand::default();
    policy
        .storage
        .create_dir_all(Path::new("/ctxlab/p"))
        .unwrap();
    let mut memo = Memo::default();
    let mut seen: Vec<Message> = Vec::new();
    let (mut read, mut sent, mut statuses) = (0, 0, Vec::new());
    let mut text_sent = 0;
    let mut before = Vec::new();
    let mut call = 0;
    for (i, m) in messages.iter().enumerate() {
        if m.role == crate::message::Role::Assistant {
            let (_, _, _, _, op, n) = turns[(i - 1) / 2];
            let request = policy.act(op, n);
            memo.measure(&seen, &request, &Approx);
            let texts: Vec<String> = observers[0]
                .artifacts
                .iter()
                .map(|a| a.text.clone())
                .collect();
            let want = reference.statuses(&texts, &request, &policy.storage);
            for (k, o) in observers.iter_mut().enumerate() {
                let memo = (k == 0).then_some(&memo);
                o.on_request(call, i, &request, &[], &view(&policy.storage, memo));
                let got: Vec<Status> = o.artifacts.iter().map(|a| a.status).collect();
                assert_eq!(got, want, "observer {k} at call {call}");
            }
            statuses.push(want);
            let now = observers[0].scans.current().to_vec();
            read += now
                .iter()
                .filter(|s| !before.iter().any(|b| std::sync::Arc::ptr_eq(b, s)))
                .count();
            before = now;
            ledger.on_request(call, &request);
            refetch.on_request(call, i, &request, &[], &view(&policy.storage, None));
            sent += request.len();
            text_sent += request_text(&request).len();
            seen = request;
            call += 1;
        }
        for o in observers.iter_mut() {
            o.on_message(i, m);
        }
        ledger.on_message(m);
        refetch.on_message(i, m);
        seen.push(m.clone());
        policy.history.push(m.clone());
    }
    let scanned = observers[0].finder.whole_text_scanned();
    let reports: Vec<String> = observers
        .into_iter()
        .map(|o| serde_json::to_string(&o.finish()).expect("json"))
        .collect();
    assert_eq!(reports[0], reports[1]);
    assert_eq!(reports[0], reports[2]);
    let report: serde_json::Value = serde_json::from_str(&reports[0]).expect("json");
    let classes = serde_json::to_value(ledger.finish()).expect("json");
    assert_eq!(report["classes"], classes);
    assert_eq!(report["refetch_calls"], refetch.calls());
    assert_eq!(report["refetch_tokens"], refetch.tokens());
    (read, sent, statuses, (scanned, text_sent))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn incremental_statuses_equal_the_whole_request_matcher(
        turns in proptest::collection::vec(
            (0..8usize, 0..6usize, 0..6usize, 0..5usize, 0..6usize, any::<u8>()),
            1..16,
        )
    ) {
        check(&turns);
    }
}

/// A policy that only appends: every message is read once, not once per
/// request, and the statuses are still the reference's.
#[test]
fn an_appending_policy_reads_each_message_once() {
    let turns: Vec<Turn> = (0..12)
        .map(|t| (t % 8, t % 6, (t + 1) % 6, t % 5, 0, 0))
        .collect();
    let (read, sent, _, (scanned, text_sent)) = check(&turns);
    let messages = session(&turns).len();
    assert!(read < messages, "{read} read of {messages}");
    assert!(sent > 3 * messages, "{sent} sent");
    // The text of the unchanged history is kept, not searched again for
    // the artifacts that span lines.
    assert!(
        scanned > 0 && 2 * scanned < text_sent,
        "{scanned} of {text_sent} bytes searched"
    );
}

/// A result cleared into a file that was read before an artifact it holds
/// arrived: once the message that brought the artifact is edited out of a
/// request, the file makes it reachable.
#[test]
fn a_file_holds_an_artifact_registered_after_it_was_read() {
    // Call 1 clears the first result (it names /src/m3.rs) into a file
    // and reads it; the second call brings /src/m3.rs; call 2 edits that
    // call out of the request.
    let turns = [(0, 0, 3, 1, 0, 0), (6, 1, 0, 2, 1, 2), (1, 2, 0, 3, 5, 3)];
    let (_, _, statuses, _) = check(&turns);
    assert!(statuses[1].contains(&Status::Reachable));
    assert!(statuses[2].contains(&Status::Reachable));
    let reachable = |c: usize| {
        statuses[c]
            .iter()
            .filter(|&&s| s == Status::Reachable)
            .count()
    };
    assert!(reachable(2) > reachable(1), "{statuses:?}");
}

/// The reference itself can tell the three statuses apart (so agreeing
/// with it means something).
#[test]
fn the_reference_sees_present_reachable_and_gone() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/ctxlab/p")).unwrap();
    fs.write(Path::new("/ctxlab/p/a.txt"), b"error: bad thing 1\n")
        .unwrap();
    let request = vec![Message::user_text("make t1\nFull output: /ctxlab/p/a.txt")];
    let texts = ["make t1", "error: bad thing 1", "make t2"].map(String::from);
    let mut r = Reference {
        files: HashMap::new(),
    };
    let got: BTreeSet<_> = r
        .statuses(&texts, &request, &fs)
        .into_iter()
        .map(|s| format!("{s:?}"))
        .collect();
    assert_eq!(got.len(), 3);
}
