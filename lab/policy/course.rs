//! The course pipeline as a policy: one policy per named profile.
//!
//! The four steps of `lab/compact` run unchanged (persist, snip, micro,
//! summary, with each profile's switches); this adapter only maps the
//! pipeline's events to policy events and declares the course's pointer
//! grammar, so the policy-agnostic checker reaches the same verdicts as the
//! course's own.

use std::path::PathBuf;

use super::{PointerRule, Policy, PolicyCtx, PolicyEvent, PolicyInfo, Prepared, Source, Unit};
use crate::compact::config::{profile, profiles, Profile};
use crate::compact::persist::{FULL_OUTPUT, SAVED_PREFIX};
use crate::compact::summary::FULL_TRANSCRIPT;
use crate::compact::{Compactor, Event, LabRoot};
use crate::error::LabResult;
use crate::import::is_product_summary;
use crate::message::{Message, Role};
use crate::registry::LONG_PATH;
use crate::storage::Shared;

/// The course's pointer grammar: the `Full output:` line of a persisted
/// result, the micro-compaction placeholder, the snip marker and the summary's
/// transcript line.
pub const COURSE_POINTERS: &[PointerRule] = &[
    PointerRule::line_prefix(FULL_OUTPUT),
    PointerRule::wrapped(SAVED_PREFIX, "]"),
    PointerRule::inline(" messages archived at ", "]"),
    PointerRule::line_prefix(FULL_TRANSCRIPT),
];

/// A course profile run as a policy.
#[derive(Debug)]
pub struct CoursePolicy {
    profile: Profile,
    compactor: Compactor,
    /// The user's newest request: the summariser's focus. Taken from the
    /// messages as they arrive, as the course's agent loop holds its query,
    /// not from the live history, where a summary has replaced it.
    active: String,
    /// Length of the history after the last call: what lies beyond arrived since.
    seen: usize,
}

impl CoursePolicy {
    /// The profile `name` (any of `lab profiles`) at the replay's default
    /// path length, for tool ids of 7 characters.
    pub fn new(name: &str) -> LabResult<Self> {
        Self::with_root(name, Some(LONG_PATH), 7)
    }

    /// The profile `name` whose result path for an id of `ref_id_chars`
    /// characters is `path_len` characters long (`None`: unpadded).
    pub fn with_root(name: &str, path_len: Option<usize>, ref_id_chars: usize) -> LabResult<Self> {
        let profile = profile(name)?;
        let ref_id = ref_id_chars.min(profile.config.constants.safe_id_max);
        let root = LabRoot::new(path_len, ref_id)?;
        let config = profile.config.clone();
        Self::on_root(profile, config, root)
    }

    /// `profile` run with `config` (its own, or with scaled constants) on
    /// `root`: what the course replay of a recorded session drives.
    pub fn on_root(
        profile: Profile,
        config: crate::compact::config::Config,
        root: LabRoot,
    ) -> LabResult<Self> {
        let compactor = Compactor::new(config, root)?;
        Ok(CoursePolicy {
            profile,
            compactor,
            active: String::new(),
            seen: 0,
        })
    }

    /// The pipeline as it stands: its events, its root and its config, for
    /// the course's own checker.
    pub fn compactor(&self) -> &Compactor {
        &self.compactor
    }

    /// Every course profile's name.
    pub fn names() -> Vec<&'static str> {
        profiles().into_iter().map(|p| p.name).collect()
    }
}

/// The course request a turn answers: the newest user text among `arrived`
/// that is neither a tool result nor a product's compaction summary (the
/// replay of a recorded session does not take the product's summary for
/// the user's request), if any.
fn newest_request(arrived: &[Message]) -> Option<String> {
    arrived
        .iter()
        .rev()
        .filter(|m| m.role == Role::User && !m.is_tool_result() && !is_product_summary(m))
        .map(Message::text)
        .find(|t| !t.is_empty())
}

