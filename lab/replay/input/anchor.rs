//! What a replay of a log with recorded usage may read of that usage: two
//! anchors, one to reproduce a recorded bill and one to predict.
//!
//! A replay of a Claude Code log can reproduce the recorded bill by reading
//! the answer from the log (the envelope after each compaction, the
//! product's own count at every reply, attachments sized from the step
//! between two recorded requests), or predict it, reading nothing of the
//! usage but the first request's size, which a counterfactual replay of the
//! same session shares. Every table, JSON row and plot caption of a replay
//! says which one it used ([`Anchor::label`]).

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};
use crate::import::ImportedSession;

/// What a replay reads of a log's recorded usage.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    clap::ValueEnum,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Anchor {
    /// Reproduce: the envelope after each product compaction, the
    /// product's own count at every recorded reply and the attachments its
    /// log leaves out are read from the recorded usage (the replay as it
    /// was before the anchor existed, kept byte for byte).
    Recorded,
    /// Predict: nothing is read from recorded usage but the first request's
    /// size (a counterfactual of the same session shares it). The default of
    /// every policy row: a policy that is not the product cannot read its
    /// answers from the product's log, and the product's own port is scored
    /// on the same terms.
    #[default]
    None,
}

impl Anchor {
    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Anchor::Recorded => "recorded",
            Anchor::None => "none",
        }
    }

    /// The clause tables and captions print.
    pub fn label(self) -> &'static str {
        match self {
            Anchor::Recorded => "anchor recorded (sizes read from the log's recorded usage)",
            Anchor::None => {
                "anchor none (nothing read from recorded usage after the first request)"
            }
        }
    }

    /// Whether the replay may read recorded usage past the first request.
    pub fn reads_usage(self) -> bool {
        self == Anchor::Recorded
    }
}

/// `--anchor` as given: the anchor, and whether the command line named it
/// (a named anchor on a log without recorded usage is a usage error;
/// the default applies silently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnchorArg {
    /// The anchor in force.
    pub anchor: Anchor,
    /// Named on the command line.
    pub given: bool,
}

impl AnchorArg {
    /// From the optional `--anchor` value.
    pub fn from_flag(flag: Option<Anchor>) -> AnchorArg {
        AnchorArg {
            anchor: flag.unwrap_or_default(),
            given: flag.is_some(),
        }
    }

    /// Refuses a named anchor on a session whose format records no usage
    /// (exit 2): the anchor chooses what is read of recorded usage, and
    /// there is none to choose from. `recorded_usage`: whether the
    /// session's log records usage the replay reads.
    pub fn check(self, session: &ImportedSession, recorded_usage: bool) -> LabResult<()> {
        if !self.given || recorded_usage || !session.recorded_tokens.is_empty() {
            return Ok(());
        }
        Err(LabError::usage(
            format!(
                "--anchor {} chooses what a replay reads of a log's recorded usage, and {} ({}) records none",
                self.anchor.name(),
                session.source.display(),
                session.format.name()
            ),
            "drop --anchor for this file (it is predicted from its content alone), or replay a log that records usage (a Claude Code .jsonl)",
        ))
    }
}

/// Serialises an [`AnchorArg`] as the anchor in force (`"none"`,
/// `"recorded"`): JSON says which anchor a row used, not how it was chosen.
pub fn serialize_anchor<S: serde::Serializer>(a: &AnchorArg, s: S) -> Result<S::Ok, S::Error> {
    a.anchor.serialize(s)
}
