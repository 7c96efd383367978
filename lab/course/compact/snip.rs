//! Step 2: snip the old middle of the history, never splitting a pair.
//!
//! The implementation does not search for a legal cut: it moves both cut
//! points outward (seed section 5). On the head side, if the last kept
//! message calls a tool, the head grows to keep its results; on the tail side,
//! if the first kept message is a result, the tail grows back to keep its call.
//! The archived middle is replaced by a marker that says how many messages
//! went where: a pointer that can be followed, as with placeholders.

use super::{Compactor, Event};
use crate::error::LabResult;
use crate::message::{Content, Message};

/// The marker text (course: `[N messages archived at <path>]`).
pub fn marker_text(archived: usize, transcript: &str) -> String {
    // Pieces pushed into one allocation: `format!` cost a tenth of the step.
    let count = archived.to_string();
    let middle = " messages archived at ";
    let mut out = String::with_capacity(count.len() + middle.len() + transcript.len() + 2);
    out.push('[');
    out.push_str(&count);
    out.push_str(middle);
    out.push_str(transcript);
    out.push(']');
    out
}

/// Parse a marker back into its transcript path.
pub fn marker_path(content: &str) -> Option<&str> {
    const MIDDLE: &str = " messages archived at ";
    // A prebuilt searcher: the checker asks this of every text it reads, and
    // `split_once` set up a new one each time.
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(MIDDLE));
    let inner = content.strip_prefix('[')?.strip_suffix(']')?;
    let at = FINDER.find(inner.as_bytes())?;
    let (count, rest) = (&inner[..at], &inner[at + MIDDLE.len()..]);
    (!count.is_empty() && count.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// Move the head cut forward past the results of a trailing tool call.
pub(crate) fn protect_head(messages: &[Message], mut head_end: usize, tail_start: usize) -> usize {
    if head_end > 0 && messages[head_end - 1].has_tool_use() {
        while head_end < tail_start && messages[head_end].is_tool_result() {
            head_end += 1;
        }
    }
    head_end
}

/// Move the tail cut back so a leading result keeps its call.
pub(crate) fn protect_tail(messages: &[Message], tail_start: usize) -> usize {
    if tail_start > 0
        && tail_start < messages.len()
        && messages[tail_start].is_tool_result()
        && messages[tail_start - 1].has_tool_use()
    {
        tail_start - 1
    } else {
        tail_start
    }
}

/// What snip took out: where the marker stands and the messages it replaced.
pub type Snipped = Option<(usize, Vec<Message>)>;

/// The history as it was before snip, from snip's output and what it took out.
///
/// The course's steps 1 and 3 edit blocks in place while snip builds a new
/// list; when a summary call then raises, the session keeps the *old* list,
/// with those in-place edits but without the snip.
pub fn unsnip(messages: Vec<Message>, snipped: Snipped) -> Vec<Message> {
    let Some((head_end, middle)) = snipped else {
        return messages;
    };
    let mut out = Vec::with_capacity(messages.len() + middle.len());
    let mut it = messages.into_iter();
    out.extend(it.by_ref().take(head_end));
    out.extend(middle);
    out.extend(it.skip(1));
    out
}

impl Compactor {
    /// Step 2 (course `snip_compact`).
    pub fn snip(&mut self, messages: Vec<Message>) -> LabResult<Vec<Message>> {
        Ok(self.snip_parts(messages)?.0)
    }

    /// Course main: a middle that is one earlier archive marker of this run is left alone.
    fn is_archive_marker(&self, message: &Message) -> bool {
        let Content::Text(t) = &message.content else {
            return false;
        };
        super::course::archive_marker_path(t).is_some_and(|p| {
            super::course::file_resolves_inside(self.root.fs(), p, self.root.transcripts())
        })
    }

    /// Step 2, also returning the archived middle (for [`unsnip`]).
    pub fn snip_parts(&mut self, messages: Vec<Message>) -> LabResult<(Vec<Message>, Snipped)> {
        let c = &self.config.constants;
        let max = c.snip_max_messages;
        if messages.len() <= max {
            return Ok((messages, None));
        }
        let mut head_end = c.snip_head.min(messages.len());
        let mut tail_start = messages.len() - (max - c.snip_head - c.snip_tail_reserve);
        if self.config.switches.pair_protection {
            head_end = protect_head(&messages, head_end, tail_start);
            tail_start = protect_tail(&messages, tail_start);
        }
        if head_end >= tail_start {
            return Ok((messages, None));
        }
        if self.config.switches.skip_lone_archive_marker
            && tail_start - head_end == 1
            && self.is_archive_marker(&messages[head_end])
        {
            return Ok((messages, None));
        }
        let transcript = self.write_transcript(&messages)?;
        let archived = tail_start - head_end;
        self.events.push(Event::Snipped {
            archived,
            transcript: transcript.clone(),
        });
        let mut out = Vec::with_capacity(head_end + 1 + messages.len() - tail_start);
        let mut it = messages.into_iter();
        out.extend(it.by_ref().take(head_end));
        let middle: Vec<Message> = it.by_ref().take(archived).collect();
        out.push(Message::user_text(marker_text(archived, &transcript)));
        out.extend(it);
        Ok((out, Some((head_end, middle))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_text_is_the_formatted_one() {
        for n in [0, 1, 9, 10, 12, 99, 100, 4096, usize::MAX] {
            assert_eq!(
                marker_text(n, "/t/x.jsonl"),
                format!("[{n} messages archived at /t/x.jsonl]")
            );
        }
    }

    #[test]
    fn marker_round_trips() {
        let t = marker_text(12, "/tmp/x/transcript_0001.jsonl");
        assert_eq!(marker_path(&t), Some("/tmp/x/transcript_0001.jsonl"));
        assert_eq!(marker_path("[x messages archived at /a]"), None);
        assert_eq!(marker_path("hello"), None);
        assert_eq!(marker_path("[ messages archived at /a]"), None);
        assert_eq!(
            marker_path("[2 messages archived at /a messages archived at /b]"),
            Some("/a messages archived at /b")
        );
    }
}
