//! Every transcript format, registered in one list (`formats!` below):
//! a format is one module holding its reader and a [`Format`] descriptor
//! (`pub const FORMAT`), plus one line here. The [`TranscriptFormat`]
//! enum, [`ALL`], the names `--format-in` takes, the sniff order, the read
//! dispatch, the extensions that break ties and the product's port
//! (`replay::envelope::product_policy`) all come from it. `--format-in` is
//! clap's `ValueEnum` over [`ALL`], so the help of `lab replay` and `lab
//! import` lists every name and clap refuses any other; GUIDE.md's list is
//! held to [`ALL`] by a test.

use std::path::Path;

use crate::error::{LabError, LabResult};
use crate::format::{Format, Head, Sniff};

/// The registry: one line per format, `Variant => module`, in the order the
/// docs list them. It declares the [`TranscriptFormat`] enum (each line's
/// doc comment is its variant's), [`ALL`] and [`TranscriptFormat::spec`].
macro_rules! formats {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)*) => {
        /// The transcript formats the lab reads, one per line of the registry
        /// (`format_list.rs`); serialised as its name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum TranscriptFormat {
            $($(#[$doc])* $variant,)*
        }

        /// Every format `--format-in` names, in the order the docs list them.
        pub const ALL: &[TranscriptFormat] = &[$(TranscriptFormat::$variant,)*];

        /// `--format-in` takes a format by its name: clap lists every
        /// name in the help (`[possible values: ...]`) and refuses any
        /// other (a usage error, exit 2).
        impl clap::ValueEnum for TranscriptFormat {
            fn value_variants<'a>() -> &'a [Self] {
                ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.name()))
            }
        }

        impl TranscriptFormat {
            /// Its descriptor, from its module.
            pub fn spec(self) -> &'static Format {
                match self {
                    $(TranscriptFormat::$variant => &crate::$module::FORMAT,)*
                }
            }
        }
    };
}

formats! {
    /// Claude Code session log, one JSON record per line.
    ClaudeJsonl => claude_jsonl,
    /// A JSON array of Claude Code records (`logs/chat.json`).
    ChatJson => chat_json,
    /// An Anthropic Messages request body or a bare message array.
    Anthropic => anthropic,
    /// OpenAI chat messages; a SWE-agent `.traj` is read from its `history`.
    OpenAi => openai,
    /// A JSON array of trajectory objects, each with its messages under
    /// `traj` (tau-bench's published trajectories); one session per element.
    Trajectories => trajectories,
    /// A mini-swe-agent `.traj.json`: OpenAI-style messages whose actions
    /// are fenced `bash` blocks in the replies, imported as tool calls.
    MiniSweAgent => mini_swe,
    /// aider's `.aider.chat.history.md`; one session per `# aider chat started at` header.
    Aider => aider,
    /// A Codex CLI rollout log (`RolloutItem` per line), its `compacted` records real compactions.
    CodexRollout => codex,
    /// A Gemini CLI chat recording (`ChatRecordingService`), its compressions real compactions.
    GeminiCli => gemini,
    /// An opencode session as `opencode export` writes it, its compactions real compactions.
    OpenCode => opencode,
    /// An opencode session in opencode's own storage directory
    /// (`storage/session/PROJECT/ID.json`, its messages and parts beside it).
    OpenCodeStorage => opencode_storage,
    /// An OpenHands trajectory (serialized events), its condensations real compactions.
    OpenHands => openhands,
    /// An OpenHands conversation's `events/` directory, one JSON file per
    /// event (openhands-sdk's `event-NNNNN-ID.json`, or openhands-ai's
    /// `N.json`), its condensations real compactions.
    OpenHandsEvents => openhands_events,
    /// A Roo Code or Cline task's `api_conversation_history.json`, Roo's condense summaries real compactions.
    RooCode => roo_code,
    /// A goose session (`sessions/ID.jsonl`: metadata, then one message per
    /// line), its compaction summaries real compactions.
    Goose => goose,
    /// A Pi coding agent session (`session` header, then one entry per line;
    /// a list or a tree of entries), its `compaction` entries real compactions.
    Pi => pi,
    /// A Gemini CLI saved chat or checkpoint: a history of Gemini API
    /// `contents` (`{role: user|model, parts}`), bare or under `history`.
    GeminiContents => gemini_contents,
    /// A claude-trace wire capture (request/response pairs with the full
    /// body, [`crate::claude_trace`]): one session per conversation.
    ClaudeTrace => claude_trace,
    /// An ATIF trajectory (Agent Trajectory Interchange Format v1.x, Harbor
    /// RFC 0001), as Harbor and others write it; read and written at ATIF-v1.8.
    Atif => atif,
}

