//! The replay engine: any policy, any session, one set of verdicts.
//!
//! A session is the recorded message list. Each assistant message is a model
//! call: before it, the policy turns the live history into the request it
//! would send (rewriting the history where the design does); then the recorded
//! reply is appended, and so are the messages that follow it. Every request
//! is sized and run through the [validity oracle](super::validity); at the end
//! the [checker](super::findings) classifies every original tool result.
//!
//! Every request also carries the session's fixed prefix ([`Prefix`]: the
//! system prompt, tools and first-turn context a transcript does not hold),
//! which policies see as [`PolicyCtx::envelope`] and observers as
//! [`View::envelope`]; the product's own policy switches to the recorded
//! post-compaction prefix when it compacts the whole history.
//!
//! Only the live history and a per-request record are kept, so memory is the
//! context size plus a few numbers per call, not calls × context.

use std::borrow::Borrow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::findings::{self, Findings, Ledger};
use super::model::{Extractive, ModelRole};
use super::validity::{self, Violation};
use super::{Policy, PolicyCtx, PolicyEvent};
use crate::error::{LabError, LabResult};
use crate::message::{Message, Role};
use crate::storage::{MemFs, Shared, Storage};
use crate::tokens::sizes::{Memo, MessageSize};
use crate::tokens::{Approx, TokenCounter};

/// One session to replay.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    /// Name for reports (a file name, a scenario id).
    pub name: &'a str,
    /// The recorded messages, in order.
    pub messages: &'a [Message],
    /// Milliseconds since the session started, per message, when recorded.
    pub times_ms: Option<&'a [Option<u64>]>,
}

/// What one request looked like.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CallRecord {
    /// Index of the recorded assistant message this request produced.
    pub at: usize,
    /// Messages in the request.
    pub messages: usize,
    /// `len(json.dumps(request, ensure_ascii=False))`.
    pub chars: usize,
    /// Tokens of the request's messages by the run's counter.
    pub tokens: usize,
    /// Tokens of the fixed prefix sent before them (an estimate; 0 and not
    /// serialized when the replay has none).
    #[serde(skip_serializing_if = "is_zero")]
    pub envelope: usize,
    /// Events the policy recorded before this call.
    pub events: usize,
    /// Provider rules the request breaks (Anthropic and OpenAI Chat; OpenAI
    /// Responses too when the policy sends `/responses` requests).
    pub violations: Vec<Violation>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The fixed prefix of every request (system prompt, tool definitions,
/// first-turn context), which a transcript does not record: sized by
/// `replay::envelope`, sent by the engine before every request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefix {
    /// Tokens at the first request.
    pub tokens: usize,
    /// Tokens after each of the product's own compactions, in order: what the
    /// product sends after compacting besides the summary (the system prompt
    /// and the content it re-attaches), used when `product_policy` compacts.
    pub after_compaction: Vec<usize>,
    /// The policy that is the product's own (`claude-code` for a Claude Code
    /// log): its whole-history compactions switch to `after_compaction`.
    pub product_policy: Option<String>,
    /// What the product itself counted after each recorded reply, by the
    /// reply's index in the replayed messages (logs with recorded usage);
    /// the product's own policy sees the anchor of the last reply.
    pub anchors: std::collections::BTreeMap<usize, Anchor>,
    /// Messages, by index in the replayed messages, before which the
    /// product resumed from its log: a resumed process rebuilds its
    /// context from what the log keeps, so content the log does not keep
    /// ([`Block::Unlogged`](crate::message::Block::Unlogged)) is not sent
    /// again from there on.
    pub resumes: Vec<usize>,
    /// How many lines each file a Read showed only in part has, by the
    /// Read's `tool_use` id, where the log records it (Claude Code's
    /// `toolUseResult.file.totalLines`: log content, not usage, so every
    /// anchor reads it). The product re-reads such a file whole after
    /// compacting; its port sizes the rest from it.
    pub read_lines: ReadLines,
}

