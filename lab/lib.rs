//! ctxlab: a reproducible experiment lab and fault-injection harness for how an
//! LLM agent harness manages memory.
//!
//! Two mechanisms, one module tree each: [`compact`] (context compaction: what
//! may be lost) and [`memory`] (persistent memory: what must not be lost). Both
//! report through [`counters::Counters`] and register their experiments in
//! [`registry`].
//!
//! # The crates are the layers
//!
//! The lab is a Cargo workspace whose member crates under `lab/` are its
//! layers, ground first; a crate depends only on the ones before it, so
//! Cargo itself refuses an import that runs back up (`ARCHITECTURE.md`
//! draws them; `tests/house/crates.rs` checks the order on `cargo
//! metadata`):
//!
//! 1. `ctxlab-core` (`lab/core/`): [`message`], [`storage`], [`error`],
//!    [`render`], [`plot`], [`counters`], [`fingerprint`], [`input`], [`process`], [`jobs`],
//!    [`shard`], [`progress`], [`scan`], [`pyjson`], [`registry`], [`alloc`].
//! 2. `ctxlab-import` (`lab/import/`): [`import`], every log format into the
//!    message model, what a product's log holds beyond its messages
//!    ([`import::recorded`]), generated sessions ([`import::generate`]) and
//!    [`tokens`], the token counters and the usage a log recorded.
//! 3. `ctxlab-course` (`lab/course/`): the course's references, [`compact`]
//!    and [`memory`], with [`scenario`] files and [`report`] renderers.
//! 4. `ctxlab-policy` (`lab/policy/`): [`policy`], the `Policy` trait, the
//!    one engine, the checker, the validity oracle, the exec protocol.
//! 5. `ctxlab-zoo` (`lab/zoo/`): [`zoo`], every production design ported
//!    from upstream, and [`zoo::list`], every policy by name.
//! 6. `ctxlab-measure` (`lab/measure/`): observers of a replay, [`cache`]
//!    (prompt-cache cost), [`retention`] and [`optimal`].
//! 7. this crate, `ctxlab` (`lab/*.rs` and the folders beside the crates):
//!    the commands, each a module, floors inside it checked by
//!    `tests/house/import_graph.rs`:
//!    - [`interlock`]: compaction and memory in one session;
//!    - [`replay`]: `lab replay`, a recorded session replayed call by call
//!      under profiles or policies;
//!    - [`experiments`]: every experiment row, gathered from each
//!      mechanism's table;
//!    - [`ci_gate`]: `lab check`, policies over sessions against declared
//!      expectations, for a harness's CI (JUnit XML);
//!    - [`horizon`]: every policy over one generated session of millions of
//!      tokens;
//!    - [`sweep`]: factorial sweeps of switches × path lengths × seeds, and
//!      sweeps over policies;
//!    - [`reports`]: the generated report files, pure renderers from results
//!      to bytes;
//!    - [`commands`]: what each subcommand does beyond the modules it
//!      drives (readme tables, schemas, memcheck, hunt, scenarios, rows);
//!    - [`cli`]: the `lab` command line: argument types and dispatch.
//!
//! Every lower crate's modules are re-exported here under the names they
//! have always had (`ctxlab::message`, `ctxlab::policy`, ...), so a harness
//! that depends on `ctxlab` alone reaches all of them; one that wants only
//! the engine and the importers depends on `ctxlab-policy` and
//! `ctxlab-import`.

pub use ctxlab_core::{
    alloc, counters, error, fingerprint, input, jobs, message, plot, process, progress, pyjson,
    registry, render, scan, shard, storage,
};
pub use ctxlab_course::{compact, memory, report, scenario};
pub use ctxlab_import as import;
pub use ctxlab_import::tokens;
pub use ctxlab_measure::{cache, optimal, retention};
pub use ctxlab_policy as policy;
pub use ctxlab_zoo as zoo;

pub mod ci_gate;
pub mod cli;
pub mod commands;
pub mod experiments;
pub mod horizon;
pub mod interlock;
pub mod replay;
pub mod reports;
pub mod sweep;