/// The revision each profile reproduces (GUIDE.md "Profiles and switches").
fn upstream(profile: &str) -> &'static str {
    match profile {
        "course-old" => "snake-fan/learn-claude-code@35a99f9 (the revision without the unseen guard)",
        "course-f9e8b28" => {
            "shareAI-lab/learn-claude-code@f9e8b28 (as published at tingman2/beauty-mirror-hackathon@8db2b3a)"
        }
        "course-main" => "shareAI-lab/learn-claude-code@182c658",
        "prototype" => "the seed's prototype ../shared/ref/cc_harness_lab.py",
        _ => "ctxlab: course-main with every safeguard on",
    }
}

/// The pipeline's event as a policy event.
fn to_policy_event(e: &Event) -> PolicyEvent {
    match e {
        Event::Saved {
            id, path, chars, ..
        } => PolicyEvent::Persisted {
            id: id.clone(),
            path: path.clone(),
            chars: *chars,
        },
        Event::Placeholder {
            id, with_pointer, ..
        } => PolicyEvent::Cleared {
            id: id.clone(),
            part: "result",
            placeholder: if *with_pointer { "saved_at" } else { "omitted" }.to_string(),
        },
        Event::Snipped {
            archived,
            transcript,
        } => PolicyEvent::Dropped {
            messages: *archived,
            why: format!("snipped to {transcript}"),
        },
        Event::Summarized {
            kept, transcript, ..
        } => PolicyEvent::Summarised {
            replaced: 0,
            kept: *kept,
            archive: Some(transcript.clone()),
        },
        Event::SummaryFailed { entry } => PolicyEvent::ModelFailed {
            role: "summary",
            outcome: format!("{entry:?} summary failed; history kept"),
        },
    }
}

impl Policy for CoursePolicy {
    /// Constants and switches by their course names (`lab profiles`), as
    /// `lab break --set` takes them.
    fn configure(&mut self, overrides: &super::variant::Overrides) -> Result<(), String> {
        let assignments: Vec<String> = overrides
            .iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        let mut config = self.compactor.config.clone();
        config
            .apply_overrides(&assignments)
            .map_err(|e| e.to_string())?;
        self.compactor.config = config;
        Ok(())
    }

    fn variant_keys(&self) -> super::variant::Overrides {
        // `apply_overrides` finds a bare key in the switches, then the
        // constants (the two share no name).
        let c = &self.compactor.config;
        let mut keys = super::variant::fields(&c.switches);
        keys.extend(super::variant::fields(&c.constants));
        keys
    }

    fn info(&self) -> PolicyInfo {
        let c = &self.profile.config;
        PolicyInfo {
            name: self.profile.name.to_string(),
            family: "course",
            summary: self.profile.description.into(),
            source: Source {
                upstream: upstream(self.profile.name).into(),
                files: &["s08_context_compact/code.py"],
                license: "MIT",
                approximate: false,
            },
            constants: serde_json::json!({
                "constants": c.constants,
                "switches": c.switches,
            }),
            unit: Unit::Chars,
            differences: vec![],
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        COURSE_POINTERS.to_vec()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        _ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        let before = self.compactor.events.len();
        if let Some(text) = newest_request(history.get(self.seen..).unwrap_or_default()) {
            self.active = text;
        }
        *history = self
            .compactor
            .prepare(std::mem::take(history), &self.active)?;
        self.seen = history.len();
        let events = self.compactor.events[before..]
            .iter()
            .map(to_policy_event)
            .collect();
        Ok(Prepared {
            request: history.clone(),
            events,
        })
    }

    fn own_storage(&self) -> Option<(Shared, PathBuf)> {
        let results = self.compactor.root.results();
        let transcripts = self.compactor.root.transcripts();
        let common: PathBuf = results
            .components()
            .zip(transcripts.components())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect();
        Some((self.compactor.root.shared(), common))
    }
}
