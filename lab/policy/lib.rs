//! The policy interface: one engine, every context-management design.
//!
//! Before each model call a [`Policy`] receives the harness's history, the
//! run's [`Storage`], a token counter and the turn
//! clock, and returns the request it would send plus [`PolicyEvent`]s saying
//! what it did and why. The course pipeline with its switches is one policy
//! family (`course`); each production design is a module of its own under
//! `lab/zoo/` (the `ctxlab-zoo` crate), citing its upstream source and constants.
//!
//! The checker stays policy-agnostic: each policy declares, as
//! [`PointerRule`]s, how its placeholders name where an original went (a
//! path, an archive, or nothing), so `lost_forever`, `pointer_lost`,
//! `dangling_pointers`, orphans and archive gaps hold for every policy.
//!
//! Two shapes of design fit the one signature:
//! - *rewriting* designs (the course, Claude Code, Codex, Aider) change the
//!   history itself: they replace `history` and return it as the request;
//! - *projecting* designs (Anthropic context editing, SWE-agent's observation
//!   masking, OpenHands condensers' views) leave the history whole and return
//!   an edited copy as the request.
//!
//! # Replaying a session under a policy
//!
//! A harness team checks its own design the way the lab checks the ports:
//! implement [`Policy`], replay a session through [`engine::replay`], and
//! read what the checker and the validity oracle found. Every port lives in
//! `ctxlab-zoo` (`ctxlab_zoo::list::make("codex-cli")`); importers of real
//! logs in `ctxlab-import` (`ctxlab_import::import_file_sessions`).
//!
//! ```
//! use ctxlab_core::message::{Block, Message};
//! use ctxlab_policy::engine::{replay, Env, Session};
//! use ctxlab_policy::none::NoCompaction;
//!
//! // One tool call and its result, then the answer.
//! let messages = vec![
//!     Message::user_text("list the files"),
//!     Message::assistant(vec![Block::ToolUse {
//!         id: "call_1".into(),
//!         name: "bash".into(),
//!         input: serde_json::json!({ "command": "ls" }).into(),
//!     }]),
//!     Message::tool_results(vec![("call_1".to_string(), "a.rs\nb.rs".to_string())]),
//!     Message::assistant(vec![Block::Text { text: "two files".into() }]),
//! ];
//! let session = Session { name: "demo", messages: &messages, times_ms: None };
//! let run = replay(&mut NoCompaction, session, &mut Env::default()).unwrap();
//! assert_eq!(run.calls.len(), 2, "one request per model call");
//! assert_eq!(run.invalid_requests, 0, "every request is one the provider accepts");
//! assert_eq!(run.findings.lost_forever.count, 0, "nothing removed, nothing lost");
//! ```

/// The [`Policy`] methods a wrapper of another policy (its field `inner`)
/// passes through unchanged: what it acts on, whether it sends `/responses`,
/// its own storage, whether its
/// errors end the replay, and its variants. Written once here because every
/// wrapper (`frozen:`, `gated:`, a variant) needs exactly these.
macro_rules! forward_to_inner {
    () => {
        fn acts_on(&self) -> $crate::shape::ActsOn {
            self.inner.acts_on()
        }

        fn sends_responses(&self) -> bool {
            self.inner.sends_responses()
        }

        fn own_storage(&self) -> Option<($crate::storage::Shared, std::path::PathBuf)> {
            self.inner.own_storage()
        }

        fn errors_are_fatal(&self) -> bool {
            self.inner.errors_are_fatal()
        }

        fn history_replaced(&mut self) {
            self.inner.history_replaced()
        }

        fn configure(&mut self, overrides: &$crate::variant::Overrides) -> Result<(), String> {
            self.inner.configure(overrides)
        }

        fn variant_keys(&self) -> $crate::variant::Overrides {
            self.inner.variant_keys()
        }
    };
}

