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
//!   or writes the outside file.

use super::harness::{Plant, Row, Sandbox, Verdict};
use super::{Command, Reply};

fn create(path: &str) -> Command {
    Command::Create {
        path: path.into(),
        file_text: "pwned".into(),
    }
}

/// Every reply must be a tool error.
fn all_refused(_: &Sandbox, replies: &[Reply]) -> Verdict {
    match replies.iter().find(|r| !r.is_error()) {
        Some(r) => Verdict::Wrong(format!(
            "accepted: {}",
            r.text().lines().next().unwrap_or("")
        )),
        None if replies.is_empty() => Verdict::Wrong("no reply".into()),
        None => Verdict::Held,
    }
}

fn row(
    id: &'static str,
    what: &'static str,
    requires: &'static str,
    plants: &'static [Plant],
    commands: fn(&Sandbox) -> Vec<Command>,
    expect: fn(&Sandbox, &[Reply]) -> Verdict,
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
    ]
}
