//! Corpus input: directories, globs and tar archives of sessions, imported
//! one member at a time, summarised in one table; members that are not
//! sessions are reported by archive and member and the rest still imports.
//! On the shared mini-swe-agent corpus: a tool call for every bash action and
//! a tool result for every observation, counted here from the raw JSON.

use crate::common;
use common::{lab, transcripts};

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ctxlab::import::corpus::{expand, for_each_member, render, summarise, CorpusSummary, Item};
use ctxlab::import::{ActionShape, ImportOptions};
use ctxlab::policy::engine::{replay, Env, Session};
use ctxlab::render::Format;
use ctxlab::zoo::list;
use serde_json::{json, Value};

/// A mini-swe-agent trajectory of `steps` actions.
fn trajectory(steps: usize) -> String {
    let mut messages = vec![
        json!({"role": "system", "content": "sys"}),
        json!({"role": "user", "content": "task"}),
    ];
    for i in 0..steps {
        messages.push(
            json!({"role": "assistant", "content": format!("THOUGHT\n```bash\nstep {i}\n```")}),
        );
        messages.push(json!({"role": "user", "content": format!("<returncode>0</returncode>\n<output>\n{i}\n</output>")}));
    }
    serde_json::to_string_pretty(&json!({
        "info": {"exit_status": "Submitted", "mini_version": "1.15.0"},
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }))
    .unwrap()
}

/// The members of the generated corpus: three sessions (2, 3 and 4
/// actions), a CSV and a cut trajectory.
fn members() -> Vec<(&'static str, String)> {
    let cut = trajectory(3);
    vec![
        ("results.csv", "instance,resolved\na,1\n".to_string()),
        ("trajs/a/a.traj.json", trajectory(2)),
        ("trajs/b/b.traj.json", trajectory(3)),
        ("trajs/c/c.traj.json", trajectory(4)),
        ("trajs/d/d.traj.json", cut[..cut.len() / 2].to_string()),
    ]
}

