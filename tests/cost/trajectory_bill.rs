//! Recorded dollars of the shared mini-swe-agent corpus (500 SWE-bench runs
//! of Gemini 3 Pro through OpenRouter) against the provider's own bill.
//!
//! Every reply keeps its raw API response; its `usage` carries the prompt,
//! cached and completion tokens, and (from OpenRouter) `cost`: what the call
//! was charged. Three figures per trajectory must agree within 0.5 %:
//! - the lab's bill (`tokens::recorded::trajectory` read by
//!   `cache::bill::bill` at the built-in price data),
//! - a recomputation written here from the raw JSON and list prices typed
//!   below, sharing no code with the lab,
//! - the provider's charge, where every reply of the trajectory records one
//!   (the lab's `charged` must then be that sum).
//!
//! The corpus is unpacked with `tar -xJf` into a temporary directory, as its
//! README says; the test skips, saying why, without the corpus or `tar`.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Gemini 3 Pro Preview list prices in dollars per million tokens, typed
/// from Google's pricing page (ai.google.dev/gemini-api/docs/pricing, read
/// 2026-12-04): (input, cache read, output) for prompts up to 200k tokens,
/// and the higher tier above.
const GEMINI_3_PRO: [(f64, f64, f64); 2] = [(2.0, 0.2, 12.0), (4.0, 0.4, 18.0)];

fn list_price(model: &str) -> [(f64, f64, f64); 2] {
    match model {
        "google/gemini-3-pro-preview" | "gemini-3-pro-preview" => GEMINI_3_PRO,
        other => panic!("no typed price for {other}"),
    }
}

/// The corpus unpacked into a temporary directory, or why not.
pub(crate) fn unpacked() -> Option<(tempfile::TempDir, Vec<PathBuf>)> {
    let dir = common::transcripts()?.join("corpus");
    let archive = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.xz"))?;
    let out = tempfile::tempdir().unwrap();
    let ok = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(out.path())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "SKIP: `tar -xJf {}` failed (no tar or xz here)",
            archive.display()
        );
        return None;
    }
    let mut files = Vec::new();
    walk(out.path(), &mut files);
    files.sort();
    Some((out, files))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.to_string_lossy().ends_with(".traj.json") {
            out.push(p);
        }
    }
}

/// (requests, recomputed dollars, the provider's charge when every reply has one).
fn recompute(path: &Path) -> (usize, f64, Option<f64>) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut n, mut dollars, mut charged) = (0, 0.0, Some(0.0));
    for m in doc["messages"].as_array().unwrap() {
        let response = &m["extra"]["response"];
        let u = &response["usage"];
        if m["role"] != "assistant" || !u.is_object() {
            continue;
        }
        let count = |k: &str| u.pointer(k).and_then(Value::as_u64).unwrap_or(0) as f64;
        let (prompt, cached) = (
            count("/prompt_tokens"),
            count("/prompt_tokens_details/cached_tokens"),
        );
        let tier = list_price(response["model"].as_str().unwrap())[usize::from(prompt > 200_000.0)];
        dollars +=
            ((prompt - cached) * tier.0 + cached * tier.1 + count("/completion_tokens") * tier.2)
                / 1e6;
        charged = charged.zip(u["cost"].as_f64()).map(|(a, b)| a + b);
        n += 1;
    }
    (n, dollars, charged)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.005 * b.abs().max(1e-9)
}

#[test]
fn every_corpus_run_is_billed_as_the_provider_charged_it() {
    let Some((_dir, files)) = unpacked() else {
        return;
    };
    let prices = ctxlab::cache::prices::table::PriceTable::builtin();
    let (mut requests, mut with_charge) = (0, 0);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let recorded = ctxlab::tokens::recorded::trajectory::read_trajectory(f).unwrap();
        let bill = ctxlab::cache::bill::bill(&name, &recorded, &prices).unwrap();
        let (n, dollars, charged) = recompute(f);
        assert_eq!(recorded.len(), n, "{name}");
        assert!(
            close(bill.dollars, dollars),
            "{name}: lab {} vs recomputed {dollars}",
            bill.dollars
        );
        match (charged, bill.charged) {
            (Some(c), Some(lab)) if n > 0 => {
                assert!(
                    close(dollars, c),
                    "{name}: list prices {dollars} vs charged {c}"
                );
                assert!(close(lab, c), "{name}: lab's charge {lab} vs {c}");
                with_charge += 1;
            }
            (None, None) => {}
            (c, lab) => assert!(n == 0, "{name}: charged {c:?} vs lab's {lab:?}"),
        }
        requests += n;
    }
    eprintln!(
        "{} trajectories, {requests} requests, {with_charge} with the provider's charge on every reply",
        files.len()
    );
    // The corpus README counts 500 runs and 20,163 API calls.
    assert_eq!(files.len(), 500);
    assert_eq!(requests, 20_163);
    assert!(with_charge > 400, "{with_charge}");
}

