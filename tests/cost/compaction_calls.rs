//! The compaction request is a request: on a shared session where
//! `claude-code` compacts, its priced row has one request more per
//! compaction than `none`'s, and each of those requests' dollars are
//! reproduced here from the price file and the cache rule Claude Code's
//! fork follows (the whole previous request read, the prompt neither read
//! nor written), not by the cost model's own functions.

use crate::common;

use ctxlab::replay::policies::{replay_files_product, Compared, Measure, Pricing};

const SESSION: &str = "claude-code-config-9246a0c1__socialaize.jsonl";

fn priced(policies: &[&str]) -> Option<Vec<Compared>> {
    let dir = common::transcripts()?;
    let measure = Measure {
        pricing: Some(Pricing {
            provider: ctxlab::cache::provider::CacheChoice::Anthropic.provider(),
            sheet: ctxlab::cache::prices::sheet(ctxlab::cache::prices::DEFAULT_SHEET)
                .unwrap()
                .clone(),
            prices: ctxlab::cache::prices::table::PriceTable::builtin(),
            by_model: true,
        }),
        conversations: ctxlab::replay::subagents::Conversations {
            main_chain_only: true,
        },
        ..Measure::default()
    };
    let names: Vec<String> = policies.iter().map(|p| p.to_string()).collect();
    let path = dir.join("claude_code").join(SESSION);
    let (out, _) =
        replay_files_product(&[path], &names, 160, &Default::default(), measure).unwrap();
    Some(out)
}

/// Input and output dollars per million tokens and the cache multipliers
/// of `model`, read from the price file itself.
fn prices_of(model: &str) -> (f64, f64, f64, f64) {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("lab/measure/cache/prices/2026-12-04.json"),
    )
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = v["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == model)
        .unwrap_or_else(|| panic!("{model} in the price file"));
    let f = |k: &str| m[k].as_f64().unwrap();
    (
        f("input"),
        f("output"),
        f("cache_write_5m"),
        f("cache_read"),
    )
}

#[test]
fn claude_code_pays_one_request_per_compaction_at_the_forks_price() {
    let Some(out) = priced(&["none", "claude-code"]) else {
        return;
    };
    let (none, cc) = (&out[0], &out[1]);
    let (nr, cr) = (none.cost.as_ref().unwrap(), cc.cost.as_ref().unwrap());
    let compactions = cc.run.event_count("summarised");
    assert!(compactions > 0, "claude-code compacts on {SESSION}");
    assert_eq!(nr.compaction_calls, 0, "none sends no summary request");
    assert_eq!(cr.compaction_calls, compactions);
    assert_eq!(cr.requests.len(), nr.requests.len() + compactions);
    assert_eq!(cr.requests.len(), cc.run.calls.len() + compactions);

    let (input, output, write, read) = prices_of(cr.sheet.name.trim_end_matches(" (1h writes)"));
    // The stand-in summary prompt, counted as the approximate counter
    // counts (a char is a quarter token, rounded up).
    let prompt = ctxlab::zoo::claude_code::SUMMARY_PROMPT
        .chars()
        .count()
        .div_ceil(4) as u64;
    let mut seen = 0;
    for (j, r) in cr.requests.iter().enumerate().filter(|(_, r)| r.compaction) {
        seen += 1;
        let before = &cr.requests[j - 1];
        let after = &cr.requests[j + 1];
        assert!(
            !before.compaction && !after.compaction,
            "one call before its model call"
        );
        assert!(r.output_tokens > 0, "the summary's output is priced");
        assert_eq!(
            r.uncached_tokens, prompt,
            "request {j}: the prompt is neither read nor written"
        );
        assert_eq!(
            r.input_tokens,
            r.cache_read_tokens + r.cache_write_tokens + prompt
        );
        if !after.expired {
            // The fork sends the conversation's prefix: all the previous
            // request cached is read, what arrived since is written.
            assert_eq!(r.cache_read_tokens, before.input_tokens, "request {j}");
        }
        let dollars = (r.uncached_tokens as f64 * input
            + r.cache_write_tokens as f64 * write
            + r.cache_read_tokens as f64 * read
            + r.output_tokens as f64 * output)
            / 1e6;
        assert!(
            (r.dollars - dollars).abs() < 1e-9,
            "request {j}: {} vs {dollars}",
            r.dollars
        );
    }
    assert_eq!(seen, compactions);
    let main: f64 = cr
        .requests
        .iter()
        .filter(|r| !r.compaction)
        .map(|r| r.dollars)
        .sum();
    let side: f64 = cr
        .requests
        .iter()
        .filter(|r| r.compaction)
        .map(|r| r.dollars)
        .sum();
    assert!(side > 0.0 && (cr.dollars - main - side).abs() < 1e-9);
}

#[test]
fn the_cost_table_has_a_compaction_column() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let path = dir.join("claude_code").join(SESSION);
    let text = common::lab_ok(&[
        "replay",
        path.to_str().unwrap(),
        "--policy",
        "none,claude-code",
        "--cost",
        "--main-chain-only",
        "--format",
        "markdown",
    ]);
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("| compaction calls |"));
    let header = lines.next().expect("a compaction column");
    let col = header
        .split('|')
        .position(|c| c.trim() == "compaction calls")
        .unwrap();
    let rows: Vec<&str> = lines.take_while(|l| l.starts_with('|')).collect();
    let cell = |policy: &str| -> String {
        let row = rows
            .iter()
            .find(|l| l.split('|').nth(2).map(str::trim) == Some(policy))
            .unwrap_or_else(|| panic!("a row for {policy}"));
        row.split('|').nth(col).unwrap().trim().to_string()
    };
    assert_eq!(cell("none"), "0");
    assert_ne!(cell("claude-code"), "0");
    assert!(text.contains("compaction calls: each summary"), "{text}");
}
