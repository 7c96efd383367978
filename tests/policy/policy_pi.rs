//! `pi-auto-compact` against Pi's own compactions in the shared Pi session
//! (the oracle), and every policy of the zoo on that session.
//!
//! The oracle feeds the port's trigger and cut point what Pi fed its own:
//! each reply's usage as the API reported it (recorded in the log), over
//! the entries since the previous compaction. The second compaction is
//! automatic: the port fires after the same reply and keeps from the same
//! entry. The first was made below Pi's threshold (175,004 tokens against
//! 200,000 - 16,384 = 183,616; no fixed threshold fires after both reply
//! 358 and reply 627 but after neither reply before them), so it was a
//! manual `/compact`: the port, asked to compact at that point, keeps from
//! the same entry, and does not fire by itself before it.

use std::collections::HashMap;

use crate::common;

use ctxlab::import::artefacts::without_product_artefacts;
use ctxlab::import::{import_file, ImportedSession};
use ctxlab::message::Role;
use ctxlab::zoo::pi::{PiCompaction, Slot};

fn session() -> Option<ImportedSession> {
    let dir = common::transcripts()?;
    let path = dir.join("pi/pi-mono__before-compaction@83378aa.jsonl");
    Some(import_file(&path, &common::LENIENT).unwrap())
}

/// `main[start..end]` as `findCutPoint` sees the entries, each reply's
/// usage its recorded context (`calculateContextTokens`).
fn slots(s: &ImportedSession, start: usize, end: usize) -> Vec<Slot> {
    let usage: HashMap<usize, u64> = s
        .recorded_tokens
        .iter()
        .map(|r| (r.after_messages - 1, r.sent + r.received))
        .collect();
    (start..end)
        .map(|i| match s.main[i].role {
            Role::Assistant => Slot::Assistant(usage.get(&i).copied()),
            Role::User if !s.main[i].is_tool_result() => Slot::User,
            Role::User => Slot::Other,
        })
        .collect()
}

#[test]
fn the_port_matches_pis_two_compactions() {
    let Some(s) = session() else { return };
    let pi = PiCompaction::default();
    let meta = &s.real_compaction_meta;
    assert_eq!(meta.len(), 2);
    let mut start = 0;
    let mut fired = Vec::new();
    for c in meta {
        let slots = slots(&s, start, c.at);
        // The cut over the entries since the previous compaction.
        let cut = start + pi.find_cut_point(&slots, 0, slots.len());
        assert_eq!(Some(cut), c.first_kept, "compaction at {}", c.at);
        // `checkAutoCompaction` after each reply of the stretch.
        let first_fire = slots.iter().enumerate().find_map(|(k, slot)| match slot {
            Slot::Assistant(Some(t)) if pi.should_compact(*t) => Some(start + k),
            _ => None,
        });
        fired.push(first_fire);
        // The summary follows the reply it was made after.
        start = c.at + 1;
    }
    let last_reply = |at: usize| (0..at).rev().find(|&i| s.main[i].role == Role::Assistant);
    // The manual one: the port never fires before it.
    assert_eq!(fired[0], None);
    // The automatic one: at the product's call.
    assert_eq!(fired[1], last_reply(meta[1].at));
    assert_eq!(s.main_lines[fired[1].unwrap()], 628);
    // The recorded tokens before each are the reply's usage, as Pi counts.
    for c in meta {
        let reply = last_reply(c.at).unwrap();
        let r = s
            .recorded_tokens
            .iter()
            .find(|r| r.after_messages == reply + 1)
            .unwrap();
        assert_eq!(Some(r.sent + r.received), c.pre_tokens);
    }
}

#[test]
fn every_policy_sends_valid_requests_on_the_pi_session() {
    let Some(s) = session() else { return };
    let messages = without_product_artefacts(&s);
    assert_eq!(messages.len() + 2, s.main.len());
    super::policy_zoo_b::all_valid("pi session", &messages);
}
