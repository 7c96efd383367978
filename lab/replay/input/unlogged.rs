//! What Claude Code sent with a message and did not log, put back where
//! recorded usage shows it.
//!
//! Before each model call Claude Code computes *attachments* and sends them
//! as `isMeta` user content after the prompt or the tool results; the 2.x
//! logs keep none of them (Claude Code 2.0.21 `cli.js`; `notes/cost.md`,
//! "What the Claude Code logs leave out"). Their words are gone, but each
//! shows as a step in recorded usage: the request that carried it grew by
//! more than the messages the log added since the request before. So at a
//! message where the product's code attaches content — a prompt that
//! @-mentions a path, the results of a shell command that rewrote the
//! working tree, a partial Read (the changed-file diff is the rest of the
//! file), a subagent's return (its edits come back as changed files) — a
//! step of at least [`MIN_STEP`] is that content: an [`Block::Unlogged`] of the
//! step's size joins the message, in the run's counter's tokens, as the
//! envelope does for the fixed prefix. It stays in every later request, and
//! goes with its message when a policy drops or summarises that.
//!
//! A step at any other message is taken only when it is larger than
//! everything the log added since the request before
//! ([`Cause::Unattributed`]): no error in counting what the log added can
//! make that, and Claude Code checks every file it has read before every
//! call, so a file a hook, a formatter or the user changed comes back at
//! any message (a `git commit` whose hooks rewrote files, in one shared
//! log). A step below [`MIN_STEP`] (the drift of one call) is never taken.
//!
//! A resumed Claude Code process rebuilds its context from the log (the
//! `SessionStart` hook's `resume` record marks it), so from a resume on
//! nothing put back before it is sent, and no shell started before it is
//! reminded of: the engine drops the [`Block::Unlogged`] blocks there
//! (`Prefix::resumes`), and the steps after it are measured without them.
//!
//! One attachment's words the log does determine: the reminder Claude Code
//! sends for each background shell ([`shell_reminders`]). Those are put
//! back as the text they were, before any step is sized.

use crate::import::ImportedSession;
use crate::message::{Block, Content, Message, Role};
use crate::tokens::TokenCounter;

/// The smallest step taken for an attachment, in tokens: above the largest
/// one-call growth beyond the estimate in the shared logs that is not
/// content (about 900 tokens: golfgod's calls with five background shells,
/// before their reminders were rebuilt).
pub const MIN_STEP: usize = 1_000;

/// The largest step taken for an attachment, in tokens: past any model's
/// context window, so a larger one is a corrupt log's, not content.
pub const MAX_STEP: usize = 10_000_000;

/// Why the product attached content at a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A prompt names a path with `@` (`at_mentioned_files`).
    AtMention,
    /// A shell command rewrote the working tree (a git checkout, stash,
    /// pull…): files read before come back as changed.
    TreeRewrite,
    /// A Read with an offset or a limit: the rest of the file comes back as
    /// changed on a later check.
    PartialRead,
    /// A subagent returned: the files it edited come back as changed.
    SubagentReturn,
    /// No message names a cause, but the step is larger than everything
    /// the log added since the request before, so no counting error of
    /// that can make it: content only recorded usage shows (a file a hook,
    /// a formatter or the user changed comes back before any call).
    Unattributed,
}

impl Cause {
    /// The name an [`Block::Unlogged`] carries.
    pub fn what(self) -> &'static str {
        match self {
            Cause::AtMention => "@-mentioned files",
            Cause::TreeRewrite => "files the command changed",
            Cause::PartialRead => "rest of a partly read file",
            Cause::SubagentReturn => "files the subagent changed",
            Cause::Unattributed => "content only recorded usage shows",
        }
    }
}

/// Content put back at one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Attachment {
    /// Index in the session's `main` of the message it joins.
    pub at: usize,
    /// Its size in the run's counter's tokens.
    pub tokens: usize,
    /// Why the product attached it.
    pub cause: Cause,
}

