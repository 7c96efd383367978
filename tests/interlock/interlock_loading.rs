//! Two-layer memory loading: the course's system prompt against the product's
//! resident catalog with bodies injected per turn, priced by the cache model.

use crate::common;

use ctxlab::interlock::loading::{
    mid_session_writes, side, Layout, LoadingSwitches, EXPERIMENTS, FIRST_PREF, PROFILE,
};
use ctxlab::interlock::{Hinge, InterlockSwitches};
use ctxlab::message::{Content, Message, Role};

const PRODUCT: LoadingSwitches = LoadingSwitches {
    layout: Layout::CatalogResident,
};

#[test]
fn the_loading_row_meets_its_expectations() {
    for row in EXPERIMENTS {
        common::verdict_holding(row);
    }
}

#[test]
fn the_trade_course_rewrites_history_product_pays_injection() {
    let messages = mid_session_writes(6);
    let sw = InterlockSwitches::default();
    let course = side(&messages, PROFILE, sw, &LoadingSwitches::default()).unwrap();
    let product = side(&messages, PROFILE, sw, &PRODUCT).unwrap();
    let n = |c: &ctxlab::counters::Counters, k: &str| c.count_of(k).unwrap();
    assert_eq!(n(&course, "injected_tokens"), 0);
    assert!(n(&product, "injected_tokens") > 0);
    // The course's prompt carries the bodies too, so it is the larger one.
    assert!(n(&course, "system_tokens_max") > n(&product, "system_tokens_max"));
    // Both layouts store the same memories: only where they load differs.
    assert_eq!(
        n(&course, "memories_stored"),
        n(&product, "memories_stored")
    );
}

/// The same trade on shared real sessions: a preference planted in the first
/// prompt is written at the end of the first turn; the course's system prompt
/// changes at the next turn, the product's never does.
#[test]
fn the_trade_on_real_transcripts_with_a_planted_preference() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let sw = InterlockSwitches {
        hinge: Hinge::Cursor,
        ..InterlockSwitches::default()
    };
    for f in [
        "claude_code/templar__chat@a46211b.json",
        "claude_code/attio-mcp-server__chat@816b68a.json",
    ] {
        let s = ctxlab::import::import_file(&dir.join(f), &Default::default()).unwrap();
        let mut main = s.main.clone();
        let first = main
            .iter()
            .position(|m| m.role == Role::User && !m.is_tool_result())
            .unwrap();
        plant(&mut main[first], FIRST_PREF);
        let course = side(&main, PROFILE, sw, &LoadingSwitches::default()).unwrap();
        let product = side(&main, PROFILE, sw, &PRODUCT).unwrap();
        let n = |c: &ctxlab::counters::Counters, k: &str| c.count_of(k).unwrap();
        assert!(n(&course, "memories_stored") >= 1, "{f}: {course:?}");
        assert!(n(&course, "system_prompt_changes") >= 1, "{f}: {course:?}");
        assert!(
            n(&course, "prefix_breaks_at_system") >= 1,
            "{f}: {course:?}"
        );
        assert_eq!(n(&product, "system_prompt_changes"), 0, "{f}");
        assert_eq!(n(&product, "prefix_breaks_at_system"), 0, "{f}");
        assert_eq!(n(&course, "injected_tokens"), 0, "{f}");
        assert!(n(&product, "turns_with_injection") >= 1, "{f}");
        // Compaction breaks the prefix in both layouts, so the product's
        // injected bodies are rewritten with it: more cache writes, not fewer.
        assert!(
            n(&product, "cache_write_tokens") > n(&course, "cache_write_tokens"),
            "{f}"
        );
        eprintln!(
            "{f}: breaks course {} product {}; writes course {} product {}",
            n(&course, "prefix_breaks"),
            n(&product, "prefix_breaks"),
            n(&course, "cache_write_tokens"),
            n(&product, "cache_write_tokens"),
        );
    }
}

fn plant(m: &mut Message, text: &str) {
    match &mut m.content {
        Content::Text(t) => *t = format!("{text} {t}"),
        Content::Blocks(b) => b.insert(0, ctxlab::message::Block::Text { text: text.into() }),
    }
}

#[test]
fn the_switches_default_to_the_course_and_refuse_unknown_fields() {
    let d: LoadingSwitches = serde_json::from_str("{}").unwrap();
    assert_eq!(d.layout, Layout::SystemPrompt);
    let p: LoadingSwitches = serde_json::from_str(r#"{"layout": "catalog_resident"}"#).unwrap();
    assert_eq!(p, PRODUCT);
    assert!(serde_json::from_str::<LoadingSwitches>(r#"{"layot": "x"}"#).is_err());
}

/// Without a memory written mid-session (the preferences are already in the
/// store), the course's system prompt never changes either: the breaks in the
/// row come from the writes, not from the layout as such.
#[test]
fn without_mid_session_writes_neither_layout_changes_its_system_prompt() {
    let mut messages = mid_session_writes(4);
    for m in &mut messages {
        if let Content::Text(t) = &mut m.content {
            *t = t
                .replace(FIRST_PREF, "")
                .replace(ctxlab::interlock::loading::LATER_PREF, "");
        }
    }
    let sw = InterlockSwitches::default();
    for layout in [LoadingSwitches::default(), PRODUCT] {
        let c = side(&messages, PROFILE, sw, &layout).unwrap();
        assert_eq!(c.count_of("memories_stored"), Some(0), "{layout:?}");
        assert_eq!(c.count_of("system_prompt_changes"), Some(0), "{layout:?}");
        assert_eq!(c.count_of("prefix_breaks_at_system"), Some(0), "{layout:?}");
    }
}