/// Lines in the file a Read showed, by the Read's `tool_use` id
/// ([`Prefix::read_lines`]).
pub type ReadLines = std::collections::BTreeMap<String, usize>;

/// The product's own count after a recorded reply: what the API reported
/// for the request that produced it (prompt tokens plus the reply's output,
/// the number Claude Code compares with its threshold), beside the run
/// counter's estimate of the messages the product had logged by then (from
/// its last compaction's summary on, the reply included). Their difference
/// is everything the log does not show (system prompt, tools, unlogged
/// attachments) plus the estimator's error, measured at that request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anchor {
    /// Recorded input + cache read + cache write + output tokens.
    pub recorded: usize,
    /// The run counter's tokens of the product's logged history at that reply.
    pub logged: usize,
}

impl Anchor {
    /// The product's count for a history whose messages up to the anchored
    /// reply estimate `estimate` tokens: the recorded count moved by how
    /// much that history differs from the product's logged one.
    pub fn count(&self, estimate: usize) -> usize {
        (self.recorded + estimate).saturating_sub(self.logged)
    }
}

impl Prefix {
    /// The prefix after `compactions` whole-history compactions of the
    /// product's own policy: the recorded one of that compaction, else the
    /// last recorded, else the first request's.
    pub fn after(&self, compactions: usize) -> usize {
        if compactions == 0 {
            return self.tokens;
        }
        self.after_compaction
            .get(compactions - 1)
            .or(self.after_compaction.last())
            .copied()
            .unwrap_or(self.tokens)
    }
}

/// A whole replay of one session under one policy.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PolicyRun {
    /// Policy name.
    pub policy: String,
    /// Session name.
    pub session: String,
    /// Tokenizer the `tokens` column is counted with.
    pub tokenizer: String,
    /// One record per model call.
    pub calls: Vec<CallRecord>,
    /// Every event, with the index of the call it preceded.
    pub events: Vec<(usize, PolicyEvent)>,
    /// The checker's verdict on the end of the run.
    pub findings: Findings,
    /// Requests that break a provider rule.
    pub invalid_requests: u64,
    /// Set when the policy failed and the run ended there (as the harness would).
    pub ended_by_error: Option<String>,
    /// Set when the session had nothing of the kind the policy acts on and
    /// the policy did nothing: the run equals `none`'s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl PolicyRun {
    /// The largest request, in chars.
    pub fn peak_chars(&self) -> usize {
        self.calls.iter().map(|c| c.chars).max().unwrap_or(0)
    }

    /// Events of one kind (`persisted`, `cleared`, `summarised`, ...).
    pub fn event_count(&self, kind: &str) -> usize {
        self.events
            .iter()
            .filter(|(_, e)| event_kind(e) == kind)
            .count()
    }
}

/// The serde tag of an event.
pub fn event_kind(e: &PolicyEvent) -> &'static str {
    match e {
        PolicyEvent::Persisted { .. } => "persisted",
        PolicyEvent::Cleared { .. } => "cleared",
        PolicyEvent::Truncated { .. } => "truncated",
        PolicyEvent::Summarised { .. } => "summarised",
        PolicyEvent::Restored { .. } => "restored",
        PolicyEvent::Dropped { .. } => "dropped",
        PolicyEvent::Repaired { .. } => "repaired",
        PolicyEvent::ModelFailed { .. } => "model_failed",
        PolicyEvent::Gated { .. } => "gated",
    }
}

/// What a replay runs with besides the policy.
pub struct Env {
    /// Storage the policy writes to and the checker reads.
    pub storage: Shared,
    /// The run's root inside storage (the policy gets `<root>/<policy name>`).
    pub root: PathBuf,
    /// Token counter for sizes and for policies that budget in tokens.
    pub tokens: Box<dyn TokenCounter>,
    /// The deterministic model behind summaries.
    pub model: Box<dyn ModelRole>,
    /// The fixed prefix every request carries (none by default).
    pub prefix: Prefix,
}