// The lower crates' modules under the names this crate's code has always
// used (`crate::message::…`); private, so they are no part of this API.
// (`ctxlab_core::render` is named in full: `render` here is this crate's own.)
use ctxlab_core::{
    counters, error, fingerprint, input, message, process, pyjson, registry, storage,
};
use ctxlab_course::compact;
use ctxlab_import as import;
use ctxlab_import::tokens;

pub mod course;
pub mod engine;
pub mod exec;
pub mod findings;
pub mod freeze;
pub mod gate;
pub mod model;
pub mod none;
pub mod render;
pub mod responses;
pub mod shape;
pub mod side_calls;
pub mod spec;
pub mod validity;
pub mod variant;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::LabResult;
use crate::message::Message;
use crate::storage::Storage;
use crate::tokens::TokenCounter;

pub use model::{ModelError, ModelRole, SummaryRequest};

/// Where a policy comes from: upstream repository at a commit, or a
/// documentation page with the date it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `owner/repo@commit` or a documentation URL (an external policy's
    /// command, owned).
    pub upstream: Cow<'static, str>,
    /// Files or sections the constants and strings were read from.
    pub files: &'static [&'static str],
    /// Licence of the upstream code (constants and strings only are reproduced).
    pub license: &'static str,
    /// `true` when some fact comes only from unofficial material (then the
    /// policy is marked approximate in every listing).
    pub approximate: bool,
}

/// The static description of a policy, for `lab policies` and the GUIDE.md table.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyInfo {
    /// Unique name (`anthropic-clear-tool-uses`, `codex-cli`, `course-main`, ...).
    pub name: String,
    /// The product or design family (`Anthropic API`, `Codex CLI`, `course`).
    pub family: &'static str,
    /// One line: what the design does (an external policy's own, owned).
    pub summary: Cow<'static, str>,
    /// Upstream source.
    pub source: Source,
    /// Constants under their upstream names, as JSON (numbers, strings, lists).
    pub constants: serde_json::Value,
    /// The unit the policy sizes its context in.
    pub unit: Unit,
    /// Every deliberate difference from upstream (empty when byte-faithful).
    pub differences: Vec<&'static str>,
}

/// The unit a policy measures its budget in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Characters of `len(json.dumps(messages))` (the course).
    Chars,
    /// Tokens of the run's [`TokenCounter`].
    Tokens,
    /// Messages or turns.
    Messages,
}

/// How a placeholder names where its original went.
///
/// The checker extracts pointers from every text of a request with the
/// policy's rules, then asks storage whether the path still holds the
/// original (a file with the same content, or an archive holding the result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum PointerRule {
    /// A line that starts with `prefix`; the rest of the line is the path
    /// (course `Full output: <path>`, Claude Code's persisted-output line).
    LinePrefix {
        /// Text before the path.
        prefix: Cow<'static, str>,
    },
    /// A whole text `open<path>close` (course `[Earlier tool result saved at <path>]`).
    Wrapped {
        /// Text before the path.
        open: Cow<'static, str>,
        /// Text after the path (the end of the text).
        close: Cow<'static, str>,
    },
    /// Anywhere in a text: `open<path>close`, first occurrence per line
    /// (snip markers and summaries that name an archive mid-sentence).
    Inline {
        /// Text before the path.
        open: Cow<'static, str>,
        /// Text after the path.
        close: Cow<'static, str>,
    },
    /// The rest of a line after the first `open` in it (a sentence that ends
    /// with the path, as Gemini CLI's `For full output see: <path>`).
    After {
        /// Text before the path.
        open: Cow<'static, str>,
    },
    /// Not a path: `open<key>close` anywhere in a text names a store the
    /// design searches with a tool of its own (Hermes' footer and stubs:
    /// `session_search(query=..., session_id='<key>')`). The store is
    /// `<policy root>/<store>/<key>.jsonl`, one JSON row per line. The
    /// checker follows paths only ([`PointerRule::find`] finds none here);
    /// the closed loop searches the store ([`PointerRule::search_keys`]).
    Search {
        /// Text before the key.
        open: Cow<'static, str>,
        /// Text after the key.
        close: Cow<'static, str>,
        /// The store's folder under the policy's root.
        store: Cow<'static, str>,
        /// The tool the design offers to search it.
        tool: Cow<'static, str>,
    },
}

