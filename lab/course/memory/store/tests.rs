use std::sync::Arc;

use super::*;
use crate::storage::MemFs;

fn mem(name: &str, desc: &str) -> Memory {
    Memory {
        name: name.into(),
        mem_type: "user".into(),
        description: desc.into(),
        body: format!("body of {name}"),
    }
}

fn open(sw: MemorySwitches) -> (Shared, Store) {
    let fs: Shared = Arc::new(MemFs::new());
    let store = Store::open(fs.clone(), Path::new("/w/m"), sw).unwrap();
    (fs, store)
}

#[test]
fn slug_matches_python_word_rule() {
    assert_eq!(slug("User Preference: Tabs!"), "user-preference-tabs");
    assert_eq!(slug("__a__"), "a");
    assert_eq!(slug("用户 偏好"), "用户-偏好");
    assert_eq!(slug("!!!"), "");
    // Python's \w: circled letters (So) and combining marks (Mn/Mc) are gaps,
    // superscript digits (No) and roman numerals (Nl) are word characters.
    assert_eq!(slug("aⒶb"), "a-b");
    assert_eq!(slug("कि"), "क");
    assert_eq!(slug("x²Ⅻ"), "x²ⅻ");
}

#[test]
fn same_name_same_file_and_index_rebuilt() {
    let (_fs, store) = open(MemorySwitches::default());
    assert_eq!(store.save(&mem("Tabs", "one")).unwrap(), "tabs.md");
    assert_eq!(store.save(&mem("tabs", "two")).unwrap(), "tabs.md");
    store.save(&mem("quotes", "single quotes")).unwrap();
    assert_eq!(store.memory_files().unwrap(), vec!["quotes.md", "tabs.md"]);
    assert_eq!(
        store.read_index().unwrap(),
        "- [quotes](quotes.md) - single quotes\n- [tabs](tabs.md) - two\n"
    );
    assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
}

#[test]
fn guard_refuses_only_what_escapes_or_clobbers() {
    for n in [
        "",
        "a/b",
        "a\\b",
        "a\0b",
        "..",
        "../x",
        "/etc/x",
        "MEMORY.md",
        "memory",
        "!!!",
    ] {
        assert!(
            matches!(guard_name(n), Err(LabError::Refused { .. })),
            "{n:?}"
        );
    }
    let long = "用".repeat(67);
    for (n, s) in [
        ("user tabs", "user-tabs"),
        ("C: compiler flags", "c-compiler-flags"),
        ("a: b", "a-b"),
        ("用户偏好：缩进", "用户偏好-缩进"),
        ("Notes…", "notes"),
        ("a\tb", "a-b"),
        ("CON", "con"),
        ("evil\u{202E}txt", "evil-txt"),
        (long.as_str(), long.as_str()),
    ] {
        assert_eq!(guard_name(n).unwrap(), s, "{n:?}");
    }
    assert!(guard_name(&"a".repeat(253)).is_err());
}

#[test]
fn blank_fields_and_unknown_types_are_refused_and_write_nothing() {
    let (_fs, store) = open(MemorySwitches::default());
    let mut m = mem("x", " ");
    assert!(matches!(store.save(&m), Err(LabError::Refused { .. })));
    m.description = "d".into();
    m.body = "\n".into();
    assert!(matches!(store.save(&m), Err(LabError::Refused { .. })));
    assert!(store.memory_files().unwrap().is_empty());
}

#[test]
fn file_name_operations_refuse_paths() {
    let (fs, store) = open(MemorySwitches::default());
    fs.write_new(Path::new("/w/victim.md"), b"x").unwrap();
    for f in ["../victim.md", "MEMORY.md", "a/b.md", ".hidden.md", "x.txt"] {
        assert!(
            matches!(store.remove_file(f), Err(LabError::Refused { .. })),
            "{f}"
        );
        let snap: Snapshot = [(f.to_string(), "y".to_string())].into_iter().collect();
        assert!(
            matches!(store.restore(&snap), Err(LabError::Refused { .. })),
            "{f}"
        );
    }
    assert_eq!(fs.read(Path::new("/w/victim.md")).unwrap(), b"x");
}

#[test]
fn guard_off_escapes_the_store_but_stays_in_the_workspace() {
    let sw = MemorySwitches {
        path_guard: false,
        ..MemorySwitches::default()
    };
    let (fs, store) = open(sw);
    store.save(&mem("../escaped", "x")).unwrap();
    assert!(fs.is_file(Path::new("/w/escaped.md")));
    store.save(&mem("/tmp/abs", "x")).unwrap();
    store.save(&mem("../../../../etc/deep", "x")).unwrap();
    assert!(fs.is_file(Path::new("/w/.host/tmp/abs.md")));
    assert!(fs.is_file(Path::new("/w/.host/etc/deep.md")));
    assert!(fs.kind(Path::new("/tmp")).is_none() && fs.kind(Path::new("/etc")).is_none());
}

#[test]
fn malformed_files_are_quarantined_with_a_location() {
    let (fs, store) = open(MemorySwitches::default());
    store.save(&mem("good", "fine")).unwrap();
    let root = store.root().to_path_buf();
    fs.write_new(&root.join("plain.md"), b"no frontmatter\n")
        .unwrap();
    fs.write_new(&root.join("latin1.md"), b"---\nname: \xe9\n---\n")
        .unwrap();
    fs.write_new(
        &root.join("nested.md"),
        b"---\nname: a\ndescription: [1]\ntype: user\n---\n\nb\n",
    )
    .unwrap();
    fs.write_new(
        &root.join("crlf.md"),
        b"---\r\nname: crlf\r\ndescription: windows\r\ntype: user\r\n---\r\n\r\nbody\r\n",
    )
    .unwrap();
    let scan = store.scan().unwrap();
    let files: Vec<&str> = scan.records.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(files, ["crlf.md", "good.md"]);
    let q: Vec<(&str, usize, usize)> = scan
        .quarantined
        .iter()
        .map(|q| (q.file.as_str(), q.line, q.column))
        .collect();
    assert_eq!(
        q,
        [
            ("latin1.md", 1, 1),
            ("nested.md", 3, 14),
            ("plain.md", 1, 1)
        ]
    );
    // Saving still works and the index holds the readable records only; a
    // save that would overwrite a quarantined file is refused.
    store.save(&mem("more", "another")).unwrap();
    assert!(matches!(
        store.save(&mem("plain", "x")),
        Err(LabError::Refused { .. })
    ));
    assert_eq!(
        fs.read(&root.join("plain.md")).unwrap(),
        b"no frontmatter\n"
    );
    assert_eq!(store.read_index().unwrap(), store.derived_index().unwrap());
    assert_eq!(store.read_index().unwrap().lines().count(), 3);
}