impl Default for Env {
    /// In-memory storage under `/ctxlab`, the approximate token counter and
    /// the extractive summariser with its stated capacity.
    fn default() -> Self {
        Env {
            storage: Arc::new(MemFs::new()),
            root: PathBuf::from("/ctxlab"),
            tokens: Box::new(Approx),
            model: Box::new(Extractive::default()),
            prefix: Prefix::default(),
        }
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("root", &self.root)
            .field("tokens", &self.tokens.name())
            .field("model", &self.model.name())
            .finish()
    }
}

/// What an observer sees of storage at a request: the policy's files and how
/// its placeholders point to them.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The storage the policy writes to.
    pub storage: &'a dyn Storage,
    /// The policy's root inside it.
    pub root: &'a Path,
    /// The policy's pointer grammar.
    pub rules: &'a [super::PointerRule],
    /// The run's token counter.
    pub tokens: &'a dyn TokenCounter,
    /// Tokens of the fixed prefix sent before the request's messages.
    pub envelope: usize,
    /// The request's messages' sizes, one per message, by the run's counter
    /// (measured once per distinct message); empty when the caller did not
    /// measure them.
    pub sizes: &'a [MessageSize],
    /// Per message of the request, the position in the previous request of
    /// a message equal to it (`==`), as the sizes memo found it; `None` for
    /// a message new or changed since; empty when the caller did not
    /// measure the request. Observers that keep something per message
    /// (retention) reuse it by this map, so a call costs them what changed.
    pub same: &'a [Option<usize>],
}

impl View<'_> {
    /// Tokens of `request` by the run's counter: from [`View::sizes`] when
    /// they were measured for it, else counted.
    pub fn request_tokens(&self, request: &[Message]) -> usize {
        if self.sizes.len() == request.len() {
            crate::tokens::sizes::request_tokens(self.sizes)
        } else {
            self.tokens.count_messages(request)
        }
    }

    /// `len(json.dumps(request))`: from [`View::sizes`] when they were
    /// measured for it, else serialised.
    pub fn request_chars(&self, request: &[Message]) -> usize {
        if self.sizes.len() == request.len() {
            crate::tokens::sizes::request_chars(self.sizes)
        } else {
            crate::pyjson::dumps_len(request)
        }
    }
}

impl std::fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("root", &self.root).finish()
    }
}

/// Something that measures a replay while it runs (retention, cost), so no
/// request has to be kept after it was seen.
pub trait Observer {
    /// Recorded message `index` was appended to the live history (after the
    /// request it answers, for an assistant message).
    fn on_message(&mut self, index: usize, message: &Message) {
        let _ = (index, message);
    }

    /// Request number `call` was sent before recorded message `at`.
    fn on_request(
        &mut self,
        call: usize,
        at: usize,
        request: &[Message],
        events: &[PolicyEvent],
        view: &View<'_>,
    ) {
        let _ = (call, at, request, events, view);
    }
}

/// Where `policy` keeps its files in a run: its own storage when it owns
/// one, else `<env.root>/<policy name>` in the run's; the directory is created.
pub fn workspace(policy: &dyn Policy, env: &Env) -> LabResult<(Shared, PathBuf)> {
    let (storage, root) = match policy.own_storage() {
        Some(own) => own,
        None => (
            env.storage.clone(),
            super::policy_root(&env.root, &policy.info().name),
        ),
    };
    storage
        .create_dir_all(&root)
        .map_err(|e| LabError::io("creating the policy's directory", root.clone(), e))?;
    Ok((storage, root))
}