// The rules own their strings: a port's are its constants (borrowed, no
// copy), an external policy's come from its hello and live as long as it.
impl PointerRule {
    /// [`PointerRule::LinePrefix`] on a constant.
    pub const fn line_prefix(prefix: &'static str) -> PointerRule {
        PointerRule::LinePrefix {
            prefix: Cow::Borrowed(prefix),
        }
    }

    /// [`PointerRule::Wrapped`] on constants.
    pub const fn wrapped(open: &'static str, close: &'static str) -> PointerRule {
        PointerRule::Wrapped {
            open: Cow::Borrowed(open),
            close: Cow::Borrowed(close),
        }
    }

    /// [`PointerRule::Inline`] on constants.
    pub const fn inline(open: &'static str, close: &'static str) -> PointerRule {
        PointerRule::Inline {
            open: Cow::Borrowed(open),
            close: Cow::Borrowed(close),
        }
    }

    /// [`PointerRule::Search`] on constants.
    pub const fn search(
        open: &'static str,
        close: &'static str,
        store: &'static str,
        tool: &'static str,
    ) -> PointerRule {
        PointerRule::Search {
            open: Cow::Borrowed(open),
            close: Cow::Borrowed(close),
            store: Cow::Borrowed(store),
            tool: Cow::Borrowed(tool),
        }
    }

    /// [`PointerRule::After`] on a constant.
    pub const fn after(open: &'static str) -> PointerRule {
        PointerRule::After {
            open: Cow::Borrowed(open),
        }
    }

    /// Every path this rule finds in `text`.
    pub fn find<'t>(&self, text: &'t str) -> Vec<&'t str> {
        match self {
            PointerRule::LinePrefix { prefix } => text
                .lines()
                .filter_map(|l| l.strip_prefix(prefix.as_ref()))
                .map(str::trim_end)
                .filter(|p| !p.is_empty())
                .collect(),
            PointerRule::Wrapped { open, close } => text
                .strip_prefix(open.as_ref())
                .and_then(|r| r.strip_suffix(close.as_ref()))
                .filter(|p| !p.is_empty() && !p.contains('\n'))
                .into_iter()
                .collect(),
            PointerRule::Inline { open, close } => text
                .lines()
                .filter_map(|l| {
                    let start = l.find(open.as_ref())? + open.len();
                    let len = l[start..].find(close.as_ref())?;
                    Some(&l[start..start + len])
                })
                .filter(|p| !p.is_empty())
                .collect(),
            PointerRule::After { open } => text
                .lines()
                .filter_map(|l| Some(l[l.find(open.as_ref())? + open.len()..].trim_end()))
                .filter(|p| !p.is_empty())
                .collect(),
            PointerRule::Search { .. } => Vec::new(),
        }
    }

    /// Every store key a [`PointerRule::Search`] rule finds in `text` (none
    /// for the path rules).
    pub fn search_keys<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let PointerRule::Search { open, close, .. } = self else {
            return Vec::new();
        };
        PointerRule::Inline {
            open: open.clone(),
            close: close.clone(),
        }
        .find(text)
    }
}

/// Every path any of `rules` finds in `text`, in rule order.
pub fn pointers_in<'t>(rules: &[PointerRule], text: &'t str) -> Vec<&'t str> {
    rules.iter().flat_map(|r| r.find(text)).collect()
}

