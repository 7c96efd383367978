//! Bad input files and output paths through the `lab` binary: exit codes,
//! positions in characters, the schema a mistake is reported against, and
//! nothing left behind.

use crate::common;
use common::{lab_lossy as lab, write};

use std::path::{Path, PathBuf};

fn shipped(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(name),
    )
    .unwrap()
}

#[test]
fn invalid_utf8_and_binary_scenarios_exit_3_with_a_position() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "bin.json", b"{\"schema\":\n \"\xFF\xFE\"}");
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("bin.json:2:3: not UTF-8 text"), "{err}");
    let p = write(d.path(), "nul.json", b"\0\0\0");
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("nul.json:1:1:"), "{err}");
}

#[test]
fn a_bom_is_accepted() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    // A memory scenario: it embeds no path, so any TMPDIR works.
    bytes.extend(shipped("memory/dedup_off.json"));
    let p = write(d.path(), "bom.json", &bytes);
    let (code, out, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("PASS"), "{out}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "e.json", "{\"name\": \"ééééé\", x}".as_bytes());
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("e.json:1:19:"), "{err}");
}

#[test]
fn a_memory_scenario_mistake_is_reported_against_the_memory_schema() {
    let d = tempfile::tempdir().unwrap();
    let p = write(
        d.path(),
        "m.json",
        b"{\"schema\": \"ctxlab.memory-scenario/2\", \"sessions\": [],}",
    );
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(!err.contains("ctxlab.scenario/1"), "{err}");
    assert!(err.contains("scenarios/memory"), "{err}");
    let p = write(
        d.path(),
        "m2.json",
        b"{\"schema\": \"ctxlab.memory-scenario/2\", \"sessions\": []}",
    );
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("expected \"ctxlab.memory-scenario/1\""),
        "{err}"
    );
}

#[test]
fn an_unknown_field_is_not_blamed_on_the_previous_one() {
    let d = tempfile::tempdir().unwrap();
    let text = "{\"schema\": \"ctxlab.memory-scenario/1\", \"sessions\": [{\"turns\": [\n  {\"user\": \"hi\", \"assistant\": \"ok\", \"replly\": 1}]}]}";
    let p = write(d.path(), "m.json", text.as_bytes());
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("unknown field `replly`"), "{err}");
    assert!(!err.contains("(in field `assistant`)"), "{err}");
}

#[test]
fn a_too_short_path_len_in_a_file_exits_3_citing_the_field() {
    let d = tempfile::tempdir().unwrap();
    let text = String::from_utf8(shipped("probe-intact.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["path_len"] = serde_json::json!([5]);
    v["expect"] = serde_json::json!({});
    let p = write(d.path(), "short.json", v.to_string().as_bytes());
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("short.json:") && err.contains("field `path_len`: 5 is outside"),
        "{err}"
    );
    assert!(!err.contains("--path-len"), "{err}");
    assert!(!err.contains(":0"), "{err}");
}

#[cfg(unix)]
#[test]
fn devices_and_directories_are_refused_not_read() {
    let (code, _, err) = lab(&["run", "/dev/zero"]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = lab(&["replay", "/dev/zero"]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = lab(&["import", "/dev/zero"]);
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = lab(&["sweep", "--merge", "/dev/zero"]);
    assert_eq!(code, 3, "{err}");
    let d = tempfile::tempdir().unwrap();
    let (code, _, err) = lab(&["run", d.path().to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("regular file"), "{err}");
}

#[test]
fn output_paths_in_missing_directories_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("typo");
    let reports = missing.join("reports");
    let (code, _, err) = lab(&["reports", "--out", reports.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    let out = missing.join("h.json");
    let (code, _, err) = lab(&["hunt", "--break", "D6", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(!missing.exists(), "no directory is created");
}

#[test]
fn readme_write_says_unchanged_when_nothing_changed() {
    let d = tempfile::tempdir().unwrap();
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
    let p = d.path().join("README.md");
    std::fs::write(
        &p,
        "# x\n\n<!-- registry:begin (generated by `make readme`) -->\nold\n<!-- registry:end -->\n",
    )
    .unwrap();
    let (code, out, err) = lab(&["readme", "--write", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("updated "), "{out}");
    let (code, out, _) = lab(&["readme", "--write", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(out.starts_with("unchanged "), "{out}");
    assert!(readme.exists());
    let names: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temp file left: {names:?}");
}

fn probe_with(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let text = String::from_utf8(shipped("probe-intact.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut v);
    write(
        dir,
        name,
        serde_json::to_string_pretty(&v).unwrap().as_bytes(),
    )
}

#[test]
fn a_bad_set_entry_gives_one_error_and_one_fix_line() {
    let d = tempfile::tempdir().unwrap();
    let p = probe_with(d.path(), "set.json", |v| {
        v["set"] = serde_json::json!({"nope": 1})
    });
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert_eq!(err.matches("fix:").count(), 1, "{err}");
    assert!(
        err.contains("field `set.nope`: unknown switch or constant"),
        "{err}"
    );
}

#[test]
fn a_call_needs_exactly_one_of_chars_and_text() {
    let d = tempfile::tempdir().unwrap();
    let p = probe_with(d.path(), "neither.json", |v| {
        let call = v["script"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find_map(|a| a.get_mut("assistant").and_then(|t| t.get_mut("calls")))
            .and_then(|c| c.get_mut(0))
            .unwrap();
        let obj = call.as_object_mut().unwrap();
        obj.remove("chars");
        obj.remove("text");
    });
    let (code, _, err) = lab(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("has neither chars and text"), "{err}");
}

#[test]
fn ids_and_profiles_share_one_case_rule() {
    // A path length long enough for any TMPDIR up to ~200 chars.
    let (a, out_a, err) = lab(&["break", "d6", "--path-len", "250"]);
    let (b, out_b, _) = lab(&["break", "D6", "--path-len", "250"]);
    assert_eq!((a, b), (0, 0), "{err}");
    assert_eq!(out_a, out_b);
    let (a, out_a, err) = lab(&["probe", "--profile", "SEED", "--path-len", "250"]);
    let (b, out_b, _) = lab(&["probe", "--profile", "seed", "--path-len", "250"]);
    assert_eq!((a, b), (0, 0), "{err}");
    assert_eq!(out_a.replace("SEED", "seed"), out_b);
    let (code, _, err) = lab(&["probe", "--profile", "Prototype", "--path-len", "250"]);
    assert_eq!(code, 0, "{err}");
}