/// What one model call is prepared with besides the run's [`Env`].
#[derive(Clone, Copy)]
pub struct Call<'a> {
    /// The policy's storage (from [`workspace`]).
    pub storage: &'a dyn Storage,
    /// The policy's root inside it (from [`workspace`]).
    pub root: &'a Path,
    /// 0-based index of the model call.
    pub turn: usize,
    /// Tokens of the fixed prefix this call carries.
    pub envelope: usize,
    /// The product's own count after the last reply (product policy only).
    pub anchor: Option<Anchor>,
    /// Milliseconds since the session started, when recorded.
    pub now_ms: Option<u64>,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("root", &self.root)
            .field("turn", &self.turn)
            .finish()
    }
}

/// One step of a run: before a model call, `policy` turns the live `history`
/// into the request (rewriting the history where the design does). Every
/// harness that drives a policy (the replay, the interlocked session) calls
/// this, so they build the policy's context the same way.
pub fn step(
    policy: &mut dyn Policy,
    history: &mut Vec<Message>,
    call: Call<'_>,
    env: &mut Env,
) -> LabResult<super::Prepared> {
    let mut ctx = PolicyCtx {
        storage: call.storage,
        root: call.root,
        tokens: env.tokens.as_ref(),
        turn: call.turn,
        envelope: call.envelope,
        anchor: call.anchor,
        read_lines: Some(&env.prefix.read_lines),
        now_ms: call.now_ms,
        model: env.model.as_mut(),
    };
    policy.prepare(history, &mut ctx)
}

/// Replay `session` through `policy`.
pub fn replay(
    policy: &mut dyn Policy,
    session: Session<'_>,
    env: &mut Env,
) -> LabResult<PolicyRun> {
    replay_observed(policy, session, env, &mut [])
}

/// Replay `session` through `policy`, showing every request and message to `observers`.
pub fn replay_observed(
    policy: &mut dyn Policy,
    session: Session<'_>,
    env: &mut Env,
    observers: &mut [&mut dyn Observer],
) -> LabResult<PolicyRun> {
    let note = policy.acts_on().note(session.messages);
    let messages = session.messages.iter().map(Ok);
    let head = Head {
        name: session.name,
        note,
        times_ms: session.times_ms,
        fail_fast: false,
        lean: false,
        unchecked: false,
    };
    drive(policy, head, messages, env, observers)
}

/// [`replay_observed`] for a run whose only product is what its observers
/// saw (retention's replay of a planted copy, whose run is not reported):
/// observers see every request, its events and every message exactly as
/// in [`replay_observed`], but the run keeps no events and no ledger, runs
/// no checker and no validity oracle, so nothing is spent on a verdict no
/// one reads. A policy error ends the replay as there.
pub fn replay_for_observers(
    policy: &mut dyn Policy,
    session: Session<'_>,
    env: &mut Env,
    observers: &mut [&mut dyn Observer],
) -> LabResult<()> {
    let messages = session.messages.iter().map(Ok);
    let head = Head {
        name: session.name,
        note: None,
        times_ms: session.times_ms,
        fail_fast: false,
        lean: true,
        unchecked: true,
    };
    drive(policy, head, messages, env, observers).map(drop)
}

/// Replay a session read one message at a time (a streamed import) as
/// [`replay_observed`] does, never holding it whole: only the live history
/// is kept. The first message that fails to read ends the replay with its
/// error, and so does a policy that fails (the course loop stops there
/// with the pipeline's own error; [`replay_observed`] records it and ends
/// the run instead, as a harness would). No "nothing to act on" note: that
/// needs the whole session.
pub fn replay_stream<M: Borrow<Message>>(
    policy: &mut dyn Policy,
    name: &str,
    messages: impl Iterator<Item = LabResult<M>>,
    env: &mut Env,
    observers: &mut [&mut dyn Observer],
) -> LabResult<PolicyRun> {
    let head = Head {
        name,
        note: None,
        times_ms: None,
        fail_fast: true,
        lean: false,
        unchecked: false,
    };
    drive(policy, head, messages, env, observers)
}