/// The recorded prompt tokens of the request that produced the reply
/// whose record starts at a 1-based (line, column) of the log (`None`: no
/// recorded request). A place, not a line: a one-line `chat.json` holds
/// every record on line 1, and its numbers must not differ from the
/// indented file's.
pub type Recorded<'a> = &'a dyn Fn((usize, usize)) -> Option<u64>;

/// The attachments of `session` that its recorded usage (`recorded`)
/// shows, counted with `counter`: conversation by conversation (a real
/// compaction starts a new one), the step between two paired requests
/// beyond what the log added, where a message between them has a
/// [`Cause`] or the step is larger than that. Before each message of
/// `resumes` the product resumed from its log, so what was put back before
/// is no longer sent.
pub fn attachments(
    session: &ImportedSession,
    recorded: Recorded,
    resumes: &[usize],
    counter: &dyn TokenCounter,
) -> Vec<Attachment> {
    let starts: Vec<usize> = session.real_compaction_meta.iter().map(|c| c.at).collect();
    let mut out = Vec::new();
    // Tokens of the messages before `i` from the conversation's start
    // (attachments found so far included, `sent` of them), and the last
    // paired reply with its residual: recorded prompt tokens minus that
    // count.
    let (mut logged, mut sent) = (0usize, 0usize);
    let mut last: Option<Paired> = None;
    for (i, m) in session.main.iter().enumerate() {
        if starts.contains(&i) {
            (logged, sent, last) = (0, 0, None);
        }
        if resumes.contains(&i) {
            // No longer sent: the recorded count drops by it, and so does
            // the count of what the next request carries.
            logged = logged.saturating_sub(sent);
            last = last.map(|p| p.without(sent));
            sent = 0;
        }
        if let Some(recorded) = paired(session, recorded, i) {
            // Saturating: a corrupt log's huge numbers must not overflow.
            let mut residual = signed(recorded).saturating_sub(signed(logged));
            if let Some(p) = last {
                let step = Step {
                    tokens: residual.saturating_sub(p.residual),
                    added: logged.saturating_sub(p.logged),
                };
                if let Some(a) = attachment(&session.main, p.at, i, step) {
                    logged = logged.saturating_add(a.tokens);
                    sent = sent.saturating_add(a.tokens);
                    residual = residual.saturating_sub(signed(a.tokens));
                    out.push(a);
                }
            }
            last = Some(Paired {
                at: i,
                residual,
                logged,
            });
        }
        logged = logged.saturating_add(counter.count_message(m));
    }
    out
}

