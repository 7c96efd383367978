//! ctxlab's ground floor: what every other crate of the lab stands on.
//!
//! Nothing here knows about compaction, memory, policies or products: the
//! message model, one storage interface, one error type, tables, plots,
//! counters, reading a user's input, and processes a user brings. The
//! crates above (`ctxlab-import`, `ctxlab-course`, `ctxlab-policy`,
//! `ctxlab-zoo`, `ctxlab-measure`, and the `ctxlab` binary crate) depend on
//! this one and never the other way (Cargo enforces it;
//! `tests/house/crates.rs` checks the order).
//!
//! # Modules, ground first
//!
//! A module imports only from the modules listed before it.
//!
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
//! - [`fingerprint`]: a text's identity (a fixed-seed hash and the
//!   length) without keeping the text.
//! - [`scan`]: byte scans of long texts for the next byte that needs
//!   attention.
//! - [`shard`]: `--shard i/n` (the items whose index is `i` mod `n`) and
//!   the checksum a shard's output carries.
//! - [`jobs`]: worker threads whose results come out in input order
//!   (`--jobs N`), with a bounded window of items in flight.
//! - [`process`]: a process a user brings (an external policy or memory
//!   tool), spoken to in JSON lines, timed out and killed with its group.
//! - [`alloc`]: the global allocator of the binary, benches and examples
//!   (mimalloc).
//! - [`input`]: reading a user's input file as text, the same way for every
//!   command (regular files only, a size cap, UTF-8 with line and column).
//! - [`pyjson`]: JSON text exactly as Python's `json.dumps(obj,
//!   ensure_ascii=False)` writes it.
//! - [`registry`]: the types of an experiment row and of its verdict.
//! - [`message`]: the message model, in Anthropic Messages shape, and the
//!   Python-compatible size estimate.

pub mod alloc;
pub mod counters;
pub mod error;
pub mod fingerprint;
pub mod input;
pub mod jobs;
pub mod message;
pub mod plot;
pub mod process;
pub mod progress;
pub mod pyjson;
pub mod registry;
pub mod render;
pub mod scan;
pub mod shard;
pub mod storage;
