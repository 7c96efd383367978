//! The launchers under `scripts/launch/`: GNU parallel (local and over an
//! `--sshloginfile`), a Slurm array script and a Kubernetes Indexed Job.
//! Each one's parts merge into what the unsharded run prints, byte for
//! byte; the Job manifest validates against the batch/v1 Job schema.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const POLICIES: &str = "none,codex-cli,claude-code";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn launcher(name: &str) -> PathBuf {
    repo().join("scripts/launch").join(name)
}

fn whole(root: &str, format: &str) -> String {
    common::lab_ok(&["replay", root, "--policy", POLICIES, "--format", format])
}

fn has(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `scripts/launch/parallel.sh N OUT [extra…] -- lab replay ROOT …`: stdout;
/// `fresh`: every shard runs (and says which it is).
fn run_parallel(root: &str, out: &Path, extra: &[&str], fresh: bool) -> String {
    let lab = env!("CARGO_BIN_EXE_lab");
    let o = Command::new("bash")
        .arg(launcher("parallel.sh"))
        .arg("3")
        .arg(out)
        .args(extra)
        .args(["--", lab, "replay", root, "--policy", POLICIES])
        .env("MERGE_FORMAT", "markdown")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "parallel.sh: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    for i in 0..3 {
        let said = err.contains(&format!("shard {i}/3 from PARALLEL_SEQ={}", i + 1));
        assert_eq!(said, fresh, "{err}");
    }
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_gnu_parallel_launcher_merges_to_the_whole_run() {
    if !has("parallel", "--version") {
        println!("GNU parallel is not installed: scripts/launch/parallel.sh is not run here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 7);
    let expected = whole(&root, "markdown");
    assert!(expected.contains("| 7 "), "{expected}");
    let out = dir.path().join("run");
    assert_eq!(run_parallel(&root, &out, &[], true), expected);
    // Run again: the joblog says every shard is done, none is re-run.
    let before = std::fs::metadata(out.join("part-1.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(run_parallel(&root, &out, &[], false), expected);
    let after = std::fs::metadata(out.join("part-1.json"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(before, after, "a finished shard was run again");
    // Over an ssh login file; `:` is this machine (no sshd needed).
    let logins = common::write(dir.path(), "logins", ":\n");
    let remote = dir.path().join("remote");
    let logins = logins.to_string_lossy().into_owned();
    assert_eq!(
        run_parallel(&root, &remote, &["--sshloginfile", &logins], true),
        expected
    );
}

/// The array script's body run once per index, as `sbatch --array=0-N-1` would.
fn slurm_tasks(root: &str, out: &Path, n: usize) {
    for i in 0..n {
        let o = Command::new("bash")
            .arg(launcher("slurm.sbatch"))
            .env("CORPUS", root)
            .env("OUT", out)
            .env("SHARDS", n.to_string())
            .env("POLICY", POLICIES)
            .env("LAB", env!("CARGO_BIN_EXE_lab"))
            .env("SLURM_ARRAY_TASK_ID", i.to_string())
            .env_remove("JOB_COMPLETION_INDEX")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "task {i}: {err}");
        assert!(
            err.contains(&format!("shard {i}/{n} from SLURM_ARRAY_TASK_ID={i}")),
            "{err}"
        );
    }
}

fn merged(out: &Path, format: &str) -> String {
    let mut parts: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".json"))
        .collect();
    parts.sort();
    let mut args = vec!["replay", "--merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--format", format]);
    common::lab_ok(&args)
}

#[test]
fn the_slurm_array_script_merges_to_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 6);
    let out = dir.path().join("run");
    slurm_tasks(&root, &out, 4);
    assert_eq!(merged(&out, "json"), whole(&root, "json"));
    // A task outside the array's range is refused before anything is written.
    let o = Command::new("bash")
        .arg(launcher("slurm.sbatch"))
        .env("CORPUS", &root)
        .env("OUT", dir.path().join("bad"))
        .env("SHARDS", "4")
        .env("LAB", env!("CARGO_BIN_EXE_lab"))
        .env("SLURM_ARRAY_TASK_ID", "4")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("SLURM_ARRAY_TASK_ID=\"4\""));
    assert!(!dir.path().join("bad/part-4.json").exists());
}