fn signed(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The recorded prompt tokens of the request that produced reply `i`.
fn paired(session: &ImportedSession, recorded: Recorded, i: usize) -> Option<u64> {
    if session.main[i].role != Role::Assistant {
        return None;
    }
    recorded(session.main_place(i)?)
}

/// A reply paired with its recorded request.
#[derive(Clone, Copy)]
struct Paired {
    /// Its index in `main`.
    at: usize,
    /// Recorded prompt tokens minus the count of the messages before it.
    residual: i64,
    /// That count.
    logged: usize,
}

impl Paired {
    /// The same request after `gone` tokens of its messages went: its
    /// residual stays (it did send them), but what the log adds after it
    /// is counted from the messages that are left.
    fn without(self, gone: usize) -> Paired {
        Paired {
            logged: self.logged.saturating_sub(gone),
            ..self
        }
    }
}

/// Growth between two paired requests.
struct Step {
    /// Recorded growth beyond the count of what the log added.
    tokens: i64,
    /// The count of what the log added.
    added: usize,
}

/// The attachment a `step` between the requests of replies `p` and `i`
/// shows: at the last user message before `i`, when the step is from
/// [`MIN_STEP`] to [`MAX_STEP`] and a message from `p` on has a cause, or,
/// with none, when the step is larger than what the log added
/// ([`Cause::Unattributed`]).
fn attachment(main: &[Message], p: usize, i: usize, step: Step) -> Option<Attachment> {
    let tokens = usize::try_from(step.tokens).ok();
    let tokens = tokens.filter(|s| (MIN_STEP..=MAX_STEP).contains(s))?;
    let cause = match main[p..i].iter().filter_map(cause).min() {
        Some(c) => c,
        None if tokens > step.added => Cause::Unattributed,
        None => return None,
    };
    let at = (p + 1..i).rev().find(|&k| main[k].role == Role::User)?;
    Some(Attachment { at, tokens, cause })
}

/// Why the product would attach content after `m`, if it would.
fn cause(m: &Message) -> Option<Cause> {
    match m.role {
        Role::User if !m.is_tool_result() && mentions_a_path(&m.text()) => Some(Cause::AtMention),
        Role::User => None,
        Role::Assistant => m.blocks().iter().filter_map(call_cause).min(),
    }
}

fn call_cause(b: &Block) -> Option<Cause> {
    let Block::ToolUse { name, input, .. } = b else {
        return None;
    };
    let str_of = |k: &str| input.get(k).and_then(serde_json::Value::as_str);
    match name.as_str() {
        "Bash" if crate::tokens::recorded::reminders::rewrites_worktree(str_of("command")?) => {
            Some(Cause::TreeRewrite)
        }
        "Read" if input.get("offset").is_some() || input.get("limit").is_some() => {
            Some(Cause::PartialRead)
        }
        "Task" | "Agent" => Some(Cause::SubagentReturn),
        _ => None,
    }
}

/// Whether a prompt names a path with `@` as Claude Code's at-mention
/// parser reads one: an `@` at the start or after white space, followed by
/// a quote or a path character. Command output Claude Code wraps in tags
/// (`<command-name>`…) is not a prompt.
fn mentions_a_path(text: &str) -> bool {
    if text.starts_with('<') {
        return false;
    }
    let mut before = ' ';
    for (k, c) in text.char_indices() {
        if c == '@' && before.is_whitespace() {
            let next = text[k + 1..].chars().next();
            if next.is_some_and(|n| n == '"' || n.is_alphanumeric() || "~./_-".contains(n)) {
                return true;
            }
        }
        before = c;
    }
    false
}

/// Puts back what `session`'s log leaves out, as every replay of it sends
/// it: the background-shell reminders of the Claude Code `release` that
/// wrote it, then the attachments its recorded usage shows (counted with
/// `counter`), which it returns. `resumes`: the messages before which the
/// product resumed from its log.
pub fn put_back(
    session: &mut ImportedSession,
    release: Option<&str>,
    recorded: Recorded,
    resumes: &[usize],
    counter: &dyn TokenCounter,
) -> Vec<Attachment> {
    for (at, text) in shell_reminders(&session.main, Buffer::of(release), resumes) {
        if let Some(m) = session.main.get_mut(at) {
            push_block(m, Block::Text { text });
        }
    }
    let found = attachments(session, recorded, resumes, counter);
    attach(&mut session.main, &found);
    found
}

/// Under `--anchor none`, the @-mentioned files put back by mechanism
/// ([`mechanisms`]): each file a prompt names with `@`, sized from a whole
/// Read of the same path in the log, or, in the first message, from
/// `first_request` (what the first request holds beyond the release's
/// envelope and its logged text, [`crate::replay::envelope::first_request_mentions`])
/// shared among the mentions nothing else sizes. Each joins its prompt as
/// an [`Block::Unlogged`] block naming the path, so the product's port
/// re-attaches it after compacting as the product re-reads it. Returns the
/// evidence of every mechanism (sized or not).
pub fn put_back_mentions(
    session: &mut ImportedSession,
    first_request: Option<usize>,
    counter: &dyn TokenCounter,
) -> Vec<mechanisms::Evidence> {
    let mut found = mechanisms::evidence(&session.main, counter);
    let first = session.main.iter().position(|m| m.role == Role::User);
    if let (Some(first), Some(remainder)) = (first, first_request) {
        mechanisms::size_from_first_request(&mut found, first, remainder);
    }
    for (at, what, tokens) in mechanisms::mentioned_files(&found) {
        if let (Some(m), true) = (session.main.get_mut(at), tokens > 0) {
            push_block(m, Block::Unlogged { what, tokens });
        }
    }
    found
}

/// Under `--anchor none`, the files changed on disk outside the product's
/// edits put back by mechanism ([`changed_files`]): where the log shows a
/// file in the read state before a file-rewriting command and after it,
/// the `changed_files` attachment rebuilt from the two texts joins the
/// command's results as an [`Block::Unlogged`] block naming the path.
/// `cwds`: each message's working directory (the log's); `resumes`: where
/// the product resumed and what its read state starts from there.
/// Returns every check, sized or only counted.
pub fn put_back_changed_files(
    session: &mut ImportedSession,
    cwds: &[Option<String>],
    resumes: changed_files::Resumes<'_>,
    counter: &dyn TokenCounter,
) -> Vec<changed_files::Check> {
    let compactions = session.real_compactions.clone();
    let found = changed_files::checks(&session.main, &compactions, resumes, cwds, counter);
    for c in &found {
        if let (Some(tokens), Some(m)) = (c.tokens, session.main.get_mut(c.at)) {
            let what = format!("{}{}", changed_files::CHANGED_FILE, c.path);
            push_block(m, Block::Unlogged { what, tokens });
        }
    }
    found
}

/// The most background-shell reminders rebuilt for one session: each is
/// about 60 tokens, so this is six million tokens of them, past what any
/// real session sends; a log that starts thousands of shells gets no more,
/// rather than a replay that runs out of memory.
pub const MAX_REMINDERS: usize = 100_000;

/// What a background shell's result says before its id.
const STARTED: &str = "Command running in background with ID: ";

/// What reading a background shell's output does to its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Buffer {
    /// Emptied: the reminders stop at the first read (Claude Code 1.x:
    /// 1.0.98 `cli.js` clears `stdout` as it hands it to BashOutput, and a
    /// second read returns nothing, claude-code-viewer lines 395 and 398).
    Emptied,
    /// Kept: every read returns the whole output again, so the reminders
    /// never stop (Claude Code 2.x: golfgod, 2.0.22, lines 17094 and 17294).
    Kept,
}

