//! Compaction and memory in one session: the interlocked rows, the hinge on a
//! real transcript, and the extractor.

use crate::common;

use ctxlab::interlock::experiments::{side, tabs_session, EXPERIMENTS, TABS};
use ctxlab::interlock::{preference_candidates, Hinge, InterlockSwitches};
use ctxlab::message::{Content, Message, Role};
use ctxlab::registry::Mechanism;

#[test]
fn every_interlocked_row_meets_its_expectations() {
    for row in EXPERIMENTS {
        assert_eq!(row.mechanism, Mechanism::Interlock);
        common::verdict_holding(row);
    }
}

#[test]
fn the_extractor_proposes_only_stated_preferences() {
    let reply = preference_candidates(
        "user: Refactor the tokenizer. Use tabs, not spaces.\nassistant: Use it.\nuser: Thanks!",
    );
    let v: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let items = v.as_array().unwrap();
    assert_eq!(items.len(), 1, "{reply}");
    assert_eq!(items[0]["body"], TABS);
    assert_eq!(items[0]["scope"], "persistent");
}

/// Without compaction pressure (a short turn) every hinge keeps the preference:
/// the loss in `I-tabs` is compaction's doing, not the extractor's.
#[test]
fn a_short_turn_keeps_the_preference_under_every_hinge() {
    let messages = tabs_session(3);
    for h in [Hinge::PostCompaction, Hinge::Snapshot, Hinge::Cursor] {
        let sw = InterlockSwitches {
            hinge: h,
            ..InterlockSwitches::default()
        };
        let c = side(&messages, "course-f9e8b28", sw, &[TABS]).unwrap();
        assert_eq!(c.count_of("facts_lost_to_both"), Some(0), "{h:?}");
        assert_eq!(c.count_of("facts_kept_by_both"), Some(1), "{h:?}");
    }
}

/// The same hinge on a shared real session: the preference is planted in the
/// first user message that opens a turn of at least 60 messages.
#[test]
fn the_hinge_on_a_real_transcript_with_a_planted_preference() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let mut checked = 0;
    for f in [
        "claude_code/templar__chat@a46211b.json",
        "claude_code/attio-mcp-server__chat@816b68a.json",
    ] {
        let s = ctxlab::import::import_file(&dir.join(f), &Default::default()).unwrap();
        let Some(at) = long_turn_start(&s.main, 60) else {
            continue;
        };
        let mut main = s.main.clone();
        plant(&mut main[at], TABS);
        let course = side(
            &main,
            "course-f9e8b28",
            InterlockSwitches::default(),
            &[TABS],
        )
        .unwrap();
        let snap = InterlockSwitches {
            hinge: Hinge::Snapshot,
            ..InterlockSwitches::default()
        };
        let fixed = side(&main, "course-f9e8b28", snap, &[TABS]).unwrap();
        assert_eq!(course.count_of("facts_lost_to_both"), Some(1), "{f}");
        assert_eq!(fixed.count_of("facts_lost_to_both"), Some(0), "{f}");
        assert!(
            fixed.count_of("facts_kept_only_by_memory").unwrap()
                + fixed.count_of("facts_kept_by_both").unwrap()
                == 1
        );
        checked += 1;
    }
    assert!(checked > 0, "no shared session has a long enough turn");
}

/// The index of a user text message followed by at least `n` messages before
/// the next assistant message without a tool call.
fn long_turn_start(main: &[Message], n: usize) -> Option<usize> {
    (0..main.len()).find(|&i| {
        let m = &main[i];
        if m.role != Role::User || m.is_tool_result() || m.text().trim().is_empty() {
            return false;
        }
        let end = main[i + 1..]
            .iter()
            .position(|x| x.role == Role::Assistant && !x.has_tool_use())
            .map_or(main.len() - i - 1, |p| p);
        end >= n
    })
}

fn plant(m: &mut Message, text: &str) {
    match &mut m.content {
        Content::Text(t) => *t = format!("{text} {t}"),
        Content::Blocks(b) => b.insert(0, ctxlab::message::Block::Text { text: text.into() }),
    }
}