/// A trajectory whose reply reports more cached than prompt tokens is
/// refused at the line and column of that reply, with a fix.
#[test]
fn inconsistent_usage_names_the_line_of_the_reply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.traj.json");
    let messages = [
        serde_json::json!({"role": "system", "content": "You are a helpful assistant."}),
        serde_json::json!({"role": "user", "content": "Fix the bug."}),
        serde_json::json!({"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls\n```", "extra": {"response": {
            "id": "gen-1", "model": "google/gemini-3-pro-preview",
            "usage": {"prompt_tokens": 10, "completion_tokens": 3,
                      "prompt_tokens_details": {"cached_tokens": 11}}}}}),
        serde_json::json!({"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"}),
    ];
    // One message per line: the reply is on line 4.
    let body: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
    let text = format!(
        "{{\"trajectory_format\": \"mini-swe-agent-1\", \"info\": {{}}, \"messages\": [\n{}\n]}}\n",
        body.join(",\n")
    );
    std::fs::write(&path, text).unwrap();
    let err = ctxlab::tokens::recorded::trajectory::read_trajectory(&path).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("bad.traj.json:4:1"), "{text}");
    assert!(text.contains("11 cached prompt tokens of 10"), "{text}");
    assert_eq!(err.exit_code(), 3, "{text}");
}

/// A cut trajectory gives the replies before the cut (the import reports
/// the damage), rather than failing the replay.
#[test]
fn a_cut_trajectory_gives_the_replies_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.traj.json");
    let reply = serde_json::json!({"role": "assistant", "content": "THOUGHT: go.\n\n```bash\nls\n```",
        "extra": {"response": {"id": "gen-1", "model": "google/gemini-3-pro-preview",
            "usage": {"prompt_tokens": 100, "completion_tokens": 3}}}});
    let text = format!(
        "{{\"messages\": [{}, {}, {}, {{\"role\": \"user\", \"content\": \"<returncode>0</retur",
        serde_json::json!({"role": "system", "content": "s"}),
        serde_json::json!({"role": "user", "content": "Fix the bug."}),
        reply
    );
    std::fs::write(&path, text).unwrap();
    let r = ctxlab::tokens::recorded::trajectory::read_trajectory(&path).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].usage.input_tokens, 100);
}

/// The lab's reading of a well-formed reply: uncached = prompt − cached,
/// reads = cached, output = completion, the charge kept, priced through the
/// router's `google/` prefix.
#[test]
fn a_reply_reads_as_one_priced_request_with_its_charge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ok.traj.json");
    let reply = |id: &str, prompt: u64, cached: u64, cost: f64| {
        serde_json::json!({"role": "assistant", "content": "THOUGHT: go.\n\n```bash\nls\n```",
            "extra": {"response": {"id": id, "model": "google/gemini-3-pro-preview", "created": 1_763_511_117,
                "usage": {"prompt_tokens": prompt, "completion_tokens": 100, "cost": cost,
                          "prompt_tokens_details": {"cached_tokens": cached}}}}})
    };
    let obs = serde_json::json!({"role": "user", "content": "<returncode>0</returncode>\n<output>\na\n</output>"});
    let doc = serde_json::json!({
        "trajectory_format": "mini-swe-agent-1", "info": {},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug."},
            reply("gen-1", 1_000, 0, 0.0032), obs.clone(),
            reply("gen-2", 2_000, 1_000, 0.0034), obs
        ]
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    let r = ctxlab::tokens::recorded::trajectory::read_trajectory(&path).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (r[1].usage.input_tokens, r[1].usage.cache_read_input_tokens),
        (1_000, 1_000)
    );
    assert_eq!(r[1].billing.output_tokens, 100);
    assert_eq!(r[1].at_ms, Some(1_763_511_117_000));
    // The second request sent the task, the first reply and its result.
    assert_eq!(r[0].messages.len(), 1);
    assert_eq!(r[1].messages.len(), 3);
    let prices = ctxlab::cache::prices::table::PriceTable::builtin();
    let bill = ctxlab::cache::bill::bill("ok.traj.json", &r, &prices).unwrap();
    // 1,000 in at $2 + 100 out at $12; 1,000 in + 1,000 read at $0.20 + 100 out.
    assert!(close(bill.dollars, 0.0032 + 0.0034), "{bill:?}");
    assert!(close(bill.charged.unwrap(), 0.0066), "{bill:?}");
}
