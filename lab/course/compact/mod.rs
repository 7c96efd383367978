//! Context compaction: the four-step pipeline that runs before every model call.
//!
//! 1. [`persist`]: oversized results of the newest batch go to disk by a batch
//!    budget, leaving `<persisted-output>` text with a `Full output: <path>` line.
//! 2. [`snip`]: the old middle of the history is archived to a JSONL transcript
//!    and replaced by a marker, never splitting a `tool_use` from its result.
//! 3. [`micro`]: old, already-seen results become one-line placeholders.
//! 4. [`summary`]: only if still over the limit, a full summary (proactive), or
//!    on an injected prompt-too-long a summary that keeps a tail (reactive).
//!
//! Steps 1 and 3 talk only through a text convention (the `Full output:` line),
//! which is why their order matters; every step records what it did as an
//! [`Event`] so the [`oracle`] module can tell *why* something was lost.

pub mod archived;
pub mod config;
pub mod course;
pub mod experiments;
pub mod hunt;
pub mod micro;
pub mod oracle;
pub mod pairs;
pub mod persist;
pub mod probe;
pub mod session;
pub mod snip;
pub mod summary;

use serde::Serialize;

use crate::error::LabResult;
use crate::message::{estimate_chars, Message};
pub use crate::storage::root::LabRoot;
pub use config::{Config, Constants, Profile, StepOrder, Switches};
pub use summary::Summarizer;

/// What a step did; the checker and the reports read these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A result's full text was written to `path` (step 1, fit, or save-before-omit).
    Saved {
        /// Which step saved it.
        step: Step,
        /// Tool id.
        id: String,
        /// File written (or reused).
        path: String,
        /// Chars of the saved text.
        chars: usize,
    },
    /// Step 3 replaced a result with a placeholder.
    Placeholder {
        /// Tool id.
        id: String,
        /// `true` for "saved at `<path>`", `false` for "omitted".
        with_pointer: bool,
        /// The replaced content was itself a placeholder (compacted twice).
        was_placeholder: bool,
        /// The model had not seen the result yet.
        unseen: bool,
    },
    /// Step 2 archived `archived` messages to `transcript`.
    Snipped {
        /// Number of messages replaced by the marker.
        archived: usize,
        /// Transcript path.
        transcript: String,
    },
    /// Step 4 (or the compact tool) replaced history with a summary.
    Summarized {
        /// Which entry point.
        entry: Entry,
        /// Messages kept after the summary (reactive tail).
        kept: usize,
        /// Transcript path.
        transcript: String,
    },
    /// The summarizer failed: as in the course the session ends there, with the
    /// history its in-place edits left (or, with `survive_summary_failure`, it goes on).
    SummaryFailed {
        /// Which entry point.
        entry: Entry,
    },
}

/// The pipeline steps, for step-level scripts and event attribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Step 1: batch-budget persistence.
    Persist,
    /// Step 2: snip the middle.
    Snip,
    /// Step 3: micro-compaction.
    Micro,
    /// Course main: persist largest results until under the target.
    Fit,
    /// Step 4: proactive summary (unconditional when run as a single step).
    Summary,
}

/// How compaction was entered (seed section 3: four entry points).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Entry {
    /// The per-call pipeline went over the limit.
    Auto,
    /// The model called the `compact` tool.
    Tool,
    /// The API answered prompt-too-long.
    Reactive,
    /// A script ran step 4 on its own.
    Manual,
}

/// The pipeline with its configuration, its roots on disk and its event log.
#[derive(Debug)]
pub struct Compactor {
    /// Switches and constants.
    pub config: Config,
    /// Where results and transcripts are written.
    pub root: LabRoot,
    /// The scripted summary model.
    pub summarizer: Summarizer,
    /// Everything the steps did, in order.
    pub events: Vec<Event>,
    /// A summary call failed and, as in the course, that ended the session
    /// (unless `survive_summary_failure`); drivers stop at the next action.
    pub halted: bool,
    transcripts_written: usize,
}

