//! A conversation read back from its file, message by message.
//!
//! The first pass over a Claude Code log keeps, for each message record,
//! only where its bytes are ([`Body::At`]) and the few facts the chain and
//! merge rules need; [`Planned`] messages say which records make each
//! message. [`Raw`] then rebuilds the messages in order, reading each
//! record again from the file, and [`super::repair::Repair`] repairs them on
//! the way, so a long session is never held whole: [`LazyMain`] is what a
//! replay streams ([`super::ImportedSession::main_messages`]).
//!
//! Input without a file behind it (a string, a JSON array read as a stream)
//! keeps each content in memory ([`Body::Held`]); the same plan and stream
//! rebuild it.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::repair::{Repair, Sourced};
use super::{FileStats, Origin, Sink};
use crate::error::{LabError, LabResult};
use crate::message::{Block, Content, Message, Role};

/// Where a record's bytes are in its file, and its position for diagnostics.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) pos: (usize, usize),
}

/// A message record's content: in memory, or in the file.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Held(Content),
    At(Span),
}

/// Turns a record's bytes back into its message content (`None` when it no
/// longer holds one: the file changed).
pub(crate) type Decode =
    fn(&[u8], (usize, usize), &mut FileStats, &mut Sink<'_>) -> LabResult<Option<Content>>;

/// One message to rebuild: its records' contents, in order, merged.
#[derive(Debug, Clone)]
pub(crate) struct Planned {
    pub(crate) role: Role,
    pub(crate) parts: Vec<Body>,
    pub(crate) origin: Origin,
}

/// Reads bodies back: held ones are moved out, others read from the file.
struct Bodies {
    path: PathBuf,
    file: Option<File>,
    decode: Decode,
    buf: Vec<u8>,
    /// Counts and diagnostics of a second reading were taken at the first;
    /// these are thrown away.
    stats: FileStats,
    scratch: Sink<'static>,
}

impl Bodies {
    fn new(path: &Path, decode: Decode) -> Self {
        Bodies {
            path: path.to_path_buf(),
            file: None,
            decode,
            buf: Vec::new(),
            stats: FileStats::default(),
            scratch: Sink::scratch(),
        }
    }

    fn content(&mut self, body: Body) -> LabResult<Content> {
        let span = match body {
            Body::Held(c) => return Ok(c),
            Body::At(span) => span,
        };
        let io = |e| LabError::io("reading the transcript again", &self.path, e);
        if self.file.is_none() {
            self.file = Some(File::open(&self.path).map_err(io)?);
        }
        let file = self.file.as_mut().expect("opened above");
        self.buf.resize(span.len, 0);
        file.seek(SeekFrom::Start(span.offset)).map_err(io)?;
        file.read_exact(&mut self.buf).map_err(io)?;
        let decoded = (self.decode)(&self.buf, span.pos, &mut self.stats, &mut self.scratch)?;
        decoded.ok_or_else(|| LabError::Input {
            file: self.path.clone(),
            line: span.pos.0,
            column: span.pos.1,
            message: "the record read at import no longer holds a message (the file changed)"
                .to_string(),
            fix: "do not change a transcript while it is imported or replayed".to_string(),
        })
    }

    fn message(&mut self, p: Planned) -> LabResult<Sourced> {
        let mut parts = p.parts.into_iter();
        let first = match parts.next() {
            Some(b) => self.content(b)?,
            None => Content::Text(String::new()),
        };
        let mut m = Message {
            role: p.role,
            content: first,
        };
        for b in parts {
            append_content(&mut m, self.content(b)?);
        }
        Ok((m, p.origin))
    }
}

/// Planned messages rebuilt in order, before repair.
pub(crate) struct Raw {
    plan: std::vec::IntoIter<Planned>,
    bodies: Bodies,
}

impl Raw {
    pub(crate) fn new(plan: Vec<Planned>, path: &Path, decode: Decode) -> Self {
        Raw {
            plan: plan.into_iter(),
            bodies: Bodies::new(path, decode),
        }
    }
}

impl Iterator for Raw {
    type Item = LabResult<Sourced>;

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.plan.next()?;
        Some(self.bodies.message(p))
    }
}

/// Append `more` to a message's content, as one list of blocks (a string
/// content becomes one text block).
pub(crate) fn append_content(m: &mut Message, more: Content) {
    let mut blocks = match std::mem::replace(&mut m.content, Content::Blocks(Vec::new())) {
        Content::Blocks(b) => b,
        Content::Text(t) => vec![Block::Text { text: t }],
    };
    match more {
        Content::Blocks(mut b) => blocks.append(&mut b),
        Content::Text(t) => blocks.push(Block::Text { text: t }),
    }
    m.content = Content::Blocks(blocks);
}

/// A main conversation left in its file: the plan to rebuild it (every
/// body [`Body::At`]), read again on every [`LazyMain::messages`].
#[derive(Debug)]
pub struct LazyMain {
    path: PathBuf,
    plan: Vec<Planned>,
    decode: Decode,
    /// Characters of the first `tool_use` id (what a replay sizes its paths by).
    pub(crate) first_tool_use_chars: Option<usize>,
}

impl LazyMain {
    pub(crate) fn new(
        path: &Path,
        plan: Vec<Planned>,
        decode: Decode,
        first_tool_use_chars: Option<usize>,
    ) -> Self {
        LazyMain {
            path: path.to_path_buf(),
            plan,
            decode,
            first_tool_use_chars,
        }
    }

    /// The repaired messages, read from the file; the import already
    /// reported every diagnostic, so none is reported again.
    pub(crate) fn messages(&self) -> MainStream {
        MainStream {
            repair: Repair::new(Raw::new(self.plan.clone(), &self.path, self.decode)),
            scratch: Sink::scratch(),
        }
    }
}

/// The messages of a [`LazyMain`], repaired, one at a time.
pub struct MainStream {
    repair: Repair<Raw>,
    scratch: Sink<'static>,
}

impl Iterator for MainStream {
    type Item = LabResult<Message>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.repair.next_with(&mut self.scratch)?;
        Some(item.map(|(m, _)| m))
    }
}
