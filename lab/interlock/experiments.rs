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
use crate::registry::{every, Cell, Experiment, ExperimentVerdict, Kind, Mechanism, RunOptions};

/// The preference of the seed's example, verbatim.
pub const TABS: &str = "Use tabs, not spaces.";
/// The next session's first request.
pub const NEXT_QUERY: &str = "Format the lexer file.";

fn call(id: &str, name: &str, input: serde_json::Value) -> Message {
    Message::assistant(vec![Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input: input.into(),
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

fn tabs_row(id: &str, fix: Hinge) -> LabResult<ExperimentVerdict> {
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
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, id, vec![cell])
}

fn run_tabs(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    tabs_row("I-tabs", Hinge::Snapshot)
}

fn run_tabs_cursor(_: &RunOptions) -> LabResult<ExperimentVerdict> {
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

fn run_write_tool(_: &RunOptions) -> LabResult<ExperimentVerdict> {
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
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, "I-write-tool", vec![cell])
}

fn store_with(seeds: &[(&str, &str)]) -> LabResult<crate::memory::store::Store> {
    let (fs, dir) = crate::memory::session::sandbox();
    fs.create_dir_all(&dir)
        .map_err(|e| LabError::io("creating sandbox", &dir, e))?;
    let store = crate::memory::store::Store::open_in(
        fs,
        &dir,
        &dir.join(".memory"),
        crate::memory::switches::MemorySwitches::default(),
    )?;
    for (name, body) in seeds {
        store.save(&crate::memory::store::Memory {
            name: (*name).into(),
            mem_type: "user".into(),
            description: format!("preference {name}"),
            body: (*body).into(),
        })?;
    }
    Ok(store)
}

/// The three preferences two processes consolidate.
const PREFS: [(&str, &str); 3] = [
    ("a", "Use tabs, not spaces."),
    ("b", "Use single quotes."),
    ("c", "Run the tests with --release."),
];

fn lock_side(gates: super::schedule::Gates) -> LabResult<Counters> {
    let store = store_with(&PREFS)?;
    let bodies = super::schedule::two_processes(&store, &gates)?;
    let lost: Vec<String> = PREFS
        .iter()
        .filter(|(_, f)| !super::schedule::kept(&bodies, f))
        .map(|(n, _)| n.to_string())
        .collect();
    let mut c = Counters::default();
    c.count("facts_lost_by_consolidation", lost.len() as u64, lost);
    c.count("memories_left", bodies.len() as u64, std::iter::empty());
    Ok(c)
}

fn run_lock(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    use super::schedule::Gates;
    let cell = Cell {
        label: "two processes, one store".into(),
        baseline: lock_side(Gates::default())?,
        broken: lock_side(Gates {
            use_lock: false,
            ..Gates::default()
        })?,
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, "I-lock", vec![cell])
}

/// A test on an attempt's outcome, named by the counter it feeds.
type AttemptIs = fn(&super::schedule::Attempt) -> bool;

fn stale_side(gates: super::schedule::Gates) -> LabResult<Counters> {
    use super::schedule::{crashed_holder, Attempt};
    let store = store_with(&PREFS)?;
    let attempts = crashed_holder(&store, &gates, 30, 48)?;
    let kinds: [(&str, AttemptIs); 5] = [
        ("consolidations_run", |a| matches!(a, Attempt::Ran { .. })),
        ("stale_locks_taken_over", |a| {
            matches!(a, Attempt::Ran { stale: true })
        }),
        ("consolidations_stalled", |a| matches!(a, Attempt::Locked)),
        ("gate_too_soon", |a| matches!(a, Attempt::TooSoon)),
        ("gate_too_few_sessions", |a| {
            matches!(a, Attempt::TooFewSessions)
        }),
    ];
    let mut c = Counters::default();
    for (name, is) in kinds {
        let n = attempts.iter().filter(|a| is(a)).count() as u64;
        c.count(name, n, std::iter::empty());
    }
    Ok(c)
}

fn run_stale_lock(_: &RunOptions) -> LabResult<ExperimentVerdict> {
    use super::schedule::Gates;
    let cell = Cell {
        label: "holder crashed, retries every 30 min for 48 h".into(),
        baseline: stale_side(Gates::default())?,
        broken: stale_side(Gates {
            stale_lock_min: None,
            ..Gates::default()
        })?,
        ..Default::default()
    };
    ExperimentVerdict::of_row(EXPERIMENTS, "I-stale-lock", vec![cell])
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
        id: "I-lock",
        mechanism: Mechanism::Interlock,
        kind: Kind::Break,
        title: "two consolidations on one store without the lock: the second overwrites the first's merge (a lost update)",
        change: "interlock::schedule::Gates.use_lock = false",
        caught_by: &["facts_lost_by_consolidation"],
        seed: "section 8: the product's four gates and a lock file",
        run: run_lock,
        expect: &[every("facts_lost_by_consolidation", 0, 1)],
    },
    Experiment {
        id: "I-stale-lock",
        mechanism: Mechanism::Interlock,
        kind: Kind::Break,
        title: "a crashed holder's lock that never expires stalls consolidation forever",
        change: "interlock::schedule::Gates.stale_lock_min = None (the product's lock expires; 60 min is approximate)",
        caught_by: &["consolidations_run", "consolidations_stalled"],
        seed: "section 8: the lock file expires after a crash",
        run: run_stale_lock,
        expect: &[
            every("consolidations_run", 1, 0),
            every("stale_locks_taken_over", 1, 0),
            every("consolidations_stalled", 2, 96),
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