/// What a policy did before one model call, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum PolicyEvent {
    /// A result's full text was written to storage.
    Persisted {
        /// Tool call id.
        id: String,
        /// File written (or reused).
        path: String,
        /// Chars saved.
        chars: usize,
    },
    /// A result's (or a call's input's) content was replaced by a placeholder.
    Cleared {
        /// Tool call id.
        id: String,
        /// Which part: `result` or `input`.
        part: &'static str,
        /// The placeholder text put in its place.
        placeholder: String,
    },
    /// A result was shortened in place (head/tail kept, middle dropped).
    Truncated {
        /// Tool call id.
        id: String,
        /// Chars before.
        from_chars: usize,
        /// Chars after.
        to_chars: usize,
        /// Where the full text went, if anywhere.
        saved_to: Option<String>,
    },
    /// Messages were replaced by a summary.
    Summarised {
        /// Messages replaced.
        replaced: usize,
        /// Messages kept verbatim around the summary.
        kept: usize,
        /// Where the replaced messages were archived, if anywhere.
        archive: Option<String>,
    },
    /// Content was sent again after a compaction (files re-read, a plan).
    Restored {
        /// What came back: a path, `path (path only)`, or `plan`.
        items: Vec<String>,
        /// Chars added to the request.
        chars: usize,
    },
    /// Messages were dropped without a summary (windowing, pruning).
    Dropped {
        /// Messages removed.
        messages: usize,
        /// Why.
        why: String,
    },
    /// The history was repaired for the provider (synthetic result, orphan removed).
    Repaired {
        /// Tool call id.
        id: String,
        /// What was done.
        what: String,
    },
    /// A break-even gate skipped the wrapped policy's edit of the cached
    /// prefix: the request sent is the previous one plus what arrived.
    Gated {
        /// Tokens the skipped edit would have freed.
        frees: u64,
        /// Later calls it would have needed to repay its rewrite.
        payback_calls: u64,
        /// Later calls expected (an estimate: the calls made so far).
        expected_calls: u64,
        /// The price sheet the gate weighed it with.
        sheet: String,
    },
    /// A model role failed (summary call error); what the policy did instead.
    ModelFailed {
        /// The role (`summary`, `selector`).
        role: &'static str,
        /// What happened next.
        outcome: String,
    },
}

/// What a policy gets besides the history.
pub struct PolicyCtx<'a> {
    /// The run's storage (result files, archives).
    pub storage: &'a dyn Storage,
    /// A directory of the policy's own inside storage (exists; write below it).
    pub root: &'a Path,
    /// The run's token counter (policies in [`Unit::Tokens`] size with it).
    pub tokens: &'a dyn TokenCounter,
    /// 0-based index of the model call about to be made.
    pub turn: usize,
    /// Tokens of the fixed prefix the request carries besides the history
    /// (system prompt, tool definitions, first-turn context; an estimate, see
    /// `replay::envelope`): a policy that budgets the whole request counts
    /// it as its product does. 0 when the replay has none.
    pub envelope: usize,
    /// What the product itself counted after the last reply, where the log
    /// recorded it (the product's own policy only; see
    /// [`engine::Anchor`]).
    pub anchor: Option<crate::engine::Anchor>,
    /// Lines in each file a Read showed, by the Read's `tool_use` id,
    /// where the log records them ([`engine::Prefix::read_lines`]): what a
    /// port that re-reads a partly read file needs to size the rest.
    pub read_lines: Option<&'a crate::engine::ReadLines>,
    /// Milliseconds since the session started, when the transcript recorded times.
    pub now_ms: Option<u64>,
    /// The deterministic model behind summaries and choices.
    pub model: &'a mut dyn ModelRole,
}

impl PolicyCtx<'_> {
    /// Runs `f` with a context the unit tests of policies share: an empty
    /// in-memory store, the policy's directory at `root`, the `approx`
    /// counter, the first call and no recorded time. Public because the
    /// ports' tests live in `ctxlab-zoo`, and a harness testing its own
    /// policy needs the same thing.
    pub fn with_test<T>(
        root: &str,
        model: &mut dyn ModelRole,
        f: impl FnOnce(&mut PolicyCtx<'_>) -> T,
    ) -> T {
        let storage = crate::storage::MemFs::new();
        let mut ctx = PolicyCtx {
            storage: &storage,
            root: Path::new(root),
            tokens: &crate::tokens::Approx,
            turn: 0,
            envelope: 0,
            anchor: None,
            read_lines: None,
            now_ms: None,
            model,
        };
        f(&mut ctx)
    }
}