/// [`replay_stream`] for runs too long to keep a record of everything (a
/// long horizon of millions of tokens): observers see every request and
/// its events as usual, but the run keeps no events (projecting designs
/// re-record every cleared result at every call, so the list grows with
/// the square of the calls) and no ledger of originals, so it has no
/// checker verdict: memory is the live history and a few numbers per call.
pub fn replay_stream_lean<M: Borrow<Message>>(
    policy: &mut dyn Policy,
    name: &str,
    messages: impl Iterator<Item = LabResult<M>>,
    env: &mut Env,
    observers: &mut [&mut dyn Observer],
) -> LabResult<PolicyRun> {
    let head = Head {
        name,
        note: None,
        times_ms: None,
        fail_fast: true,
        lean: true,
        unchecked: false,
    };
    drive(policy, head, messages, env, observers)
}

/// What a run knows of its session before the first message.
struct Head<'a> {
    name: &'a str,
    note: Option<String>,
    times_ms: Option<&'a [Option<u64>]>,
    /// A policy error is the replay's error, not a recorded end of the run.
    fail_fast: bool,
    /// Keep no events and no ledger ([`replay_stream_lean`]).
    lean: bool,
    /// Run no validity oracle ([`replay_for_observers`]).
    unchecked: bool,
}

/// The loop every replay runs: a model call before each assistant message,
/// then the message arrives.
fn drive<M: Borrow<Message>>(
    policy: &mut dyn Policy,
    head: Head<'_>,
    messages: impl Iterator<Item = LabResult<M>>,
    env: &mut Env,
    observers: &mut [&mut dyn Observer],
) -> LabResult<PolicyRun> {
    let mut walk = Walk::start(policy, head.name, head.note, env)?;
    walk.lean = head.lean;
    walk.unchecked = head.unchecked;
    for (i, m) in messages.enumerate() {
        let m = m?;
        let m = m.borrow();
        if env.prefix.resumes.contains(&i) {
            let dropped = walk.resume();
            policy.resumed(&walk.history, dropped);
        }
        if m.role == Role::Assistant {
            let now_ms = head.times_ms.and_then(|t| t.get(i).copied().flatten());
            if let Err(e) = walk.model_call(policy, env, observers, i, now_ms) {
                if head.fail_fast || policy.errors_are_fatal() {
                    return Err(e);
                }
                walk.run.ended_by_error = Some(e.to_string());
                break;
            }
        }
        walk.arrive(i, m, observers);
    }
    Ok(walk.finish(policy))
}

/// A replay under way: the policy's workspace, the live history and what
/// the model last saw.
struct Walk {
    storage: Shared,
    root: PathBuf,
    rules: Vec<super::PointerRule>,
    run: PolicyRun,
    history: Vec<Message>,
    /// What the model last saw, plus what arrived after: the checker judges
    /// this, not the stored history, since a design may change only the
    /// request (server-side clearing) and keep its history intact.
    seen: Option<Vec<Message>>,
    ledger: Ledger,
    /// Whole-history compactions by the product's own policy so far (they
    /// switch the prefix to the recorded post-compaction one).
    product_compactions: usize,
    /// Whether this run's policy is the product's own.
    is_product_policy: bool,
    /// Keep no events and no ledger ([`replay_stream_lean`]).
    lean: bool,
    /// Run no validity oracle ([`replay_for_observers`]).
    unchecked: bool,
    /// The sizes of the messages of `seen` sent in the last request.
    memo: Memo,
    /// The policy sends `/responses` requests: check them against the
    /// Responses input-item rules too.
    responses: bool,
}

