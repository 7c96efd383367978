//! ctxlab: a reproducible experiment lab and fault-injection harness for how an
//! LLM agent harness manages memory.
//!
//! Two mechanisms, one module tree each: [`compact`] (context compaction: what
//! may be lost) and [`memory`] (persistent memory: what must not be lost). Both
//! report through [`counters::Counters`] and register their experiments in
//! [`registry`].
//!
//! # Map of the crate
//!
//! The top-level modules stand on floors, ground first; a module imports only
//! from floors below its own (`tests/house/import_graph.rs` fails on a circle, on a
//! folder importing back up into another, and on more than 12 floors).
//!
//! Floor 0, the ground:
//! - [`storage`]: one storage interface under every writer, with a memory and
//!   a disk backend that give identical verdicts, and fault injection.
//! - [`counters`]: the one shape every checker reports in: named counters
//!   with a few sample ids.
//! - [`error`]: the one error type; every variant names what, where and the
//!   fix, and maps to a documented exit code.
//! - [`render`]: generic rendering: the output format, tables with escaped
//!   cells, counts and JSON.
//! - [`plot`]: the one plotting module: series in, an SVG string out.
//! - [`progress`]: progress on stderr, drawn only when it is a terminal.
//! - [`scan`]: byte scans of long texts for the next byte that needs
//!   attention.
//! - [`shard`]: `--shard i/n` (the items whose index is `i` mod `n`) and
//!   the checksum a shard's output carries.
//! - [`jobs`]: worker threads whose results come out in input order
//!   (`--jobs N`), with a bounded window of items in flight.
//! - [`process`]: a process a user brings (an external policy or memory
//!   tool), spoken to in JSON lines, timed out and killed with its group.
//! - [`alloc`]: the global allocator of the binary, benches and examples
//!   (mimalloc); no other module uses it.
//!
//! Floor 1:
//! - [`input`]: reading a user's input file as text, the same way for every
//!   command (regular files only, a size cap, UTF-8 with line and column).
//! - [`pyjson`]: JSON text exactly as Python's `json.dumps(obj,
//!   ensure_ascii=False)` writes it.
//! - [`registry`]: the types of an experiment row and of its verdict.
//!
//! Floor 2:
//! - [`message`]: the message model, in Anthropic Messages shape, and the
//!   Python-compatible size estimate.
//!
//! Floor 3, the mechanisms and the importers:
//! - [`compact`]: context compaction, the four-step pipeline that runs before
//!   every model call, its switches, profiles and invariant checker.
//! - [`memory`]: persistent memory, one module per mechanism of the course's
//!   `s09_memory`.
//! - [`import`]: importers for real agent transcripts, each log format to
//!   sessions in the message model, damage reported with line and column.
//!
//! Floor 4:
//! - [`tokens`]: token counting, one interface and several counters, and
//!   per-message sizes of requests measured once per message a run sends.
//! - [`scenario`]: declarative compaction scenario files that are also
//!   regression tests.
//!
//! Floor 5, the policy engine:
//! - [`policy`]: the policy interface, one engine for every
//!   context-management design, the checker, the validity oracle and the zoo.
//! - [`report`]: pure renderers from verdicts and lists to text.
//!
//! Floor 6, observers of a policy replay:
//! - [`cache`]: prompt-cache accounting: what each request reads from and
//!   writes to a provider's cache, and what that costs.
//! - [`retention`]: what the model can still reach after compaction,
//!   measured without a judge.
//!
//! Floor 7:
//! - [`interlock`]: compaction and memory in one session: does what
//!   compaction loses survive in memory?
//! - [`replay`]: `lab replay`, a recorded session replayed call by call
//!   under profiles or policies.
//!
//! Floor 8:
//! - [`check`]: `lab check`, policies over sessions against declared
//!   expectations, for a harness's CI (JUnit XML).
//! - [`experiments`]: the list of every experiment row, gathered from each
//!   mechanism's table, and lookup by id.
//! - [`sweep`]: factorial sweeps of switches × path lengths × seeds, and
//!   sweeps over policies.
//!
//! Floor 9:
//! - [`reports`]: the generated report files, pure renderers from results
//!   to bytes.
//!
//! Floor 10:
//! - [`cli`]: the `lab` command line: argument types and dispatch, no
//!   experiment logic.

pub mod alloc;
pub mod cache;
pub mod check;
pub mod cli;
pub mod compact;
pub mod counters;
pub mod error;
pub mod experiments;
pub mod horizon;
pub mod import;
pub mod input;
pub mod interlock;
pub mod jobs;
pub mod memory;
pub mod message;
pub mod optimal;
pub mod plot;
pub mod policy;
pub mod process;
pub mod progress;
pub mod pyjson;
pub mod registry;
pub mod render;
pub mod replay;
pub mod report;
pub mod reports;
pub mod retention;
pub mod scan;
pub mod scenario;
pub mod shard;
pub mod storage;
pub mod sweep;
pub mod tokens;