impl Compactor {
    /// A compactor writing under `root`.
    pub fn new(config: Config, root: LabRoot) -> LabResult<Self> {
        config.constants.validate()?;
        Ok(Compactor {
            config,
            root,
            summarizer: Summarizer::default(),
            events: Vec::new(),
            halted: false,
            transcripts_written: 0,
        })
    }

    /// The auto-compaction target of course main: `limit * 0.8`.
    pub fn target_chars(&self) -> usize {
        self.config.constants.context_char_limit * self.config.constants.micro_target_permille
            / 1000
    }

    /// The per-call pipeline (course `prepare`), in the configured order.
    pub fn prepare(
        &mut self,
        messages: Vec<Message>,
        active_request: &str,
    ) -> LabResult<Vec<Message>> {
        let sw = self.config.switches.clone();
        let limit = self.config.constants.context_char_limit;
        let mut messages = messages;
        let snipped;
        match sw.order {
            StepOrder::PersistFirst => {
                self.persist_batch(&mut messages)?;
                (messages, snipped) = self.snip_parts(messages)?;
                self.micro_stage(&mut messages)?;
            }
            StepOrder::MicroFirst => {
                self.micro_stage(&mut messages)?;
                (messages, snipped) = self.snip_parts(messages)?;
                self.persist_batch(&mut messages)?;
            }
        }
        if sw.fit_tool_results && estimate_chars(&messages) > limit {
            let target = self.target_chars();
            self.fit_tool_results(&mut messages, target)?;
        }
        if sw.auto_summary && estimate_chars(&messages) > limit {
            messages = match self.compact_history(messages, active_request, Entry::Auto) {
                Ok(m) => m,
                Err((m, _)) if sw.survive_summary_failure => m,
                Err((m, _)) => {
                    self.halted = true;
                    snip::unsnip(m, snipped)
                }
            };
        }
        Ok(messages)
    }

    /// Step 3 as `prepare` runs it: always (f9e8b28) or only over the limit, down to the target (main).
    fn micro_stage(&mut self, messages: &mut [Message]) -> LabResult<()> {
        if self.config.switches.micro_only_over_limit {
            if estimate_chars(messages) > self.config.constants.context_char_limit {
                let target = self.target_chars();
                self.micro_compact(messages, Some(target))?;
            }
            Ok(())
        } else {
            self.micro_compact(messages, None)
        }
    }

    /// Run one step on its own (step-level scripts such as the seed's scenario A).
    pub fn run_step(
        &mut self,
        step: Step,
        messages: Vec<Message>,
        active_request: &str,
    ) -> LabResult<Vec<Message>> {
        let mut messages = messages;
        match step {
            Step::Persist => self.persist_batch(&mut messages)?,
            Step::Snip => messages = self.snip(messages)?,
            Step::Micro => self.micro_compact(&mut messages, None)?,
            Step::Fit => {
                let target = self.target_chars();
                self.fit_tool_results(&mut messages, target)?
            }
            Step::Summary => {
                messages = match self.compact_history(messages, active_request, Entry::Manual) {
                    Ok(m) => m,
                    Err((m, _)) => {
                        self.halted = !self.config.switches.survive_summary_failure;
                        m
                    }
                }
            }
        }
        Ok(messages)
    }

    /// Write `messages` as a JSONL transcript, one `json.dumps` line per message as
    /// the course writes it; names are counter-derived so runs are byte-identical.
    pub(crate) fn write_transcript(&mut self, messages: &[Message]) -> LabResult<String> {
        self.transcripts_written += 1;
        let path = crate::storage::join_string(
            self.root.transcripts(),
            &course::transcript_name(self.transcripts_written),
        );
        let mut out = Vec::with_capacity(8192);
        for m in messages {
            m.write_pyjson(&mut out);
            out.push(b'\n');
        }
        self.root
            .fs()
            .write_new_vec(std::path::Path::new(&path), out)
            .map_err(|e| crate::error::LabError::io("archiving a transcript", &path, e))?;
        Ok(path)
    }
}