impl Walk {
    fn start(
        policy: &dyn Policy,
        session: &str,
        note: Option<String>,
        env: &Env,
    ) -> LabResult<Walk> {
        // In the order the policy was always asked: name, rules, workspace.
        let name = policy.info().name;
        let rules = policy.pointer_rules();
        let (storage, root) = workspace(policy, env)?;
        let is_product_policy = env.prefix.product_policy.as_deref() == Some(name.as_str());
        Ok(Walk {
            storage,
            root,
            rules,
            run: PolicyRun {
                policy: name,
                session: session.to_string(),
                tokenizer: env.tokens.name().to_string(),
                calls: Vec::new(),
                events: Vec::new(),
                findings: Findings::default(),
                invalid_requests: 0,
                ended_by_error: None,
                note,
            },
            history: Vec::new(),
            seen: None,
            ledger: Ledger::default(),
            product_compactions: 0,
            is_product_policy,
            lean: false,
            unchecked: false,
            memo: Memo::default(),
            responses: policy.sends_responses(),
        })
    }

    /// The model call before recorded message `at`: the policy prepares the
    /// request, observers see it, the run records it; the policy's error
    /// when it failed.
    fn model_call(
        &mut self,
        policy: &mut dyn Policy,
        env: &mut Env,
        observers: &mut [&mut dyn Observer],
        at: usize,
        now_ms: Option<u64>,
    ) -> LabResult<()> {
        let call = Call {
            storage: self.storage.as_ref(),
            root: &self.root,
            turn: self.run.calls.len(),
            envelope: env.prefix.after(self.product_compactions),
            anchor: self.anchor(env),
            now_ms,
        };
        let prepared = step(policy, &mut self.history, call, env)?;
        if self.is_product_policy && prepared.events.iter().any(replaces_history) {
            self.product_compactions += 1;
        }
        let envelope = env.prefix.after(self.product_compactions);
        let previous = self.seen.as_deref().unwrap_or(&[]);
        self.memo
            .measure(previous, &prepared.request, env.tokens.as_ref());
        let view = View {
            storage: self.storage.as_ref(),
            root: &self.root,
            rules: &self.rules,
            tokens: env.tokens.as_ref(),
            envelope,
            sizes: self.memo.sizes(),
            same: self.memo.reused(),
        };
        for o in observers.iter_mut() {
            let call = self.run.calls.len();
            o.on_request(call, at, &prepared.request, &prepared.events, &view);
        }
        record_call(
            &mut self.run,
            (at, envelope),
            &prepared.request,
            prepared.events,
            (self.memo.sizes(), self.responses && !self.unchecked),
            !self.unchecked,
        );
        if self.lean {
            // Counted in the call's record, not kept.
            self.run.events.clear();
        }
        self.seen = Some(prepared.request);
        Ok(())
    }

    /// The recorded count of the reply the last call produced, for the
    /// product's own policy.
    fn anchor(&self, env: &Env) -> Option<Anchor> {
        let last = self.run.calls.last()?;
        self.is_product_policy
            .then(|| env.prefix.anchors.get(&last.at).copied())
            .flatten()
    }

    /// The product resumed from its log: what the log does not keep is
    /// gone from the history; whether any was. What the model last saw
    /// stays as it was (the memo's sizes describe it), so the next request
    /// measures afresh the messages that lost content.
    fn resume(&mut self) -> bool {
        let mut changed = false;
        for m in &mut self.history {
            changed |= m.drop_unlogged();
        }
        changed
    }

    /// Recorded message `i` arrives: into the ledger, the history and what
    /// the model saw.
    fn arrive(&mut self, i: usize, m: &Message, observers: &mut [&mut dyn Observer]) {
        if !self.lean {
            self.ledger.record(m);
        }
        for o in observers.iter_mut() {
            o.on_message(i, m);
        }
        if let Some(s) = self.seen.as_mut() {
            s.push(m.clone());
        }
        self.history.push(m.clone());
    }

    /// The run, judged by the checker on what the model last saw.
    fn finish(self, policy: &dyn Policy) -> PolicyRun {
        let mut run = self.run;
        let context = self.seen.unwrap_or(self.history);
        run.invalid_requests = run
            .calls
            .iter()
            .filter(|c| !c.violations.is_empty())
            .count() as u64;
        if self.lean {
            return run;
        }
        run.findings = findings::check(
            &context,
            &self.ledger,
            &policy.pointer_rules(),
            self.storage.as_ref(),
            &self.root,
        );
        if !run.events.is_empty() {
            // It did act after all: the shape check was too coarse.
            run.note = None;
        }
        run
    }
}

