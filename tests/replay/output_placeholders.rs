//! Stream placeholders in recorded `output_tokens` (issue 47): on every
//! shared Claude Code log, every response whose recorded output is a
//! stream's first count (at most 11) beside logged content of 100 tokens or
//! more is detected, and no response whose recorded output is at least half
//! its counted content is; the logs that have them (2.0.x and 2.1.38) are
//! found to, and the 1.0.70 log, which records whole counts, is not.

use crate::common;

use ctxlab::tokens::recorded::placeholders::{count, outputs};
use ctxlab::tokens::Tokens;

#[test]
fn placeholders_are_detected_on_every_shared_log_that_has_them() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let counter = Tokens::Claude.counter();
    let mut found = Vec::new();
    let files = common::claude_code_files(&dir);
    for f in &files {
        let (records, _) = ctxlab::import::recorded::log_records::read_placed(f).unwrap();
        let outs = outputs(&records, counter.as_ref());
        for (id, o) in &outs {
            if o.recorded <= 11 && o.counted >= 100 {
                assert!(o.placeholder(), "{}: {id} {o:?} missed", f.display());
                assert_eq!(o.best(), (o.counted as u64, true));
            }
            if o.recorded as f64 >= o.counted as f64 / 2.0 {
                assert!(!o.placeholder(), "{}: {id} {o:?} flagged", f.display());
                assert_eq!(o.best(), (o.recorded, false));
            }
        }
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        found.push((name, count(&outs)));
    }
    let of = |prefix: &str| {
        found
            .iter()
            .find(|(n, _)| n.starts_with(prefix))
            .map(|(_, c)| *c)
            .unwrap_or_else(|| panic!("{prefix} not among {found:?}"))
    };
    // The logs the issue names: most of their responses are placeholders.
    for log in [
        "claude-code-config-9246a0c1__socialaize",
        "claude-code-config-73752f2f__dotclaude",
        "golfgod",
        "claude-agentic-framework",
    ] {
        let c = of(log);
        assert!(c.placeholders * 3 >= c.responses, "{log}: {c:?}");
    }
    // Claude Code 1.0.70 records whole counts.
    assert_eq!(of("attio-mcp-server").placeholders, 0, "{found:?}");
}

#[test]
fn billed_with_output_is_estimated_where_placeholders_are() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let prices = ctxlab::cache::prices::table::PriceTable::builtin();
    let bill_of = |name: &str| {
        let path = dir.join("claude_code").join(name);
        let requests = ctxlab::tokens::recorded::read_file(&path).unwrap();
        ctxlab::cache::bill::bill(name, &requests, &prices).unwrap()
    };
    // 2.0.5: placeholders, so the recorded bill is a lower bound.
    let b = bill_of("claude-code-config-9246a0c1__socialaize.jsonl");
    let e = b.estimated_output.expect("placeholders estimated");
    assert!(e.placeholders * 3 >= b.requests, "{e:?} of {}", b.requests);
    assert!(e.output_tokens > b.output_tokens, "{e:?} {b:?}");
    assert!(e.dollars > b.dollars, "{e:?} against {}", b.dollars);
    // The prompt side is the recorded one: only output moves.
    assert!(e.dollars - b.dollars <= b.output_dollars * 20.0);
    // 1.0.70 records whole counts: nothing is estimated.
    let b = bill_of("attio-mcp-server__chat@816b68a.json");
    assert_eq!(b.estimated_output, None);
}