impl Buffer {
    /// The behaviour of a release (`2.0.22`); the newer one when unknown.
    pub fn of(release: Option<&str>) -> Buffer {
        let major = release.and_then(|r| r.split('.').next()?.parse::<u32>().ok());
        match major {
            Some(0 | 1) => Buffer::Emptied,
            _ => Buffer::Kept,
        }
    }
}

/// Claude Code's background-shell reminders (the `background_shell_status`
/// attachment, `background_task_status` in 1.x): before each call, one
/// for every shell whose output buffer is not empty. A shell's buffer is
/// empty in the results that start it, then filled; so a shell is reminded
/// of before every call after those results, until a BashOutput read
/// empties its buffer where `buffer` says reads do (later output is not in
/// the log, and not guessed). Only the conversation that started a shell is
/// reminded of it. Returned as (index of the user message before the call,
/// the reminder's text), in order; at most [`MAX_REMINDERS`]. A resumed
/// process (before each message of `resumes`) runs none of the shells
/// started before.
pub fn shell_reminders(
    main: &[Message],
    buffer: Buffer,
    resumes: &[usize],
) -> Vec<(usize, String)> {
    let mut commands: std::collections::HashMap<&str, &str> = Default::default();
    let mut started: Vec<(String, &str)> = Vec::new();
    let mut out = Vec::new();
    for (k, m) in main.iter().enumerate() {
        if resumes.contains(&k) {
            started.clear();
        }
        if m.role == Role::User {
            let room = MAX_REMINDERS.saturating_sub(out.len());
            let reminders = started.iter().map(|(id, c)| (k, shell_reminder(id, c)));
            out.extend(reminders.take(room));
        }
        for b in m.blocks() {
            match b {
                Block::ToolUse { id, name, input } => match (name.as_str(), buffer) {
                    ("Bash", _) => {
                        let background = input.get("run_in_background") == Some(&true.into());
                        if let (true, Some(c)) =
                            (background, input.get("command").and_then(|c| c.as_str()))
                        {
                            commands.insert(id, c);
                        }
                    }
                    ("BashOutput", Buffer::Emptied) => {
                        let read = input.get("bash_id").and_then(|i| i.as_str());
                        started.retain(|(id, _)| Some(id.as_str()) != read);
                    }
                    _ => {}
                },
                Block::ToolResult {
                    tool_use_id,
                    content,
                } => {
                    let shell = content.strip_prefix(STARTED).map(str::trim);
                    if let (Some(shell), Some(c)) = (shell, commands.get(tool_use_id.as_str())) {
                        started.push((shell.to_string(), c));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// How a background-shell reminder opens.
const SHELL_REMINDER: &str = "<system-reminder>\nBackground Bash ";

/// Whether `text` is a background-shell reminder [`put_back`] rebuilt.
pub fn is_shell_reminder(text: &str) -> bool {
    text.starts_with(SHELL_REMINDER)
}

/// The reminder's text as Claude Code writes it: its parts joined by
/// spaces, wrapped as a system reminder.
fn shell_reminder(id: &str, command: &str) -> String {
    format!(
        "{SHELL_REMINDER}{id} (command: {command}) (status: running) Has new output available. You can check its output using the BashOutput tool.\n</system-reminder>"
    )
}

/// The tokens of the [`Block::Unlogged`] blocks of `m`.
pub fn unlogged_tokens(m: &Message) -> usize {
    m.blocks()
        .iter()
        .map(|b| match b {
            Block::Unlogged { tokens, .. } => *tokens,
            _ => 0,
        })
        .sum()
}

/// `main` with each attachment joined to its message as an
/// [`Block::Unlogged`] block after its content.
pub fn attach(main: &mut [Message], attachments: &[Attachment]) {
    for a in attachments {
        if let Some(m) = main.get_mut(a.at) {
            let block = Block::Unlogged {
                what: a.cause.what().to_string(),
                tokens: a.tokens,
            };
            push_block(m, block);
        }
    }
}

/// `block` after the content of `m` (a plain-text message becomes a text
/// block and the new one).
fn push_block(m: &mut Message, block: Block) {
    match &mut m.content {
        Content::Blocks(b) => b.push(block),
        Content::Text(t) => {
            let text = std::mem::take(t);
            m.content = Content::Blocks(vec![Block::Text { text }, block]);
        }
    }
}

/// Attachments a replay put back into a session's messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PutBack {
    /// [`Block::Unlogged`] blocks.
    pub attachments: usize,
    /// Their tokens, in the run's counter.
    pub tokens: usize,
    /// Background-shell reminders rebuilt from the log (text blocks).
    pub shell_reminders: usize,
    /// Resumes, at each of which what was put back before is dropped.
    pub resumes: usize,
}

impl PutBack {
    /// The unlogged blocks of `messages`.
    pub fn of(messages: &[Message]) -> PutBack {
        let mut out = PutBack::default();
        for b in messages.iter().flat_map(|m| m.blocks()) {
            match b {
                Block::Unlogged { tokens, .. } => {
                    out.attachments += 1;
                    out.tokens += tokens;
                }
                Block::Text { text } if is_shell_reminder(text) => out.shell_reminders += 1,
                _ => {}
            }
        }
        out
    }
}

pub mod changed_files;
pub mod mechanisms;

#[cfg(test)]
mod tests;
