//! The product's own per-call count beside its port's: aider's
//! `> Tokens: N sent` lines against `aider-chat-summary` replaying the
//! same chat history.

use crate::common;

use ctxlab::replay::policies::{render_sessions, replay_files_product, Measure, Sessions};
use ctxlab::replay::product_counts::CountSeries;

/// One aider session of three model calls, the last two `sent` as given.
fn history(second: &str, third: &str) -> String {
    [
        "\n# aider chat started at 2025-01-02 03:04:05\n\n",
        "\n#### fix the bug in calc.py  \n",
        "\nI will edit calc.py:\n\n```python\nx = 1\n```\n\n",
        "> Tokens: 3.2k sent, 21 received.  \n",
        "\n#### and the tests  \n",
        &format!("\n{}\n\n", "Done, the tests pass now. ".repeat(40)),
        &format!("> Tokens: {second} sent, 203 received.  \n"),
        "\n#### thanks  \n",
        "\nYou are welcome.\n\n",
        &format!("> Tokens: {third} sent, 9 received.  \n"),
    ]
    .concat()
}

fn replay(text: &str) -> Sessions {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".aider.chat.history.md");
    std::fs::write(&path, text).unwrap();
    let (_, info) = replay_files_product(
        &[path],
        &["aider-chat-summary".to_string()],
        160,
        &Default::default(),
        Measure::default(),
    )
    .unwrap();
    info
}

fn only(info: &Sessions) -> &CountSeries {
    let [s] = &info.counts[..] else {
        panic!("one series: {:?}", info.counts)
    };
    s
}

#[test]
fn each_sent_line_pairs_with_the_call_it_followed() {
    let info = replay(&history("3.5k", "3.6k"));
    let s = only(&info);
    // The first count sizes the envelope and is not scored.
    assert_eq!((s.policy.as_str(), s.paired), ("aider-chat-summary", 2));
    assert!(s.port_summaries.is_empty());
    // A count far from what the port sent shows as that far off.
    let far = replay(&history("3.5k", "35k"));
    let f = only(&far);
    assert_eq!(f.paired, 2);
    assert!(f.max_error > 0.85 && f.max_error < 0.95, "{f:?}");
    assert!(f.max_error > s.max_error);
    // The table says what is an estimate.
    let text = render_sessions(&[], &[], &far, ctxlab::render::Format::Table);
    assert!(text.contains("within the printed value"), "{text}");
    assert!(text.contains("an estimate"), "{text}");
}

#[test]
fn a_log_without_counts_has_no_series_and_json_keeps_its_shape() {
    let info = replay(&history("3.5k", "3.6k").replace("> Tokens:", "> Notes:"));
    assert!(info.counts.is_empty());
    let json = render_sessions(&[], &[], &info, ctxlab::render::Format::Json);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["product_counts"], serde_json::json!([]));
}

/// The shared aider log: every session with more than one count has a
/// series, and every series pairs each of its counts but the first.
#[test]
fn the_shared_aider_log_pairs_every_count() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let files: Vec<_> = std::fs::read_dir(dir.join("aider"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let sessions: Vec<_> = files
        .iter()
        .flat_map(|f| ctxlab::import::import_file_sessions(f, &Default::default()).unwrap())
        .collect();
    let (_, info) = replay_files_product(
        &files,
        &["aider-chat-summary".to_string()],
        160,
        &Default::default(),
        Measure::default(),
    )
    .unwrap();
    let with_counts: Vec<_> = sessions
        .iter()
        .filter(|s| s.recorded_tokens.len() > 1)
        .collect();
    assert_eq!(info.counts.len(), with_counts.len());
    for (series, s) in info.counts.iter().zip(&with_counts) {
        assert_eq!(series.session, s.label);
        assert_eq!(series.paired, s.recorded_tokens.len() - 1, "{series:?}");
    }
}
