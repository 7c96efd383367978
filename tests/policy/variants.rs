//! Policy variants: a built-in policy with constants overridden by their
//! upstream names, inline or from a TOML file.

use crate::common::{lab, lab_ok};

use ctxlab::message::{Block, Message};
use serde_json::{json, Value};

/// Twenty tool calls of 1,600 chars (under codex-cli's output caps): about 8k approx tokens.
fn session() -> Vec<Message> {
    let mut out = vec![Message::user_text("refactor the parser")];
    for t in 0..20 {
        let id = format!("call_{t:03}");
        out.push(Message::assistant(vec![Block::ToolUse {
            id: id.clone(),
            name: "shell".into(),
            input: json!({"command": format!("cat src/p{t}.rs")}).into(),
        }]));
        out.push(Message::tool_results(vec![(
            id,
            format!("line {t}\n").repeat(200),
        )]));
    }
    out.push(Message::assistant(vec![Block::Text {
        text: "done".into(),
    }]));
    out
}

fn runs(dir: &tempfile::TempDir, policies: &str) -> Vec<Value> {
    let file = dir.path().join("s.json");
    std::fs::write(&file, serde_json::to_string(&session()).unwrap()).unwrap();
    let out = lab_ok(&[
        "replay",
        file.to_str().unwrap(),
        "--policy",
        policies,
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["runs"].as_array().unwrap().clone()
}

fn peak(run: &Value) -> u64 {
    run["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["chars"].as_u64().unwrap())
        .max()
        .unwrap()
}

#[test]
fn a_smaller_window_makes_the_port_compact_and_the_row_carries_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let r = runs(&dir, "codex-cli,codex-cli:context_window=6000");
    assert_eq!(r[0]["policy"], "codex-cli");
    assert_eq!(r[1]["policy"], "codex-cli:context_window=6000");
    assert_eq!(
        r[0]["events"].as_array().unwrap().len(),
        0,
        "the default never compacts here"
    );
    assert!(
        !r[1]["events"].as_array().unwrap().is_empty(),
        "the variant compacts"
    );
    assert!(peak(&r[1]) < peak(&r[0]));
}

#[test]
fn a_variant_file_is_the_same_variant() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("small.toml");
    std::fs::write(&toml, "context_window = 6000\n").unwrap();
    let spec = format!("codex-cli:{}", toml.display());
    let r = runs(&dir, &format!("codex-cli:context_window=6000,{spec}"));
    let strip = |v: &Value| {
        let mut v = v.clone();
        v["policy"] = Value::Null;
        v
    };
    assert_eq!(strip(&r[0]), strip(&r[1]));
}

#[test]
fn course_profiles_take_their_switches_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let r = runs(&dir, "course-main,course-main:context_char_limit=20000");
    assert!(
        peak(&r[1]) < peak(&r[0]),
        "{} vs {}",
        peak(&r[1]),
        peak(&r[0])
    );
}

#[test]
fn unknown_constants_wrong_values_and_fixed_policies_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(&file, serde_json::to_string(&session()).unwrap()).unwrap();
    let f = file.to_str().unwrap();
    let cases = [
        (
            "codex-cli:context_windw=5",
            "unknown constant `context_windw`; known: ",
        ),
        ("codex-cli:context_window=many", "bad value"),
        (
            "openhands-recent:max_evnts=5",
            "unknown constant `max_evnts`; known: ",
        ),
        ("codex-cli:=1", "an override without a name"),
    ];
    for (spec, want) in cases {
        let (code, out, err) = lab(&["replay", f, "--policy", spec]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(out.is_empty(), "{spec}");
        assert!(err.contains(want), "{spec}: {err}");
    }
}

#[test]
fn policies_with_a_table_of_switches_take_variants() {
    for spec in [
        "langchain-clear-tool-uses:keep=7",
        "langchain-summarization:keep_messages=5",
        "vercel-prune-messages:reasoning=all",
        "goose-auto-compact:threshold=0.5",
        "aider-chat-summary:max_tokens=4096",
        "roo-code-auto-condense:auto_condense_context_percent=50",
        "openai-realtime-auto:retention_ratio=0.5",
        "openhands-recent:max_events=5",
        "openhands-observation-masking:max_message_chars=1000",
    ] {
        let base = spec.split(':').next().unwrap();
        let default = ctxlab::zoo::list::make(base).unwrap().info();
        let variant = ctxlab::zoo::list::make(spec).unwrap().info();
        assert_eq!(variant.name, spec);
        assert_ne!(
            variant.constants, default.constants,
            "{spec} changed nothing it lists"
        );
        let unknown = format!("{base}:no_such_constant=1");
        let err = ctxlab::zoo::list::make(&unknown).err().unwrap().to_string();
        assert!(err.contains("known: "), "{unknown}: {err}");
    }
}

/// A comma or colon inside a variant's JSON value belongs to the value:
/// `--policy 'P:exclude_tools=["a:b","Read"],none'` is two policies.
#[test]
fn json_values_keep_their_commas_and_colons() {
    let dir = tempfile::tempdir().unwrap();
    let spec = r#"anthropic-clear-tool-uses:exclude_tools=["mcp:x","Read"]"#;
    let runs = runs(&dir, &format!("{spec},none"));
    let names: Vec<&str> = runs.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, [spec, "none"]);
}

#[test]
fn every_listed_variant_key_is_accepted_and_others_are_refused() {
    let listed: Vec<Value> =
        serde_json::from_str(&lab_ok(&["policies", "--format", "json"])).unwrap();
    let mut keys_seen = 0;
    for p in &listed {
        let name = p["name"].as_str().unwrap();
        let keys = p["variant_keys"].as_array().unwrap();
        for k in keys {
            let key = k["key"].as_str().unwrap();
            let default = serde_json::to_string(&k["default"]).unwrap();
            let spec = format!("{name}:{key}={default}");
            let policy = ctxlab::zoo::list::make(&spec)
                .unwrap_or_else(|e| panic!("{spec}: a listed key is refused: {e}"));
            // The variant lists the same key at the same value.
            assert_eq!(policy.variant_keys()[key], k["default"], "{spec}");
            keys_seen += 1;
        }
        // A key that is not listed is refused, whatever the policy.
        let spec = format!("{name}:no_such_key_anywhere=1");
        assert!(ctxlab::zoo::list::make(&spec).is_err(), "{spec}");
        // A constant the policy names but does not list (an upstream name a
        // variant cannot set) is refused too.
        let listed_keys: Vec<&str> = keys.iter().map(|k| k["key"].as_str().unwrap()).collect();
        if let Some(constants) = p["constants"].as_object() {
            for c in constants
                .keys()
                .filter(|c| !listed_keys.contains(&c.as_str()))
            {
                if c.contains(' ') || c.contains('(') {
                    continue; // a description ("model input limit"), not a key
                }
                let spec = format!("{name}:{c}=1");
                assert!(
                    ctxlab::zoo::list::make(&spec).is_err(),
                    "{spec}: accepted but not listed in variant_keys"
                );
            }
        }
    }
    assert!(keys_seen > 150, "only {keys_seen} variant keys listed");
    // The key the issue named: codex-cli's trigger is set by its own name.
    let codex = listed.iter().find(|p| p["name"] == "codex-cli").unwrap();
    let codex_keys = codex["variant_keys"].as_array().unwrap();
    let limit = codex_keys
        .iter()
        .find(|k| k["key"] == "auto_compact_token_limit")
        .expect("codex-cli lists auto_compact_token_limit");
    assert_eq!(limit["type"], "optional", "{limit}");
    assert!(codex_keys.iter().all(|k| k["key"] != "auto_compact_at"));
}
