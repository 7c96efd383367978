//! The two live-upstream external policies (`examples/policies/`) against
//! the built-in ports of the same designs, on every shared session: the
//! same requests call by call, the same verdicts. They run where
//! `scripts/exec_examples.sh` installed their packages (`.ci/run` does);
//! elsewhere each says why it skips.

use std::path::{Path, PathBuf};

use crate::common;
use serde_json::Value;

/// Where `scripts/exec_examples.sh` installs.
fn installed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/exec-examples")
}

/// The command of an example, or `None` after saying why it cannot run.
fn example(name: &str) -> Option<String> {
    let dir = installed();
    let repo = env!("CARGO_MANIFEST_DIR");
    let (ready, cmd) = match name {
        "langchain" => (
            dir.join("langchain/bin/python").is_file(),
            format!(
                "{}/langchain/bin/python {repo}/examples/policies/langchain_clear_tool_uses.py",
                dir.display()
            ),
        ),
        _ => (
            dir.join("ai/node_modules/ai/package.json").is_file(),
            format!(
                "AI_SDK_NODE_MODULES={}/ai/node_modules node {repo}/examples/policies/ai_sdk_prune_messages.mjs",
                dir.display()
            ),
        ),
    };
    if !ready {
        eprintln!(
            "SKIP: the {name} example's package is not installed in {}: run `sh scripts/exec_examples.sh` (needs PyPI/npm)",
            dir.display()
        );
        return None;
    }
    Some(cmd)
}

/// Every shared session a replay takes one file at a time: the Claude Code
/// and OpenAI-format logs and the aider history. The SWE-bench corpus is an
/// archive, which `--policy` refuses (its members are the same format as
/// the SWE-agent trajectory).
fn sessions(dir: &Path) -> Vec<PathBuf> {
    let mut files = common::transcript_files(dir);
    if let Ok(aider) = std::fs::read_dir(dir.join("aider")) {
        files.extend(aider.map(|e| e.unwrap().path()));
    }
    files
}

/// What a run must share with its port: each call's size and events, the
/// checker's findings, invalid requests and how it ended.
fn verdict(run: &Value) -> Value {
    let calls: Vec<Value> = run["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            serde_json::json!([
                c["chars"],
                c["tokens"],
                c["messages"],
                c["events"],
                c["violations"]
            ])
        })
        .collect();
    serde_json::json!({
        "calls": calls,
        "findings": run["findings"],
        "invalid": run["invalid_requests"],
        "ended": run["ended_by_error"],
        "events": run["events"].as_array().map(Vec::len),
    })
}

fn agrees_with_port(example_name: &str, port: &str) {
    let (Some(dir), Some(cmd)) = (common::transcripts(), example(example_name)) else {
        return;
    };
    let spec = format!("exec:{cmd}");
    let mut acted = 0;
    for file in sessions(&dir) {
        let f = file.to_str().unwrap();
        let out = common::lab_ok(&[
            "replay", f, "--policy", port, "--policy", &spec, "--format", "json", "--jobs", "1",
        ]);
        let v: Value = serde_json::from_str(&out).unwrap();
        let runs = v["runs"].as_array().unwrap();
        // A file may hold several sessions (aider's history): each is
        // replayed under the port, then under the example.
        let of = |p: &str| -> Vec<&Value> { runs.iter().filter(|r| r["policy"] == p).collect() };
        let (builtins, lives) = (of(port), of(&spec));
        assert_eq!(builtins.len(), lives.len(), "{f}");
        assert!(!builtins.is_empty(), "{f}");
        for (builtin, live) in builtins.into_iter().zip(lives) {
            assert_eq!(builtin["session"], live["session"], "{f}");
            assert_eq!(
                verdict(builtin),
                verdict(live),
                "{f} {}: {port} against {example_name}",
                live["session"]
            );
            acted += usize::from(!builtin["events"].as_array().unwrap().is_empty());
        }
    }
    // The comparison means something only where the design acted.
    assert!(acted >= 2, "{port} acted on {acted} sessions");
}

#[test]
fn langchain_clear_tool_uses_live_matches_the_port() {
    agrees_with_port("langchain", "langchain-clear-tool-uses");
}

#[test]
fn ai_sdk_prune_messages_live_matches_the_port() {
    agrees_with_port("ai", "vercel-prune-messages");
}
