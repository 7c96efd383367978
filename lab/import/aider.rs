//! aider's Markdown chat log, `.aider.chat.history.md`, one session per
//! `# aider chat started at …` header.
//!
//! The writer is `aider/io.py` (`Aider-AI/aider`): `InputOutput.__init__`
//! appends `\n# aider chat started at TIME\n\n`, `user_input` one
//! `#### LINE  ` per input line, `ai_output` the reply's stripped text, and
//! every tool, status and confirmation line (`tool_output`, `tool_error`,
//! `confirm_ask`) goes in as `> LINE  `. The lines are read back as aider's
//! own reader does (`aider/utils.py`, `split_chat_history_markdown`, without
//! tool messages), byte for byte:
//!
//! * a line starting `# ` is dropped (headers, and also `# ` lines of a
//!   reply, as upstream drops them);
//! * a line starting `> ` ends the pending user and assistant messages and
//!   is a tool line (not a message);
//! * a line starting `#### ` ends the pending assistant message and adds
//!   `line[5:]` to the user message;
//! * any other line ends the pending user message and adds the line to the
//!   assistant message;
//! * a message whose text is only whitespace is dropped; kept messages keep
//!   their lines as written (`  \n` endings included).
//!
//! Deliberate differences from upstream's reader: the file is split into
//! sessions at its headers (upstream reads one session's text); tool lines
//! are not messages but each `> Tokens: N sent, M received.` line is kept in
//! [`super::ImportedSession::recorded_tokens`], the product's own `sent`
//! series (aider writes no record when it summarises its history; these
//! lines are its only trace).
//!
//! Damage (aider's log has no ids; its damage classes are these): a last
//! line with no newline (aider ends every write with one) is `truncated`,
//! kept as written; a `> Tokens:` line whose counts do not read is an
//! `invalid_record`, not recorded; lines before the first header (no
//! session they belong to) are an `invalid_record`, read as a session of
//! their own; a line that is not UTF-8 is an input error at its line.

use std::io::BufRead;

use serde::Serialize;

use super::{store_main, DiagnosticKind, ImportedSession, Origin, Sink, TranscriptFormat};
use crate::error::{LabError, LabResult};
use crate::message::{Content, Message, Role};

/// The header line that starts each session.
pub const SESSION_HEADER: &str = "# aider chat started at ";

/// Label suffix of the lines before the first header.
const PREAMBLE: &str = "(before the first header)";

/// One `> Tokens:` line: a model call as aider counted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordedTokens {
    /// 1-based line of the `> Tokens:` line.
    pub line: usize,
    /// Messages of `main` before this line: the call's reply is the last of them.
    pub after_messages: usize,
    /// `sent` as printed, read back (`3.2k` is 3200).
    pub sent: u64,
    /// The smallest count aider's `format_tokens` prints as this text.
    pub sent_min: u64,
    /// The largest count aider's `format_tokens` prints as this text.
    pub sent_max: u64,
    /// `received` as printed, read back.
    pub received: u64,
}

/// A token count as `aider.utils.format_tokens` prints it (`850`, `3.2k`,
/// `16k`): (value, smallest, largest count printed so).
pub fn parse_count(text: &str) -> Option<(u64, u64, u64)> {
    if let Some(k) = text.strip_suffix('k') {
        if let Some((whole, tenth)) = k.split_once('.') {
            // count / 1000 with one decimal: 1000 <= count < 10000.
            let (w, t): (u64, u64) = (whole.parse().ok()?, tenth.parse().ok()?);
            if tenth.len() != 1 {
                return None;
            }
            let v = w * 1000 + t * 100;
            return Some((v, v.saturating_sub(50).max(1000), (v + 49).min(9999)));
        }
        // round(count / 1000): count >= 10000.
        let v = k.parse::<u64>().ok()? * 1000;
        return Some((v, v.saturating_sub(500).max(10_000), v + 499));
    }
    let v = text.parse().ok()?;
    Some((v, v, v))
}

/// `> Tokens: 3.2k sent, 21 received. Cost: …` (cache counts may stand
/// between): sent and received, or `None` when they do not read.
fn tokens_line(text: &str) -> Option<(u64, u64, u64, u64)> {
    let rest = text.strip_prefix("> Tokens: ")?;
    let mut sent = None;
    let mut received = None;
    for part in rest.split(", ") {
        let mut words = part.split_whitespace();
        let (Some(n), Some(label)) = (words.next(), words.next()) else {
            continue;
        };
        let label = label.trim_end_matches(['.', ',']);
        match label {
            "sent" => sent = parse_count(n),
            "received" => received = parse_count(n).map(|c| c.0),
            _ => {}
        }
    }
    let (s, lo, hi) = sent?;
    Some((s, lo, hi, received?))
}

/// One session under construction.
struct Building<'a> {
    session: ImportedSession,
    sink: Sink<'a>,
    main: Vec<Message>,
    origins: Vec<Origin>,
    user: Vec<String>,
    user_line: usize,
    assistant: Vec<String>,
    assistant_line: usize,
}

