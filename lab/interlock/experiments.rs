//! Interlocked rows of the experiment registry: compaction and memory in one
//! session.
//!
//! `I-tabs` is the seed's example: a preference stated early in a long
//! tool-using turn is snipped away by compaction before the turn ends, so
//! extraction after compaction (the course code) stores nothing and the next
//! session recalls nothing precise; with extraction reading the
//! pre-compaction snapshot it is stored and recalled. `I-tabs-cursor` is the
//! product's cursor over every message since the last extraction.
//! `I-write-tool` is the secondary gap: a generic `write_file` lands a memory
//! that no gate saw, unless a harness-level guard refuses it.

use serde_json::json;

use super::{survival, Hinge, InterlockSwitches, Interlocked, WRITE_FILE_TOOL};
use crate::counters::Counters;
use crate::error::{LabError, LabResult};
use crate::message::{Block, Message};
use crate::policy::course::CoursePolicy;
use crate::registry::{Cell, Expect, Expected, Experiment, Kind, Mechanism, RunOptions, Verdict};

/// The preference of the seed's example, verbatim.
pub const TABS: &str = "Use tabs, not spaces.";
/// The next session's first request.
pub const NEXT_QUERY: &str = "Format the lexer file.";

fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    }])
}

fn reply(text: &str) -> Message {
    Message::assistant(vec![Block::Text { text: text.into() }])
}

/// Two turns: a short set-up, then a refactor whose first message states the
/// preference and whose `reads` tool calls push the history past the course's
/// snip limit before the turn ends.
pub fn tabs_session(reads: usize) -> Vec<Message> {
    let mut out = vec![
        Message::user_text("Set up the parser project."),
        call(
            "toolu_setup",
            "bash",
            json!({"command": "cargo init parser"}),
        ),
        Message::tool_results(vec![(
            "toolu_setup".into(),
            "Created binary package".into(),
        )]),
        reply("The project is set up."),
        Message::user_text(format!("Refactor the tokenizer. {TABS}")),
    ];
    for i in 0..reads {
        let id = format!("toolu_{i:03}");
        out.push(call(
            &id,
            "read_file",
            json!({"path": format!("src/tok{i}.rs")}),
        ));
        let body = format!("fn token_{i}() {{}}\n").repeat(60);
        out.push(Message::tool_results(vec![(id, body)]));
    }
    out.push(reply("The tokenizer is refactored."));
    out
}

fn counters(h: &Interlocked, facts: &[&str]) -> LabResult<Counters> {
    let s = survival(h, facts, NEXT_QUERY)?;
    let mut c = Counters::default();
    c.count("facts_lost_to_both", s.lost_to_both, std::iter::empty());
    c.count(
        "facts_kept_only_by_memory",
        s.kept_only_by_memory,
        std::iter::empty(),
    );
    c.count(
        "facts_kept_only_by_context",
        s.kept_only_by_context,
        std::iter::empty(),
    );
    c.count("facts_kept_by_both", s.kept_by_both, std::iter::empty());
    c.count(
        "memories_stored",
        h.tally.stored.len() as u64,
        h.tally.stored.clone(),
    );
    c.count(
        "compactions",
        h.tally.compactions as u64,
        std::iter::empty(),
    );
    c.count(
        "memory_written_by_generic_tools",
        h.tally.memory_written_by_tools.len() as u64,
        h.tally.memory_written_by_tools.clone(),
    );
    c.count(
        "tool_writes_refused",
        h.tally.tool_writes_refused.len() as u64,
        h.tally.tool_writes_refused.clone(),
    );
    Ok(c)
}

/// One session of `messages` under `profile` with `switches`, in a fresh sandbox.
pub fn side(
    messages: &[Message],
    profile: &str,
    switches: InterlockSwitches,
    facts: &[&str],
) -> LabResult<Counters> {
    let (fs, dir) = crate::memory::session::sandbox();
    let policy = Box::new(CoursePolicy::new(profile)?);
    let mut h = Interlocked::new(fs, &dir, policy, switches)?;
    h.run(messages)?;
    counters(&h, facts)
}

fn hinge(h: Hinge) -> InterlockSwitches {
    InterlockSwitches {
        hinge: h,
        ..InterlockSwitches::default()
    }
}

