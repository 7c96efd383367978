//! The session-memory file and the summary message built from it: the
//! template the file starts as, the update prompt the extraction is asked
//! with, the per-section cut before compaction and the continuation text.
//!
//! Strings byte for byte from `src/services/SessionMemory/prompts.ts` and
//! `src/services/compact/prompt.ts` of
//! `DroxKiwi/claude-code-leak-packaged@fb1320d1` (the
//! `claude-code-best/claude-code@50049c61` mirror has the same code with its
//! strings translated into Chinese).

use std::sync::OnceLock;

use regex::Regex;

/// `MAX_SECTION_LENGTH`: tokens per section before the cut.
pub const MAX_SECTION_LENGTH: usize = 2000;

/// What a cut section ends with.
pub const SECTION_TRUNCATED: &str = "\n[... section truncated for length ...]";

/// `DEFAULT_SESSION_MEMORY_TEMPLATE`.
pub const DEFAULT_SESSION_MEMORY_TEMPLATE: &str = r#"
# Session Title
_A short and distinctive 5-10 word descriptive title for the session. Super info dense, no filler_

# Current State
_What is actively being worked on right now? Pending tasks not yet completed. Immediate next steps._

# Task specification
_What did the user ask to build? Any design decisions or other explanatory context_

# Files and Functions
_What are the important files? In short, what do they contain and why are they relevant?_

# Workflow
_What bash commands are usually run and in what order? How to interpret their output if not obvious?_

# Errors & Corrections
_Errors encountered and how they were fixed. What did the user correct? What approaches failed and should not be tried again?_

# Codebase and System Documentation
_What are the important system components? How do they work/fit together?_

# Learnings
_What has worked well? What has not? What to avoid? Do not duplicate items from other sections_

# Key results
_If the user asked a specific output such as an answer to a question, a table, or other document, repeat the exact result here_

# Worklog
_Step by step, what was attempted, done? Very terse summary for each step_
"#;

/// `getDefaultUpdatePrompt()` with `MAX_SECTION_LENGTH` in place;
/// `{{currentNotes}}` and `{{notesPath}}` are filled per extraction.
pub const UPDATE_PROMPT: &str = r#"IMPORTANT: This message and these instructions are NOT part of the actual user conversation. Do NOT include any references to "note-taking", "session notes extraction", or these update instructions in the notes content.

Based on the user conversation above (EXCLUDING this note-taking instruction message as well as system prompt, claude.md entries, or any past session summaries), update the session notes file.

The file {{notesPath}} has already been read for you. Here are its current contents:
<current_notes_content>
{{currentNotes}}
</current_notes_content>

Your ONLY task is to use the Edit tool to update the notes file, then stop. You can make multiple edits (update every section as needed) - make all Edit tool calls in parallel in a single message. Do not call any other tools.

