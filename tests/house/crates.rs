//! The workspace's crates are the layers: each depends (for its library)
//! only on the crates below it, read from `cargo metadata` so that the
//! check is Cargo's own view of the build, not a parse of the sources.
//! Dev-dependencies may reach up (the zoo's unit tests price a request with
//! `ctxlab-measure`), since they never enter a library build.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::import_graph::CRATES;

/// `cargo metadata` for this host, run once for every test of this file
/// (each run resolves the whole dependency graph: seconds, not free).
fn metadata() -> &'static Value {
    static META: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    META.get_or_init(|| {
        // The packages built here: windows-only crates in the lock file are
        // neither downloaded nor built on this host.
        let rustc = Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc runs");
        let host = String::from_utf8_lossy(&rustc.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
            .expect("rustc -vV names its host");
        let out = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--offline", "--locked"])
            .args(["--filter-platform", &host])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    })
}

/// Each workspace member with its `ctxlab-*` library dependencies.
fn members() -> BTreeMap<String, Vec<(String, Option<String>)>> {
    let meta = metadata();
    let ours: Vec<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| ours.contains(&p["id"].as_str().unwrap_or("")))
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["name"].as_str().unwrap().starts_with("ctxlab"))
                .map(|d| {
                    (
                        d["name"].as_str().unwrap().to_string(),
                        d["kind"].as_str().map(str::to_string),
                    )
                })
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

#[test]
fn the_crate_list_is_the_workspace() {
    let names: Vec<&str> = CRATES.iter().map(|c| c.0).collect();
    let mut listed = names.clone();
    listed.sort_unstable();
    let found: Vec<String> = members().into_keys().collect();
    assert_eq!(
        listed, found,
        "tests/house/import_graph.rs CRATES must list every workspace member"
    );
}

#[test]
fn no_crate_depends_on_a_higher_layer() {
    let order: Vec<&str> = CRATES.iter().map(|c| c.0).collect();
    let mut up = Vec::new();
    for (name, deps) in members() {
        let me = order.iter().position(|n| *n == name).unwrap();
        for (dep, kind) in deps {
            let them = order.iter().position(|n| *n == dep).unwrap();
            if kind.as_deref() != Some("dev") && them >= me {
                up.push(format!("{name} -> {dep}"));
            }
        }
    }
    assert!(
        up.is_empty(),
        "library dependencies that run back up: {up:?}"
    );
}

/// A change to one port rebuilds the zoo and the binary crate only: no
/// other library depends on `ctxlab-zoo` (`make bench` times the rebuild).
#[test]
fn only_the_binary_crate_builds_on_the_zoo() {
    let on_zoo: Vec<String> = members()
        .into_iter()
        .filter(|(_, deps)| {
            deps.iter()
                .any(|(d, kind)| d == "ctxlab-zoo" && kind.as_deref() != Some("dev"))
        })
        .map(|(n, _)| n)
        .collect();
    assert_eq!(on_zoo, vec!["ctxlab".to_string()]);
}

/// `rust-version` in Cargo.toml (1.88: proptest 1.12, sha2 0.11 and encoding_rs 0.8.44
/// need it) is a promise: every package the
/// build pulls in must declare a minimum at or below it. (Clippy's
/// `incompatible_msrv`, denied in `make lint`, checks the standard library
/// calls of the workspace's own code against the same number.)
#[test]
fn every_dependency_builds_on_the_declared_minimum_rust() {
    let meta = metadata();
    let version = |v: &str| -> (u32, u32) {
        let mut p = v.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
        (p.next().unwrap_or(0), p.next().unwrap_or(0))
    };
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "ctxlab")
        .and_then(|p| p["rust_version"].as_str())
        .expect("ctxlab declares rust-version");
    let msrv = version(ours);
    // Only what the build resolves: the lock file may list packages of
    // other platforms, but `resolve` holds the nodes actually built.
    let built: std::collections::BTreeSet<&str> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    let newer: Vec<String> = packages
        .iter()
        .filter(|p| built.contains(p["id"].as_str().unwrap_or("")))
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            (version(v) > msrv).then(|| format!("{} {} needs {v}", p["name"], p["version"]))
        })
        .collect();
    assert!(
        newer.is_empty(),
        "dependencies newer than rust-version {ours}: {newer:?}"
    );
}