impl std::fmt::Debug for PolicyCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyCtx")
            .field("root", &self.root)
            .field("tokens", &self.tokens.name())
            .field("turn", &self.turn)
            .field("now_ms", &self.now_ms)
            .finish()
    }
}

/// The request a policy would send, and what it did to build it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prepared {
    /// The messages sent to the model (the system prompt is not modelled).
    pub request: Vec<Message>,
    /// What happened, in order.
    pub events: Vec<PolicyEvent>,
}

/// A context-management design.
pub trait Policy: Send {
    /// Name, source, constants.
    fn info(&self) -> PolicyInfo;

    /// How this policy's placeholders name where an original went.
    fn pointer_rules(&self) -> Vec<PointerRule>;

    /// Before one model call: rewrite `history` if the design does, and
    /// return the request. Called with the history including every message
    /// appended since the last call.
    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared>;

    /// The caller replaced the history this policy was last given, instead
    /// of only appending to it (`frozen:` feeds each request back as the
    /// history). A design that keeps what it derived from the history
    /// between calls (an edited copy grown by each call's new messages)
    /// drops it here; the others keep nothing and ignore this.
    fn history_replaced(&mut self) {}

    /// The product resumed from its log before the next call, with
    /// `history` loaded: the engine dropped from it what the log does not
    /// keep ([`Block::Unlogged`](crate::message::Block::Unlogged)), and
    /// `dropped` says whether there was any. A design that keeps a copy of
    /// the history drops it there too (by default the history counts as
    /// replaced when something was dropped); a product's port whose
    /// process state starts afresh at a resume (Claude Code's read-file
    /// state) notes where.
    fn resumed(&mut self, history: &[Message], dropped: bool) {
        let _ = history;
        if dropped {
            self.history_replaced();
        }
    }

    /// What the design works on, so that a replay can say when a session
    /// has nothing of it (the policy then equals `none`). Most designs can
    /// act on any message; those that touch only tool output or reasoning
    /// say so.
    fn acts_on(&self) -> shape::ActsOn {
        shape::ActsOn::Messages
    }

    /// Whether the design sends OpenAI Responses requests (`/responses`
    /// input items): the engine then checks every request against the
    /// [Responses rules](responses) as well as the Anthropic and Chat ones.
    fn sends_responses(&self) -> bool {
        false
    }

    /// Storage and root the policy writes to itself, when it owns them (the
    /// course pipeline keeps its own result and transcript directories); the
    /// engine then gives the checker these instead of the run's.
    fn own_storage(&self) -> Option<(crate::storage::Shared, PathBuf)> {
        None
    }

    /// Whether an error of this policy ends the replay (exit 3) instead of
    /// being recorded as the end of its run: a process the user brings that
    /// misbehaves is a failure of the setup, not a finding about a design.
    fn errors_are_fatal(&self) -> bool {
        false
    }

    /// Override constants by their upstream names (a [`variant`]). Designs
    /// whose constants are a serde struct set them with
    /// [`variant::set_fields`]; the others have none a variant can set.
    fn configure(&mut self, overrides: &variant::Overrides) -> Result<(), String> {
        match overrides.keys().next() {
            None => Ok(()),
            Some(k) => Err(format!(
                "`{k}`: this policy has no constants a variant can set"
            )),
        }
    }

    /// Every key [`Policy::configure`] accepts, with its value in this
    /// configuration (the default, for a policy as built): what
    /// `lab policies --format json` lists as `variant_keys`. Empty for a
    /// policy a variant cannot configure. A test sets every listed key of
    /// every policy to its listed value and expects it accepted.
    fn variant_keys(&self) -> variant::Overrides {
        variant::Overrides::new()
    }
}

/// Where a policy writes inside a run's storage: `<run root>/<policy name>`.
pub fn policy_root(run_root: &Path, name: &str) -> PathBuf {
    run_root.join(&*crate::storage::root::safe_id(name, 64))
}