CRITICAL RULES FOR EDITING:
- The file must maintain its exact structure with all sections, headers, and italic descriptions intact
-- NEVER modify, delete, or add section headers (the lines starting with '#' like # Task specification)
-- NEVER modify or delete the italic _section description_ lines (these are the lines in italics immediately following each header - they start and end with underscores)
-- The italic _section descriptions_ are TEMPLATE INSTRUCTIONS that must be preserved exactly as-is - they guide what content belongs in each section
-- ONLY update the actual content that appears BELOW the italic _section descriptions_ within each existing section
-- Do NOT add any new sections, summaries, or information outside the existing structure
- Do NOT reference this note-taking process or instructions anywhere in the notes
- It's OK to skip updating a section if there are no substantial new insights to add. Do not add filler content like "No info yet", just leave sections blank/unedited if appropriate.
- Write DETAILED, INFO-DENSE content for each section - include specifics like file paths, function names, error messages, exact commands, technical details, etc.
- For "Key results", include the complete, exact output the user requested (e.g., full table, full answer, etc.)
- Do not include information that's already in the CLAUDE.md files included in the context
- Keep each section under ~2000 tokens/words - if a section is approaching this limit, condense it by cycling out less important details while preserving the most critical information
- Focus on actionable, specific information that would help someone understand or recreate the work discussed in the conversation
- IMPORTANT: Always update "Current State" to reflect the most recent work - this is critical for continuity after compaction

Use the Edit tool with file_path: {{notesPath}}

STRUCTURE PRESERVATION REMINDER:
Each section has TWO parts that must be preserved exactly as they appear in the current file:
1. The section header (line starting with #)
2. The italic description line (the _italicized text_ immediately after the header - this is a template instruction)

You ONLY update the actual content that comes AFTER these two preserved lines. The italic description lines starting and ending with underscores are part of the template structure, NOT content to be edited or removed.

REMEMBER: Use the Edit tool in parallel and stop. Do not continue after the edits. Only include insights from the actual user conversation, never from these note-taking instructions. Do not delete or change section headers or italic _section descriptions_."#;

/// The opening of every continuation message (`getCompactUserSummaryMessage`).
pub const CONTINUED: &str = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n";

/// Text before the transcript's path.
pub const TRANSCRIPT_AT: &str = "read the full transcript at: ";

/// The transcript sentence up to its path.
const TRANSCRIPT_NOTE: &str = "\n\nIf you need specific details from before compaction (like exact code snippets, error messages, or content you generated), read the full transcript at: ";

/// Said when the messages after the summary are kept.
const PRESERVED: &str = "\n\nRecent messages are preserved verbatim.";

/// Appended when follow-up questions are suppressed (every automatic compaction).
const SUPPRESS: &str = "\nContinue the conversation from where it left off without asking the user any further questions. Resume directly — do not acknowledge the summary, do not recap what was happening, do not preface with \"I'll continue\" or similar. Pick up the last task as if the break never happened.";

/// Text before the session-memory file's path when a section was cut.
pub const MEMORY_AT: &str = "The full session memory can be viewed at: ";

/// The sentence appended when a section was cut, up to the path.
const CUT_NOTE: &str = "\n\nSome session memory sections were truncated for length. The full session memory can be viewed at: ";

/// The file as the extraction leaves it: the template with the stand-in
/// model's notes under its last section (`# Worklog`).
pub fn render(notes: &str) -> String {
    format!("{DEFAULT_SESSION_MEMORY_TEMPLATE}{notes}\n")
}

/// `isSessionMemoryEmpty`: the trimmed file is the trimmed template.
pub fn is_empty(content: &str) -> bool {
    content.trim() == DEFAULT_SESSION_MEMORY_TEMPLATE.trim()
}

/// `buildSessionMemoryUpdatePrompt` without the section-size reminders.
pub fn update_prompt(current_notes: &str, notes_path: &str) -> String {
    // One pass, as upstream's `substituteVariables`: a `{{notesPath}}` inside
    // the notes is not substituted again.
    let mut out = String::with_capacity(UPDATE_PROMPT.len() + current_notes.len());
    let mut rest = UPDATE_PROMPT;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(t) = tail.strip_prefix("{{currentNotes}}") {
            out.push_str(current_notes);
            rest = t;
        } else if let Some(t) = tail.strip_prefix("{{notesPath}}") {
            out.push_str(notes_path);
            rest = t;
        } else {
            out.push_str("{{");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

/// Length as JavaScript counts it (UTF-16 code units).
fn js_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `truncateSessionMemoryForCompact`: every `# ` section whose body is over
/// `MAX_SECTION_LENGTH * 4` chars keeps the whole lines that fit and ends
/// with [`SECTION_TRUNCATED`]. Returns the text and whether anything was cut.
pub fn truncate_for_compact(content: &str) -> (String, bool) {
    let max = MAX_SECTION_LENGTH * 4;
    let mut out: Vec<&str> = Vec::new();
    let mut header: Option<&str> = None;
    let mut body: Vec<&str> = Vec::new();
    let mut cut = false;
    for line in content.split('\n') {
        if line.starts_with("# ") {
            cut |= flush(header, &body, max, &mut out);
            header = Some(line);
            body.clear();
        } else {
            body.push(line);
        }
    }
    cut |= flush(header, &body, max, &mut out);
    (out.join("\n"), cut)
}

/// `flushSessionSection`: one section into `out`; whether it was cut.
fn flush<'a>(
    header: Option<&'a str>,
    body: &[&'a str],
    max: usize,
    out: &mut Vec<&'a str>,
) -> bool {
    let Some(header) = header else {
        out.extend_from_slice(body);
        return false;
    };
    out.push(header);
    let len = body.iter().map(|l| js_len(l)).sum::<usize>() + body.len().saturating_sub(1);
    if len <= max {
        out.extend_from_slice(body);
        return false;
    }
    let mut used = 0;
    for line in body {
        if used + js_len(line) + 1 > max {
            break;
        }
        out.push(line);
        used += js_len(line) + 1;
    }
    out.push(SECTION_TRUNCATED);
    true
}

/// `formatCompactSummary`: the first `<analysis>` block dropped, the first
/// `<summary>` block shown as `Summary:` and its trimmed body, runs of blank
/// lines squeezed to one, the whole trimmed.
pub fn format_compact_summary(summary: &str) -> String {
    static RES: OnceLock<[Regex; 3]> = OnceLock::new();
    let [analysis, tagged, blanks] = RES.get_or_init(|| {
        [
            Regex::new(r"<analysis>[\s\S]*?</analysis>").expect("a fixed pattern"),
            Regex::new(r"<summary>([\s\S]*?)</summary>").expect("a fixed pattern"),
            Regex::new(r"\n\n+").expect("a fixed pattern"),
        ]
    });
    let mut s = analysis.replacen(summary, 1, "").into_owned();
    if let Some(body) = tagged.captures(&s).map(|c| c[1].trim().to_string()) {
        let range = tagged.find(&s).expect("matched above").range();
        s.replace_range(range, &format!("Summary:\n{body}"));
    }
    blanks.replace_all(&s, "\n\n").trim().to_string()
}

/// `getCompactUserSummaryMessage` for an automatic compaction (follow-up
/// questions suppressed, not in proactive mode).
pub fn user_summary_message(summary: &str, transcript: Option<&str>, preserved: bool) -> String {
    let mut out = format!("{CONTINUED}{}", format_compact_summary(summary));
    if let Some(path) = transcript {
        out.push_str(TRANSCRIPT_NOTE);
        out.push_str(path);
    }
    if preserved {
        out.push_str(PRESERVED);
    }
    out.push_str(SUPPRESS);
    out
}

/// The session-memory summary message (`createCompactionResultFromSessionMemory`):
/// the cut file as the summary, the transcript's path, "preserved verbatim",
/// and where the whole file is when a section was cut.
pub fn session_memory_message(memory: &str, transcript: &str, memory_path: &str) -> String {
    let (cut_memory, cut) = truncate_for_compact(memory);
    let mut out = user_summary_message(&cut_memory, Some(transcript), true);
    if cut {
        out.push_str(CUT_NOTE);
        out.push_str(memory_path);
    }
    out
}