impl serde::Serialize for TranscriptFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl TranscriptFormat {
    /// Stable lower-case name.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Parse a name as printed by [`TranscriptFormat::name`].
    pub fn from_name(name: &str) -> LabResult<TranscriptFormat> {
        ALL.iter()
            .copied()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                LabError::usage(
                    format!("unknown transcript format `{name}`"),
                    format!("use one of {}", names(", ")),
                )
            })
    }

    /// The zoo port of the product that wrote such a log, if the zoo has one.
    pub fn product(self) -> Option<&'static str> {
        self.spec().product
    }
}

/// The format the first bytes show, or `None` when they do not decide:
/// the first format, in the sniff order, whose content test takes them
/// (the shapes each test looks for: `sniff.rs`).
pub fn sniff(head: &[u8]) -> Option<TranscriptFormat> {
    let head = Head::new(head);
    sniff_order()
        .into_iter()
        .find(|(_, test)| test(&head))
        .map(|(f, _)| f)
}

/// The formats with a content test, in the order the tests run.
pub fn sniff_order() -> Vec<(TranscriptFormat, Sniff)> {
    let mut order: Vec<(u8, TranscriptFormat, Sniff)> = ALL
        .iter()
        .filter_map(|&f| f.spec().sniff.map(|(rank, test)| (rank, f, test)))
        .collect();
    order.sort_by_key(|(rank, _, _)| *rank);
    order.into_iter().map(|(_, f, test)| (f, test)).collect()
}

/// The format `path`'s name says, if any: a name ending first, then an
/// extension.
pub fn by_suffix(path: &Path) -> Option<TranscriptFormat> {
    let whole = path.to_string_lossy();
    let ending = ALL
        .iter()
        .copied()
        .find(|f| f.spec().name_endings.iter().any(|e| whole.ends_with(e)));
    let extension = path.extension().and_then(|e| e.to_str());
    ending.or_else(|| {
        ALL.iter()
            .copied()
            .find(|f| extension.is_some_and(|x| f.spec().extensions.contains(&x)))
    })
}

/// Every format's name joined by `sep`.
pub fn names(sep: &str) -> String {
    ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(sep)
}

/// The help of `--format-in`; clap appends every name
/// (`[possible values: ...]`) from the `ValueEnum`.
pub const FORMAT_IN_HELP: &str = "Read every file as this format instead of detecting it";

/// The help of the inputs of `lab replay` and `lab import`.
pub fn inputs_help() -> String {
    format!(
        "Transcript files, or corpora of them: a directory (read recursively), a quoted glob, \
         a tar archive (.tar, .tar.xz, .tar.gz) of sessions in any format, or a Parquet \
         dataset file (one session per row, read row group by row group), read one \
         session at a time, with --policy and --profile alike. Formats, sniffed from the \
         content: {}",
        names(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_format_and_names_are_unique() {
        for &f in ALL {
            assert_eq!(TranscriptFormat::from_name(f.name()).unwrap(), f);
        }
        let mut names: Vec<_> = ALL.iter().map(|f| f.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
        assert!(TranscriptFormat::from_name("yaml").is_err());
    }

    #[test]
    fn clap_takes_every_name_and_only_those() {
        use clap::ValueEnum;
        for &f in ALL {
            assert_eq!(TranscriptFormat::from_str(f.name(), false), Ok(f));
        }
        assert_eq!(TranscriptFormat::value_variants().len(), ALL.len());
        assert!(TranscriptFormat::from_str("yaml", false).is_err());
    }

    #[test]
    fn sniff_ranks_are_distinct() {
        let mut ranks: Vec<u8> = ALL
            .iter()
            .filter_map(|f| f.spec().sniff.map(|(r, _)| r))
            .collect();
        let n = ranks.len();
        ranks.sort();
        ranks.dedup();
        assert_eq!(ranks.len(), n, "two formats share a sniff rank");
    }

    #[test]
    fn serialised_as_its_name() {
        for &f in ALL {
            assert_eq!(
                serde_json::to_value(f).unwrap(),
                serde_json::json!(f.name())
            );
        }
    }

    #[test]
    fn suffixes_decide_only_past_themselves() {
        use TranscriptFormat::*;
        let at = |p: &str| by_suffix(Path::new(p));
        assert_eq!(at("runs/a.traj.json"), Some(MiniSweAgent));
        assert_eq!(at("a/.aider.chat.history.md"), Some(Aider));
        assert_eq!(at("x.jsonl"), Some(ClaudeJsonl));
        assert_eq!(at("x.traj"), Some(OpenAi));
        assert_eq!(at("x.json"), None);
        assert_eq!(at(".jsonl"), None);
    }
}