/// Run a CI script of `scripts/launch/` (`LAB CORPUS WORKDIR POLICY
/// SHARDS`) under `timeout`: it exits 0 when its merge equals the
/// unsharded run, 77 (its reason printed) when it cannot start what it
/// needs; the daemons it starts it stops itself, and `timeout` bounds it.
fn ci_script(name: &str, secs: u32) {
    let dir = tempfile::tempdir().unwrap();
    let root = super::replay_jobs::mixed_corpus(dir.path(), 6);
    let o = Command::new("timeout")
        .args(["-k", "10", &secs.to_string(), "bash"])
        .arg(launcher(name))
        .arg(env!("CARGO_BIN_EXE_lab"))
        .arg(&root)
        .arg(dir.path().join("work"))
        .args([POLICIES, "3"])
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .output()
        .unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    match o.status.code() {
        Some(0) => assert!(out.contains("byte-identical"), "{out}"),
        Some(77) => println!("{name}: {}", out.trim()),
        code => panic!("{name} exited {code:?} (124: timed out after {secs} s):\n{out}\n{err}"),
    }
}

#[test]
fn the_slurm_array_script_runs_under_real_slurm() {
    if let Some(shared) = std::env::var_os("CTXLAB_SLURM") {
        // On a cluster's login node: the array is submitted there, the
        // corpus and the parts on a shared file system.
        let dir = tempfile::tempdir_in(shared).unwrap();
        let root = super::replay_jobs::mixed_corpus(dir.path(), 5);
        let out = dir.path().join("run");
        let status = Command::new("sbatch")
            .args(["--wait", "--array=0-2"])
            .arg(launcher("slurm.sbatch"))
            .env("CORPUS", &root)
            .env("OUT", &out)
            .env("SHARDS", "3")
            .env("POLICY", POLICIES)
            .env("LAB", env!("CARGO_BIN_EXE_lab"))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(merged(&out, "json"), whole(&root, "json"));
        return;
    }
    // Here: a single-node Slurm started (and stopped) by the script.
    ci_script("slurm_ci.sh", 180);
}

#[test]
fn the_gnu_parallel_launcher_runs_over_a_real_sshd() {
    ci_script("parallel_ssh_ci.sh", 120);
}

/// A YAML document as JSON (the manifest holds no anchors or tags).
fn to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use serde_json::Value;
    use yaml_rust2::Yaml;
    match y {
        Yaml::Real(r) => Value::from(r.parse::<f64>().unwrap()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::from(s.as_str()),
        Yaml::Boolean(b) => Value::from(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_string(), to_json(v)))
                .collect(),
        ),
        Yaml::Null => Value::Null,
        other => panic!("unexpected YAML node {other:?}"),
    }
}

fn job_schema_errors(job: &serde_json::Value) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("tests/replay/launch/job-batch-v1.schema.json"))
        .unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    validator
        .iter_errors(job)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn the_kubernetes_indexed_job_is_a_valid_batch_v1_job() {
    let text = std::fs::read_to_string(launcher("k8s-indexed-job.yaml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    assert_eq!(docs.len(), 1);
    let job = to_json(&docs[0]);
    let errors = job_schema_errors(&job);
    assert!(errors.is_empty(), "{errors:#?}");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    let command = spec["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap();
    assert!(command.contains(&format!("--shard auto/{n} ")), "{command}");
    assert!(command.contains("$JOB_COMPLETION_INDEX"), "{command}");
    // The schema catches a mistake: a misspelt field, a count as a string.
    let mut bad = job.clone();
    bad["spec"]["completionsMode"] = "Indexed".into();
    assert!(!job_schema_errors(&bad).is_empty());
    let mut bad = job.clone();
    bad["spec"]["completions"] = "8".into();
    assert!(!job_schema_errors(&bad).is_empty());
}

#[test]
fn the_kubernetes_job_command_merges_to_the_whole_run() {
    // The container's command, run once per index with the variable an
    // Indexed Job sets, over paths standing in for the volume.
    let text = std::fs::read_to_string(launcher("k8s-indexed-job.yaml")).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
    let job = to_json(&docs[0]);
    let n = job["spec"]["completions"].as_u64().unwrap();
    let command = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let root = super::replay_jobs::mixed_corpus(&data, 9);
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_lab"), bin.join("lab")).unwrap();
    let local = command
        .replace("/data/", &format!("{}/", data.display()))
        .replace(
            "--policy all --cost --retention",
            &format!("--policy {POLICIES}"),
        );
    for i in 0..n {
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let o = Command::new("/bin/sh")
            .args(["-c", &local])
            .env("PATH", path)
            .env("JOB_COMPLETION_INDEX", i.to_string())
            .env_remove("SLURM_ARRAY_TASK_ID")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "index {i}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(merged(&data.join("run"), "json"), whole(&root, "json"));
}