fn tar_bytes() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, text) in members() {
        let mut h = tar::Header::new_gnu();
        h.set_size(text.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn unpacked(dir: &Path) -> PathBuf {
    let root = dir.join("unpacked");
    for (name, text) in members() {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    root
}

/// The corpus summary of `input`, and the table `lab import` prints for it.
fn summary_and_table(input: &Path) -> (CorpusSummary, String) {
    let inputs = expand(&[input.to_path_buf()]).unwrap();
    let summary = summarise(&inputs[0], &ImportOptions::default(), &mut |_| {}).unwrap();
    let table = render(&[(inputs[0].name.clone(), summary.clone())], Format::Table);
    (summary, table)
}

#[test]
fn an_archive_imports_member_by_member_and_reports_what_is_not_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let tgz = common::write(dir.path(), "corpus.tar.gz", &gz(&tar_bytes()));
    let (summary, table) = summary_and_table(&tgz);
    let (code, out, err) = lab(&["import", tgz.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, table);
    insta::assert_snapshot!(
        "corpus_generated",
        render(&[("corpus.tar.gz".into(), summary.clone())], Format::Table)
    );
    // Counted by hand: sessions of 2, 3 and 4 actions, and the cut one's
    // single whole step; the CSV is not a session.
    assert_eq!(
        (summary.sessions, summary.tool_calls, summary.tool_results),
        (4, 10, 10)
    );
    assert_eq!(summary.not_sessions, 1);
    // Each refused member is named by archive and member, with a position and a fix.
    let csv = format!("{}[results.csv]:1:1", tgz.display());
    assert!(err.contains(&csv), "{err}");
    assert!(err.contains("[trajs/d/d.traj.json]:"), "{err}");
    assert!(err.contains("fix:"), "{err}");
    // A plain tar, the unpacked directory and a glob give the same counts.
    let tar = common::write(dir.path(), "corpus.tar", &tar_bytes());
    let root = unpacked(dir.path());
    let glob = PathBuf::from(format!("{}/**/*", root.display()));
    for input in [tar, root, glob] {
        assert_eq!(summary_and_table(&input).0, summary, "{}", input.display());
    }
}

#[test]
fn a_damaged_archive_is_an_error_naming_it_after_the_members_it_read() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = gz(&tar_bytes());
    let cut = common::write(dir.path(), "cut.tar.gz", &bytes[..bytes.len() * 2 / 3]);
    let (code, _out, err) = lab(&["import", cut.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("cut.tar.gz"), "{err}");
    assert!(err.contains("cannot be read on"), "{err}");
    // A glob that matches nothing is a usage error.
    let none = format!("{}/*.nothing", dir.path().display());
    let (code, _out, err) = lab(&["import", &none]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no file matches"), "{err}");
}

#[test]
fn a_directory_is_expanded_recursively_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = unpacked(dir.path());
    let inputs = expand(std::slice::from_ref(&root)).unwrap();
    assert!(inputs[0].corpus);
    let names: Vec<String> = inputs[0]
        .items
        .iter()
        .map(|i| match i {
            Item::File(p) => p.strip_prefix(&root).unwrap().display().to_string(),
            Item::Archive(..) | Item::Parquet(_) => panic!("no archive here"),
        })
        .collect();
    assert_eq!(names, members().iter().map(|m| m.0).collect::<Vec<_>>());
}

/// (assistant actions, observations) of one mini-swe-agent trajectory,
/// counted from its JSON: a reply with exactly one "```bash\n" followed by
/// a closing "\n```" is an action; the user message right after it its observation.
fn count_actions(doc: &Value) -> (usize, usize) {
    let messages = doc["messages"].as_array().unwrap();
    let (mut actions, mut observations) = (0, 0);
    for (i, m) in messages.iter().enumerate() {
        let text = m["content"].as_str().unwrap_or_default();
        if m["role"] == "assistant"
            && text.matches("```bash\n").count() == 1
            && text.split("```bash\n").nth(1).unwrap().contains("\n```")
        {
            actions += 1;
            if messages.get(i + 1).is_some_and(|n| n["role"] == "user") {
                observations += 1;
            }
        }
    }
    (actions, observations)
}

/// Every member of the archive that is a trajectory: (member, counts).
fn raw_counts(archive: &Path) -> Vec<(String, (usize, usize))> {
    let file = std::io::BufReader::new(std::fs::File::open(archive).unwrap());
    let mut tar = tar::Archive::new(lzma_rust2::XzReader::new(file, true));
    let mut out = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().display().to_string();
        if !name.ends_with(".traj.json") {
            continue;
        }
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        out.push((name, count_actions(&serde_json::from_str(&text).unwrap())));
    }
    out
}

const CORPUS: &str = "corpus/mini-swe-agent__gemini-3-pro-swebench-verified-500.tar.xz";

#[test]
fn the_shared_corpus_has_a_tool_call_for_every_action_and_a_result_for_every_observation() {
    let Some(dir) = transcripts() else { return };
    let archive = dir.join(CORPUS);
    if !archive.is_file() {
        eprintln!("SKIP: {} not found", archive.display());
        return;
    }
    let expected = raw_counts(&archive);
    assert_eq!(expected.len(), 500);
    let mut seen = Vec::new();
    let mut masked = 0;
    let mut summary = CorpusSummary::default();
    let item = Item::Archive(archive.clone(), ctxlab::import::corpus::Compression::Xz);
    for_each_member(&item, &ImportOptions::default(), false, |m| {
        let Ok(sessions) = m.sessions else {
            summary.not_sessions += 1;
            return Ok(());
        };
        let s = &sessions[0];
        summary.add(s);
        let sum = s.summary();
        assert_eq!(s.action_shape, ActionShape::TextActions, "{}", s.label);
        assert!(s.diagnostics.is_empty(), "{}: {:?}", s.label, s.diagnostics);
        seen.push((s.label.clone(), (sum.main_tool_uses, sum.main_tool_results)));
        // swe-agent-mask-10 elides observations on the first few sessions.
        if masked < 3 && sum.main_tool_results > 12 {
            masked += 1;
            let session = |messages| Session {
                name: "corpus",
                messages,
                times_ms: None,
            };
            let mut env = Env::default();
            let none = replay(
                list::make("none").unwrap().as_mut(),
                session(&s.main),
                &mut env,
            )
            .unwrap();
            let mask = replay(
                list::make("swe-agent-mask-10").unwrap().as_mut(),
                session(&s.main),
                &mut Env::default(),
            )
            .unwrap();
            let last = |r: &ctxlab::policy::engine::PolicyRun| r.calls.last().unwrap().chars;
            assert!(last(&mask) < last(&none), "{}", s.label);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(masked, 3);
    assert_eq!(seen, expected);
    let total: (usize, usize) = expected
        .iter()
        .fold((0, 0), |a, (_, (x, y))| (a.0 + x, a.1 + y));
    assert_eq!(total, (19_479, 19_479));
    // `lab import` prints the same counts in one row, and names the four
    // result files beside the trajectories without failing.
    let (code, out, err) = lab(&["import", archive.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("skipped, not a session").count(), 4, "{err}");
    let name = archive.display().to_string();
    assert_eq!(out, render(&[(name, summary.clone())], Format::Table));
    let name = archive.file_name().unwrap().to_string_lossy().into_owned();
    insta::assert_snapshot!(
        "corpus_shared_mini_swe_agent",
        render(&[(name, summary)], Format::Markdown)
    );
}

#[test]
fn replay_reads_an_archive_member_by_member() {
    let dir = tempfile::tempdir().unwrap();
    let tgz = common::write(dir.path(), "corpus.tar.gz", &gz(&tar_bytes()));
    let (code, out, err) = lab(&["replay", tgz.to_str().unwrap(), "--profile", "hardened"]);
    assert_eq!(code, 0, "{err}");
    for member in [
        "trajs/a/a.traj.json",
        "trajs/c/c.traj.json",
        "trajs/d/d.traj.json",
    ] {
        assert!(out.contains(member), "{member}: {out}");
    }
    assert!(err.contains("[results.csv]:1:1"), "{err}");
    // The policy replays stream a corpus, a glob or an archive alike: one
    // aggregate row per policy; --per-session names each session.
    let glob = format!("{}/trajs/**/*.traj.json", unpacked(dir.path()).display());
    let (code, out, err) = lab(&[
        "replay",
        &glob,
        "--policy",
        "swe-agent-mask-10",
        "--per-session",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("c.traj.json"), "{out}");
    let (code, out, err) = lab(&["replay", tgz.to_str().unwrap(), "--policy", "none"]);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("│ none "))
        .expect("a row for none");
    assert!(
        row.contains("┆ 4 "),
        "four sessions, as the glob finds: {out}"
    );
    assert!(err.contains("[results.csv]"), "{err}");
    assert!(out.contains("not replayed"), "{out}");
}