fn verdict(id: &str, cells: Vec<Cell>) -> LabResult<Verdict> {
    let row = EXPERIMENTS.iter().find(|e| e.id == id).ok_or_else(|| {
        LabError::usage(
            format!("no interlocked experiment {id}"),
            "use an id from `lab list`",
        )
    })?;
    Ok(Verdict::new(row, cells))
}

fn tabs_row(id: &str, fix: Hinge) -> LabResult<Verdict> {
    let messages = tabs_session(60);
    let cell = Cell {
        label: "course-f9e8b28".into(),
        baseline: side(&messages, "course-f9e8b28", hinge(fix), &[TABS])?,
        broken: side(
            &messages,
            "course-f9e8b28",
            InterlockSwitches::default(),
            &[TABS],
        )?,
    };
    verdict(id, vec![cell])
}

fn run_tabs(_: &RunOptions) -> LabResult<Verdict> {
    tabs_row("I-tabs", Hinge::Snapshot)
}

fn run_tabs_cursor(_: &RunOptions) -> LabResult<Verdict> {
    tabs_row("I-tabs-cursor", Hinge::Cursor)
}

/// A temporary note written straight into the store by the generic tool:
/// the course's temporary-word gate would have refused it.
pub fn write_tool_session() -> Vec<Message> {
    let note = "---\nname: indent\ntype: feedback\ndescription: for now use 2 spaces\n---\nFor now use 2 spaces.\n";
    vec![
        Message::user_text("Note how we indent, for now."),
        call(
            "toolu_w",
            WRITE_FILE_TOOL,
            json!({"path": ".memory/indent.md", "content": note}),
        ),
        Message::tool_results(vec![("toolu_w".into(), "ok".into())]),
        reply("Noted."),
    ]
}

fn run_write_tool(_: &RunOptions) -> LabResult<Verdict> {
    let messages = write_tool_session();
    let guarded = InterlockSwitches {
        write_tool_guard: true,
        ..InterlockSwitches::default()
    };
    let cell = Cell {
        label: "write_file into .memory".into(),
        baseline: side(&messages, "course-f9e8b28", guarded, &[])?,
        broken: side(
            &messages,
            "course-f9e8b28",
            InterlockSwitches::default(),
            &[],
        )?,
    };
    verdict("I-write-tool", vec![cell])
}

const fn every(counter: &'static str, baseline: u64, broken: u64) -> Expect {
    Expect {
        cell: None,
        counter,
        baseline: Expected::Count(baseline),
        broken: Expected::Count(broken),
    }
}

/// The interlocked rows.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "I-tabs",
        mechanism: Mechanism::Interlock,
        kind: Kind::Finding,
        title: "a preference compaction snips away is lost to memory too when extraction reads after compaction",
        change: "baseline: extraction reads the pre-compaction snapshot; broken: the course (after compaction)",
        caught_by: &["facts_lost_to_both", "facts_kept_only_by_memory"],
        seed: "section 8: the hinge exists only in the narrative",
        run: run_tabs,
        expect: &[
            every("facts_lost_to_both", 0, 1),
            every("facts_kept_only_by_memory", 1, 0),
        ],
    },
    Experiment {
        id: "I-tabs-cursor",
        mechanism: Mechanism::Interlock,
        kind: Kind::Finding,
        title: "the product's extraction cursor over every message since the last pass keeps the preference",
        change: "baseline: extraction reads every uncompacted message since the last extraction; broken: the course",
        caught_by: &["facts_lost_to_both", "facts_kept_only_by_memory"],
        seed: "section 8: extraction after the stop hook",
        run: run_tabs_cursor,
        expect: &[
            every("facts_lost_to_both", 0, 1),
            every("facts_kept_only_by_memory", 1, 0),
        ],
    },
    Experiment {
        id: "I-write-tool",
        mechanism: Mechanism::Interlock,
        kind: Kind::Finding,
        title: "a generic write_file lands a memory that bypasses every gate",
        change: "baseline: a harness guard refuses generic writes into the memory directory; broken: the course",
        caught_by: &["memory_written_by_generic_tools"],
        seed: "section 8: the path guard only constrains the memory functions",
        run: run_write_tool,
        expect: &[
            every("memory_written_by_generic_tools", 0, 1),
            every("tool_writes_refused", 1, 0),
        ],
    },
];