/// A compaction that replaced the whole history (nothing kept but the
/// summary): the product starts a new conversation after it.
fn replaces_history(e: &PolicyEvent) -> bool {
    matches!(e, PolicyEvent::Summarised { kept: 0, .. })
}

fn record_call(
    run: &mut PolicyRun,
    (at, envelope): (usize, usize),
    request: &[Message],
    events: Vec<PolicyEvent>,
    (sizes, responses): (&[MessageSize], bool),
    checked: bool,
) {
    let call = run.calls.len();
    let mut violations = if checked {
        validity::check(request)
    } else {
        Vec::new()
    };
    if responses {
        violations.extend(super::responses::check(request));
    }
    run.calls.push(CallRecord {
        at,
        messages: request.len(),
        chars: crate::tokens::sizes::request_chars(sizes),
        tokens: crate::tokens::sizes::request_tokens(sizes),
        envelope,
        events: events.len(),
        violations,
    });
    run.events.extend(events.into_iter().map(|e| (call, e)));
}

/// The root a policy run writes under, for callers that inspect storage after.
pub fn run_root(env: &Env, policy: &str) -> PathBuf {
    super::policy_root(Path::new(&env.root), policy)
}

impl PolicyRun {
    /// The run as registry counters: the checker's counts, validity per
    /// provider and per rule, and what the policy did. Every rule kind is
    /// listed (zero when clean), so an experiment can name any of them.
    pub fn counters(&self) -> crate::counters::Counters {
        use super::validity::{Kind, Provider};
        let mut c = crate::counters::Counters::default();
        let f = &self.findings;
        for (name, n) in [
            ("lost_forever", &f.lost_forever),
            ("pointer_lost", &f.pointer_lost),
            ("dangling_pointers", &f.dangling_pointers),
            ("orphan_files", &f.orphans),
            ("archive_gaps", &f.archive_gaps),
        ] {
            c.count(name, n.count, n.samples.clone());
        }
        c.count(
            "invalid_requests",
            self.invalid_requests,
            std::iter::empty(),
        );
        for p in [
            Provider::Anthropic,
            Provider::OpenAi,
            Provider::OpenAiResponses,
        ] {
            let bad: Vec<String> = self
                .calls
                .iter()
                .enumerate()
                .filter(|(_, r)| r.violations.iter().any(|v| v.provider == p))
                .map(|(i, _)| format!("request {}", i + 1))
                .collect();
            let name = match p {
                Provider::Anthropic => "invalid_anthropic",
                Provider::OpenAi => "invalid_openai",
                Provider::OpenAiResponses => "invalid_openai_responses",
            };
            c.count(name, bad.len() as u64, bad);
        }
        for kind in Kind::ALL {
            let ids: Vec<String> = self
                .calls
                .iter()
                .flat_map(|r| &r.violations)
                .filter(|v| v.kind == kind)
                .map(|v| v.id.clone())
                .collect();
            c.count(kind.name(), ids.len() as u64, ids);
        }
        for kind in ["summarised", "dropped", "model_failed", "repaired"] {
            c.count(kind, self.event_count(kind) as u64, std::iter::empty());
        }
        let skips: Vec<String> = self
            .events
            .iter()
            .filter(|(_, e)| matches!(e, PolicyEvent::Gated { .. }))
            .map(|(call, _)| format!("request {}", call + 1))
            .collect();
        c.count("gate_skips", skips.len() as u64, skips);
        c.count("originals_in_context", f.in_context, std::iter::empty());
        c.flag(
            "completed",
            self.ended_by_error.is_none(),
            self.ended_by_error.clone(),
        );
        c
    }
}
