//! The containment rows the traversal rows leave out, each a way real
//! containment checks go wrong:
//! - `traversal-sibling-prefix`: `/memories/../memories_evil/x.md` names a
//!   sibling whose name starts with the root's, so a check that the
//!   resolved path *starts with the root's string* lets it out (the most
//!   common wrong fix; [`super::prefix`] ships it);
//! - `root-case`: `/Memories/…` is not `/memories` (a case-insensitive
//!   comparison or file system maps it);
//! - `root-unicode`: a fullwidth `ｍ` that NFKC folds to `m`, as the root's
//!   name and as a sibling's;
//! - `link-hard-out`: a memory that is a hard link to a file outside: a
//!   symlink check never sees it, and reading or editing it in place reads
//!   or writes the outside file;
//! - `link-dir-inside`: an alias (symlink) of a directory inside the root:
//!   following it stays inside, so it is no escape, but deleting the alias
//!   must not take the files of the directory it names
//!   ([`super::linkbugs::Follow`] empties it through the link);
//! - `link-dir-relative-out`: a relative symlink deeper in the root
//!   (`d/up -> ../../outside`) that climbs out;
//! - `root-through-link`: `/memories` itself reached through a symlink: an
//!   implementation must work there and keep inside the directory it
//!   names ([`super::linkbugs::Unresolved`] compares resolved paths with
//!   the unresolved root and refuses everything).

use super::harness::{Plant, Row, Sandbox, ToolVerdict};
use super::{Command, Reply};

fn create(path: &str) -> Command {
    Command::Create {
        path: path.into(),
        file_text: "pwned".into(),
    }
}

/// Every reply must be a tool error.
fn all_refused(_: &Sandbox, replies: &[Reply]) -> ToolVerdict {
    match replies.iter().find(|r| !r.is_error()) {
        Some(r) => ToolVerdict::Wrong(format!(
            "accepted: {}",
            r.text().lines().next().unwrap_or("")
        )),
        None if replies.is_empty() => ToolVerdict::Wrong("no reply".into()),
        None => ToolVerdict::Held,
    }
}

fn row(
    id: &'static str,
    what: &'static str,
    requires: &'static str,
    plants: &'static [Plant],
    commands: fn(&Sandbox) -> Vec<Command>,
    expect: fn(&Sandbox, &[Reply]) -> ToolVerdict,
) -> Row {
    Row {
        id,
        what,
        requires,
        plants,
        commands,
        expect,
        writers: 1,
        fault: None,
        kill: false,
        race: None,
    }
}