/// Read every session of the log.
pub(crate) fn read<'a, R: BufRead>(
    mut reader: R,
    sink: &Sink<'a>,
) -> LabResult<Vec<ImportedSession>> {
    let mut sessions = Vec::new();
    let mut current: Option<Building> = None;
    let mut buf = Vec::new();
    let mut line_no = 0;
    let mut before_header = 0;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| LabError::io("reading transcript", sink.source, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = std::str::from_utf8(&buf).map_err(|e| {
            sink.error(
                line_no,
                e.valid_up_to() + 1,
                "the line is not UTF-8".into(),
                "aider writes UTF-8; re-encode the file as UTF-8",
            )
        })?;
        if let Some(started) = line.strip_prefix(SESSION_HEADER) {
            // aider's first write starts with a blank line: nothing precedes the session.
            if let Some(b) = current.take().filter(|b| !b.is_empty_preamble()) {
                sessions.push(b.finish());
            }
            current = Some(Building::new(sink, sessions.len(), Some(started.trim())));
            continue;
        }
        let b = current.get_or_insert_with(|| Building::new(sink, 0, None));
        b.check(line, line_no, &mut before_header)?;
        b.line(line, line_no)?;
    }
    if let Some(b) = current.take() {
        sessions.push(b.finish());
    }
    if sessions.is_empty() {
        sessions.push(Building::new(sink, 0, None).finish());
    }
    Ok(sessions)
}

impl<'a> Building<'a> {
    fn new(sink: &Sink<'a>, index: usize, started: Option<&str>) -> Building<'a> {
        let mut session = ImportedSession::new(sink.source, TranscriptFormat::Aider);
        session.label = match started {
            Some(t) => format!("{}#{index} started {t}", session.label),
            None => format!("{} {PREAMBLE}", session.label),
        };
        Building {
            session,
            sink: sink.fork(),
            main: Vec::new(),
            origins: Vec::new(),
            user: Vec::new(),
            user_line: 0,
            assistant: Vec::new(),
            assistant_line: 0,
        }
    }

    /// Report a line outside any session (the first only) and a cut last line.
    fn check(&mut self, line: &str, line_no: usize, before_header: &mut usize) -> LabResult<()> {
        if self.is_preamble() && !line.trim().is_empty() {
            *before_header += 1;
            if *before_header == 1 {
                self.sink.report(
                    line_no,
                    1,
                    DiagnosticKind::InvalidRecord,
                    "a line before the first `# aider chat started at` header: no session holds it; read as a session of its own".into(),
                )?;
            }
        }
        if !line.ends_with('\n') {
            self.sink.report(
                line_no,
                line.chars().count() + 1,
                DiagnosticKind::Truncated,
                "the last line has no newline (the file was cut while aider appended to it); kept as written".into(),
            )?;
        }
        Ok(())
    }

    fn is_preamble(&self) -> bool {
        self.session.label.ends_with(PREAMBLE)
    }

    /// One line, by `split_chat_history_markdown`'s rules.
    fn line(&mut self, line: &str, line_no: usize) -> LabResult<()> {
        self.session.stats.records += 1;
        if line.starts_with("# ") {
            return Ok(());
        }
        if line.starts_with("> ") {
            self.flush(Role::Assistant);
            self.flush(Role::User);
            return self.tool(line, line_no);
        }
        if let Some(content) = line.strip_prefix("#### ") {
            self.flush(Role::Assistant);
            if self.user.is_empty() {
                self.user_line = line_no;
            }
            self.user.push(content.to_string());
            return Ok(());
        }
        self.flush(Role::User);
        if self.assistant.is_empty() {
            self.assistant_line = line_no;
        }
        self.assistant.push(line.to_string());
        Ok(())
    }

    /// A tool line: a `> Tokens:` line is recorded, any other skipped.
    fn tool(&mut self, line: &str, line_no: usize) -> LabResult<()> {
        let text = line.trim_end();
        if !text.starts_with("> Tokens:") {
            self.session.skip("tool line");
            return Ok(());
        }
        self.session.skip("tokens line");
        match tokens_line(text) {
            Some((sent, sent_min, sent_max, received)) => {
                self.session.recorded_tokens.push(RecordedTokens {
                    line: line_no,
                    after_messages: self.main.len(),
                    sent,
                    sent_min,
                    sent_max,
                    received,
                });
                Ok(())
            }
            None => self.sink.report(
                line_no,
                3,
                DiagnosticKind::InvalidRecord,
                "a `> Tokens:` line whose sent / received counts do not read; not recorded".into(),
            ),
        }
    }

    /// End the pending message of `role`: kept unless only whitespace.
    fn flush(&mut self, role: Role) {
        let (lines, line) = match role {
            Role::User => (std::mem::take(&mut self.user), self.user_line),
            Role::Assistant => (std::mem::take(&mut self.assistant), self.assistant_line),
        };
        let text = lines.concat();
        if text.trim().is_empty() {
            return;
        }
        self.session.stats.message_records += 1;
        self.main.push(Message {
            role,
            content: Content::Text(text),
        });
        self.origins.push(Origin::at(line, 1, 0));
    }

    /// Lines before the first header that hold nothing.
    fn is_empty_preamble(&self) -> bool {
        self.is_preamble()
            && self.main.is_empty()
            && self.user.concat().trim().is_empty()
            && self.assistant.concat().trim().is_empty()
            && self.sink.diagnostics.is_empty()
    }

    fn finish(mut self) -> ImportedSession {
        self.flush(Role::Assistant);
        self.flush(Role::User);
        store_main(&mut self.session, self.main, self.origins);
        let mut session = self.session;
        self.sink.finish_into(&mut session);
        session
    }
}

/// The text starts with aider's session header.
fn sniffs(h: &crate::format::Head<'_>) -> bool {
    h.text.starts_with(SESSION_HEADER.as_bytes())
}

/// The `aider` format's registration (`format_list.rs`).
pub const FORMAT: crate::format::Format = crate::format::Format {
    name: "aider",
    sniff: Some((5, sniffs)),
    name_endings: &[".aider.chat.history.md"],
    extensions: &[],
    product: Some("aider-chat-summary"),
    compaction_by_index: false,
    read: |input| read(input.reader, &input.sink),
};
