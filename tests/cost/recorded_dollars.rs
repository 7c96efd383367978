//! Recorded-usage dollars against a recomputation written apart from the
//! lab's pricing code: on every shared Claude Code log, the lab's bill
//! (each request at its own model's price, output included) is within
//! 0.5 % of what the log's own `usage` costs at the list prices typed below.
//!
//! The recomputation reads the raw records with serde_json and shares no
//! code with `ctxlab::tokens::recorded` or `ctxlab::cache`: its own line
//! splitting, its own de-duplication, its own price list. De-duplication:
//! Claude Code logs one record per streamed content block of a response,
//! every record of a response carrying the same `message.id` (and
//! `requestId`) and the same prompt-side usage, while `output_tokens` grows
//! from a partial count on the first record to the final one on the last.
//! So one request per `message.id`, prompt side from any record (the test
//! checks they agree), output the largest count. The lab keys requests by
//! `message.id` too, and keeps the largest output count.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// List prices in dollars per million tokens, typed from Anthropic's
/// pricing page (platform.claude.com/docs/en/about-claude/pricing, read
/// 2026-12-04): input, 5-minute write, 1-hour write, cache read, output.
fn list_price(model: &str) -> Option<[f64; 5]> {
    Some(match model {
        "claude-opus-4-1-20250805" | "claude-opus-4-20250514" => [15.0, 18.75, 30.0, 1.5, 75.0],
        "claude-opus-4-5-20251101" | "claude-opus-4-6" => [5.0, 6.25, 10.0, 0.5, 25.0],
        "claude-sonnet-4-5-20250929" | "claude-sonnet-4-20250514" => [3.0, 3.75, 6.0, 0.3, 15.0],
        "claude-haiku-4-5-20251001" => [1.0, 1.25, 2.0, 0.1, 5.0],
        _ => return None,
    })
}

/// The records of a log: a JSON array, or JSON lines (blank and `//`
/// lines skipped, a last line cut mid-record dropped).
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.trim_start_matches('\u{feff}');
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(text).unwrap();
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(v) => out.push(v),
            Err(e) if e.is_eof() && i + 1 == lines.len() => {}
            Err(e) => panic!("{}: line {}: {e}", path.display(), i + 1),
        }
    }
    out
}

/// One response: model, prompt-side usage (input, 5m writes, 1h writes, reads), output.
struct Response {
    model: String,
    prompt: [u64; 4],
    output: u64,
}

fn field(u: &Value, pointer: &str) -> u64 {
    u.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The responses of a log, keyed by `message.id`.
fn responses(records: &[Value]) -> BTreeMap<String, Response> {
    let mut out: BTreeMap<String, Response> = BTreeMap::new();
    for r in records {
        if r["type"] != "assistant" {
            continue;
        }
        let m = &r["message"];
        let (Some(id), Some(u)) = (m["id"].as_str(), m.get("usage")) else {
            continue;
        };
        let written = field(u, "/cache_creation_input_tokens");
        let hour = field(u, "/cache_creation/ephemeral_1h_input_tokens");
        let prompt = [
            field(u, "/input_tokens"),
            written - hour,
            hour,
            field(u, "/cache_read_input_tokens"),
        ];
        let output = field(u, "/output_tokens");
        let model = m["model"].as_str().unwrap_or_default().to_string();
        let entry = out.entry(id.to_string()).or_insert(Response {
            model: model.clone(),
            prompt,
            output,
        });
        assert_eq!(
            entry.prompt, prompt,
            "{id}: prompt usage differs between records"
        );
        assert_eq!(entry.model, model, "{id}: model differs between records");
        entry.output = entry.output.max(output);
    }
    out
}

/// Dollars of a log at list prices: (prompt side, output, requests).
fn recompute(records: &[Value]) -> (f64, f64, usize) {
    let (mut prompt, mut output, mut n) = (0.0, 0.0, 0);
    for (id, r) in responses(records) {
        if r.prompt.iter().sum::<u64>() == 0 {
            // Claude Code's own placeholders (`<synthetic>`): no API call.
            assert_eq!(r.output, 0, "{id}");
            continue;
        }
        let p = list_price(&r.model).unwrap_or_else(|| panic!("no list price for {}", r.model));
        n += 1;
        // Usage and prices line up: input, 5m writes, 1h writes, reads.
        prompt += (0..4).map(|k| r.prompt[k] as f64 * p[k]).sum::<f64>() / 1e6;
        output += r.output as f64 * p[4] / 1e6;
    }
    (prompt, output, n)
}

fn claude_logs() -> Option<Vec<std::path::PathBuf>> {
    let dir = common::transcripts()?;
    let files: Vec<_> = common::transcript_files(&dir)
        .into_iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("claude_code")))
        .collect();
    Some(files)
}

#[test]
fn recorded_usage_dollars_match_list_prices_on_every_shared_session() {
    let Some(files) = claude_logs() else { return };
    assert!(!files.is_empty());
    let prices = ctxlab::cache::prices::table::PriceTable::builtin();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let (prompt, output, n) = recompute(&records(f));
        let recorded = ctxlab::tokens::recorded::read_file(f).unwrap();
        let bill = ctxlab::cache::bill::bill(&name, &recorded, &prices).unwrap();
        assert_eq!(bill.requests, n, "{name}: requests");
        let within = |lab: f64, ours: f64| (lab - ours).abs() <= 0.005 * ours.max(1e-9);
        assert!(
            within(bill.input_dollars, prompt),
            "{name}: prompt side {} vs {prompt}",
            bill.input_dollars
        );
        assert!(
            within(bill.output_dollars, output),
            "{name}: output {} vs {output}",
            bill.output_dollars
        );
        assert!(within(bill.dollars, prompt + output), "{name}: total");
        eprintln!(
            "{name}: {n} requests, ${:.4} (lab) vs ${:.4} (list prices)",
            bill.dollars,
            prompt + output
        );
    }
}

#[test]
fn the_default_price_data_covers_every_model_in_the_shared_logs() {
    let Some(dir) = common::transcripts() else {
        return;
    };
    let prices = ctxlab::cache::prices::table::PriceTable::builtin();
    let mut models = BTreeSet::new();
    for f in common::transcript_files(&dir) {
        let text = std::fs::read_to_string(&f).unwrap();
        // Every `"model": "…"` anywhere in the file, however nested.
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"model\"") {
            rest = &rest[at + 7..];
            let value = rest.trim_start().trim_start_matches(':').trim_start();
            if let Some(v) = value.strip_prefix('"') {
                models.insert(v[..v.find('"').unwrap()].to_string());
            }
        }
    }
    assert!(models.contains("claude-opus-4-6"), "{models:?}");
    for m in &models {
        assert!(prices.lookup(m).is_some(), "no price for {m}");
    }
}