/// The rows, in report order.
pub fn rows() -> Vec<Row> {
    vec![
        row(
            "traversal-sibling-prefix",
            "create /memories/../memories_evil/x.md (a sibling named like the root)",
            "refused; nothing outside written",
            &[],
            |_| vec![create("/memories/../memories_evil/x.md")],
            all_refused,
        ),
        row(
            "root-case",
            "create /Memories/pwn.md and /MEMORIES/pwn.md",
            "refused (the root is /memories, case and all); nothing outside written",
            &[],
            |_| vec![create("/Memories/pwn.md"), create("/MEMORIES/pwn.md")],
            all_refused,
        ),
        row(
            "root-unicode",
            "create through a fullwidth m (NFKC: m) as the root and as a sibling",
            "refused; nothing outside written",
            &[],
            |_| {
                vec![
                    create("/\u{FF4D}emories/pwn.md"),
                    create("/memories/../\u{FF4D}emories/pwn.md"),
                ]
            },
            all_refused,
        ),
        row(
            "link-hard-out",
            "view and str_replace a memory that is a hard link to a file outside",
            "refused; the outside file neither shown nor changed",
            &[Plant::HardLinkOut("notes.md", "secret.txt")],
            |_| {
                vec![
                    Command::View {
                        path: "/memories/notes.md".into(),
                        view_range: None,
                    },
                    Command::StrReplace {
                        path: "/memories/notes.md".into(),
                        old_str: super::harness::SECRET.into(),
                        new_str: "PWNED".into(),
                    },
                ]
            },
            all_refused,
        ),
        row(
            "link-dir-inside",
            "create and view through an alias of a directory inside /memories, then delete the alias",
            "followed inside or refused; deleting the alias keeps the directory's files",
            &[
                Plant::File("real/a.md", "A\n"),
                Plant::Link("alias", "real"),
            ],
            |_| {
                vec![
                    Command::Create {
                        path: "/memories/alias/b.md".into(),
                        file_text: "B\n".into(),
                    },
                    view("/memories/alias/a.md"),
                    Command::Delete {
                        path: "/memories/alias".into(),
                    },
                ]
            },
            alias_inside,
        ),
        row(
            "link-dir-relative-out",
            "create and view through /memories/d/up, a relative symlink to ../../outside",
            "refused; nothing outside written or shown",
            &[Plant::Link("d/up", "../../outside")],
            |_| {
                vec![
                    create("/memories/d/up/pwn.md"),
                    view("/memories/d/up/secret.txt"),
                ]
            },
            all_refused,
        ),
        row(
            "root-through-link",
            "view, create and str_replace when /memories is a symlink to a directory beside it",
            "done as on a plain root, inside the directory the link names",
            &[
                Plant::RootLink("real-memories"),
                Plant::File("a.md", "A\n"),
            ],
            |_| {
                vec![
                    view("/memories/a.md"),
                    Command::Create {
                        path: "/memories/b.md".into(),
                        file_text: "B\n".into(),
                    },
                    Command::StrReplace {
                        path: "/memories/a.md".into(),
                        old_str: "A".into(),
                        new_str: "A2".into(),
                    },
                ]
            },
            through_link,
        ),
    ]
}

fn view(path: &str) -> Command {
    Command::View {
        path: path.into(),
        view_range: None,
    }
}

fn first_line(r: &Reply) -> &str {
    r.text().lines().next().unwrap_or("")
}

/// `link-dir-inside`: whatever was acknowledged happened inside, and the
/// files of the directory the alias names survive the alias's delete.
fn alias_inside(s: &Sandbox, replies: &[Reply]) -> ToolVerdict {
    let ok = |i: usize| replies.get(i).is_some_and(|r| !r.is_error());
    if s.file("real/a.md").as_deref() != Some("A\n") {
        return ToolVerdict::Lost(
            "real/a.md is gone: deleting the alias took the files of the directory it names".into(),
        );
    }
    if ok(0) && s.file("real/b.md").as_deref() != Some("B\n") {
        return ToolVerdict::Wrong(
            "create through the alias was acknowledged, but real/b.md does not hold it".into(),
        );
    }
    if ok(1) && !replies[1].text().contains('A') {
        return ToolVerdict::Wrong(format!(
            "view through the alias answered {:?}",
            first_line(&replies[1])
        ));
    }
    let alias = s.root.join("alias");
    if ok(2) && s.fs.kind(&alias).is_some() {
        return ToolVerdict::Wrong(
            "the delete of the alias was acknowledged, but it is still there".into(),
        );
    }
    ToolVerdict::Held
}

/// `root-through-link`: every command works, and the files are in the
/// directory the root's link names.
fn through_link(s: &Sandbox, replies: &[Reply]) -> ToolVerdict {
    if let Some(r) = replies.iter().find(|r| r.is_error()) {
        return ToolVerdict::Refused(first_line(r).to_string());
    }
    match (s.file("a.md").as_deref(), s.file("b.md").as_deref()) {
        (Some("A2\n"), Some("B\n")) => ToolVerdict::Held,
        (a, b) => ToolVerdict::Wrong(format!(
            "the root's directory holds a.md {a:?} and b.md {b:?}, not \"A2\\n\" and \"B\\n\""
        )),
    }
}
