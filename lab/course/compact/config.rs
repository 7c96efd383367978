//! Switches, constants and named profiles of the compaction pipeline.
//!
//! A [`Config`] is everything that decides what the pipeline does: which
//! safeguards are on ([`Switches`]) and the numbers ([`Constants`]). Named
//! [`Profile`]s reproduce revisions of the public course code
//! (shareAI-lab/learn-claude-code `s08_context_compact/code.py`) and the
//! scaled-down Python prototype the seed ran its break experiments with.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};

/// Where micro-compaction (step 3) stands relative to persistence (step 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOrder {
    /// Course order: persist → snip → micro. Micro then finds the `Full output:` line.
    PersistFirst,
    /// The prototype's D2 swap: micro → snip → persist. Micro runs on raw results.
    MicroFirst,
}

/// Fault-injection switches. Every field is a safeguard or a revision difference.
///
/// `Default` is the revision the seed analyses (course commit f9e8b28):
/// `order = persist_first`, `unseen_guard = true`, `pair_protection = true`,
/// `idempotent_placeholders = false`, `save_before_omit = false`,
/// `micro_only_over_limit = false`, `fit_tool_results = false`,
/// `auto_summary = true`, `skip_lone_archive_marker = false`,
/// `persist_all_large = false`, `collision_safe_paths = false`,
/// `overwrite_saved_output = false`, `survive_summary_failure = false`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Switches {
    /// Order of steps 1 and 3 (the first of the seed's two safeguards).
    pub order: StepOrder,
    /// Results the model has not seen yet are never micro-compacted (the second safeguard).
    pub unseen_guard: bool,
    /// Snip and reactive compaction never separate a `tool_use` from its `tool_result`.
    pub pair_protection: bool,
    /// A placeholder is recognised as one and keeps its pointer instead of being compacted again.
    pub idempotent_placeholders: bool,
    /// Micro-compaction saves unsaved content to disk instead of writing "omitted".
    pub save_before_omit: bool,
    /// Micro-compaction runs only when the context is over its limit, down to a target (course main).
    pub micro_only_over_limit: bool,
    /// After micro, persist the largest results until under the target (course main `fit_tool_results`).
    pub fit_tool_results: bool,
    /// Step 4: a full summary when still over the limit.
    pub auto_summary: bool,
    /// Snip does not archive a middle that is only an earlier archive marker (course main).
    pub skip_lone_archive_marker: bool,
    /// Persistence ignores the batch budget: every result over the per-item threshold is persisted.
    pub persist_all_large: bool,
    /// Two results whose ids sanitise to the same file name get distinct files.
    pub collision_safe_paths: bool,
    /// Saving a result rewrites an existing file of the same name (course main's
    /// `save_output`); off, the first write is kept (f9e8b28's `if not path.exists()`).
    pub overwrite_saved_output: bool,
    /// A failing summary call is swallowed and the run goes on with the history
    /// as it was. Off (the course): the exception ends the session, leaving the
    /// history as the course's in-place edits left it.
    pub survive_summary_failure: bool,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            order: StepOrder::PersistFirst,
            unseen_guard: true,
            pair_protection: true,
            idempotent_placeholders: false,
            save_before_omit: false,
            micro_only_over_limit: false,
            fit_tool_results: false,
            auto_summary: true,
            skip_lone_archive_marker: false,
            persist_all_large: false,
            collision_safe_paths: false,
            overwrite_saved_output: false,
            survive_summary_failure: false,
        }
    }
}

/// The pipeline's numbers. `Default` is the course's `ContextCompactor` at f9e8b28:
/// context 50 000 chars, batch budget 200 000, large result 30 000, summary
/// input 80 000, keep 3 recent results and 5 recent messages, snip at 50
/// messages keeping a head of 3 (tail reserve 0), placeholders only for
/// results over 120 chars, previews of 2 000 (fit: 1 000) chars, sanitised
/// ids cut at 120 chars, micro target 80 % of the limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Constants {
    /// Auto compaction fires above this many estimated chars (`CONTEXT_CHAR_LIMIT`).
    pub context_char_limit: usize,
    /// Batch budget of step 1 (`TOOL_RESULT_BATCH_CHAR_LIMIT`).
    pub batch_budget_chars: usize,
    /// Per-item threshold of step 1 (`LARGE_RESULT_CHAR_LIMIT`).
    pub large_result_chars: usize,
    /// Summary input cap (`SUMMARY_INPUT_CHAR_LIMIT`).
    pub summary_input_chars: usize,
    /// Seen results kept intact by step 3 (`KEEP_RECENT_RESULTS`).
    pub keep_recent_results: usize,
    /// Tail kept by reactive compaction (`KEEP_RECENT_MESSAGES`).
    pub keep_recent_messages: usize,
    /// Snip fires above this many messages (`max_messages`).
    pub snip_max_messages: usize,
    /// Messages kept at the head by snip.
    pub snip_head: usize,
    /// Extra tail slot reserved for the marker (0 at f9e8b28, 1 in course main).
    pub snip_tail_reserve: usize,
    /// Step 3 leaves results of at most this many chars alone (the literal `120`).
    pub placeholder_min_chars: usize,
    /// Preview length inside `<persisted-output>`.
    pub preview_chars: usize,
    /// Preview length used by `fit_tool_results`.
    pub fit_preview_chars: usize,
    /// Sanitised tool ids are cut to this many chars for file names.
    pub safe_id_max: usize,
    /// Micro/fit target as permille of the limit (course main: `int(limit * 0.8)`).
    pub micro_target_permille: usize,
}

impl Default for Constants {
    fn default() -> Self {
        Constants {
            context_char_limit: 50_000,
            batch_budget_chars: 200_000,
            large_result_chars: 30_000,
            summary_input_chars: 80_000,
            keep_recent_results: 3,
            keep_recent_messages: 5,
            snip_max_messages: 50,
            snip_head: 3,
            snip_tail_reserve: 0,
            placeholder_min_chars: 120,
            preview_chars: 2_000,
            fit_preview_chars: 1_000,
            safe_id_max: 120,
            micro_target_permille: 800,
        }
    }
}

impl Constants {
    /// Reject combinations the pipeline cannot run with.
    pub fn validate(&self) -> LabResult<()> {
        // Checked: a constant near usize::MAX must be an error, not an overflow.
        let reserved = self.snip_head.checked_add(self.snip_tail_reserve);
        if reserved.is_none_or(|r| self.snip_max_messages <= r) {
            return Err(LabError::usage(
                format!(
                    "snip_max_messages ({}) must exceed snip_head + snip_tail_reserve ({} + {})",
                    self.snip_max_messages, self.snip_head, self.snip_tail_reserve
                ),
                "raise snip_max_messages or lower snip_head",
            ));
        }
        if self
            .context_char_limit
            .checked_mul(self.micro_target_permille)
            .is_none()
        {
            return Err(LabError::usage(
                format!(
                    "context_char_limit ({}) × micro_target_permille ({}) overflows",
                    self.context_char_limit, self.micro_target_permille
                ),
                "use a context_char_limit below 10^15 and a permille up to 1000",
            ));
        }
        if self.snip_head == 0 || self.safe_id_max == 0 {
            return Err(LabError::usage(
                "snip_head and safe_id_max must be at least 1",
                "set them to 1 or more",
            ));
        }
        Ok(())
    }

    /// Multiply every size constant by `factor` (counts such as keep-N stay).
    pub fn scaled(&self, factor: f64) -> Constants {
        let s = |v: usize| ((v as f64) * factor).round().max(1.0) as usize;
        Constants {
            context_char_limit: s(self.context_char_limit),
            batch_budget_chars: s(self.batch_budget_chars),
            large_result_chars: s(self.large_result_chars),
            summary_input_chars: s(self.summary_input_chars),
            preview_chars: s(self.preview_chars),
            fit_preview_chars: s(self.fit_preview_chars),
            ..self.clone()
        }
    }
}

/// Switches plus constants: everything that decides a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Safeguards and revision differences.
    pub switches: Switches,
    /// Numbers.
    pub constants: Constants,
}

impl Config {
    /// Apply `key=value` overrides; `key` is a switch or constant field name
    /// (optionally prefixed `switches.` / `constants.`), `value` is JSON or a bare word.
    pub fn apply_override(&mut self, assignment: &str) -> LabResult<()> {
        self.apply_overrides([assignment])
    }

    /// Apply every `key=value` override, then validate the result once: the
    /// order of overrides never matters (`snip_head=100` may come before the
    /// `snip_max_messages=200` that makes it valid).
    pub fn apply_overrides<S: AsRef<str>>(
        &mut self,
        assignments: impl IntoIterator<Item = S>,
    ) -> LabResult<()> {
        for a in assignments {
            self.set_field(a.as_ref())?;
        }
        self.constants.validate()
    }

    /// Set one switch or constant without validating the combination.
    pub fn set_field(&mut self, assignment: &str) -> LabResult<()> {
        let (key, raw) = assignment.split_once('=').ok_or_else(|| {
            LabError::usage(
                format!("override {assignment:?} has no '='"),
                "write it as key=value, e.g. unseen_guard=false",
            )
        })?;
        let key = key.trim();
        let value: serde_json::Value = serde_json::from_str(raw.trim())
            .unwrap_or_else(|_| serde_json::Value::String(raw.trim().to_string()));
        let (section, field) = match key.split_once('.') {
            Some((s, f)) => (Some(s), f),
            None => (None, key),
        };
        let mut tree = serde_json::to_value(&*self).expect("config serialises");
        let target = ["switches", "constants"]
            .into_iter()
            .filter(|s| section.is_none_or(|want| want == *s))
            .find(|s| tree[*s].get(field).is_some());
        let Some(target) = target else {
            let known: Vec<String> = ["switches", "constants"]
                .iter()
                .flat_map(|s| {
                    tree[*s]
                        .as_object()
                        .map(|o| o.keys().cloned().collect::<Vec<_>>())
                        .unwrap_or_default()
                })
                .collect();
            return Err(LabError::usage(
                format!("unknown switch or constant {key:?}"),
                format!("use one of: {}", known.join(", ")),
            ));
        };
        tree[target][field] = value;
        *self = serde_json::from_value(tree).map_err(|e| {
            LabError::usage(
                format!("bad value for {key}: {e}"),
                "booleans are true/false, constants are whole numbers, order is persist_first|micro_first",
            )
        })?;
        Ok(())
    }
}

/// A named configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// Name used on the command line.
    pub name: &'static str,
    /// What it reproduces.
    pub description: &'static str,
    /// The configuration.
    pub config: Config,
}

/// The prototype's scaled constants (cc_harness_lab.py): large result 300,
/// batch budget 400, keep 2 recent results, snip above 6 messages keeping 2,
/// preview 40 chars, ids cut at 60; it has no summary step.
pub fn prototype_constants() -> Constants {
    Constants {
        large_result_chars: 300,
        batch_budget_chars: 400,
        keep_recent_results: 2,
        snip_max_messages: 6,
        snip_head: 2,
        snip_tail_reserve: 0,
        preview_chars: 40,
        safe_id_max: 60,
        ..Constants::default()
    }
}

/// Every named profile, in the order `lab list` shows them.
pub fn profiles() -> Vec<Profile> {
    let seed = Config::default();
    let old = Config {
        switches: Switches {
            unseen_guard: false,
            ..Switches::default()
        },
        ..Config::default()
    };
    let main = Config {
        switches: Switches {
            idempotent_placeholders: true,
            save_before_omit: true,
            micro_only_over_limit: true,
            fit_tool_results: true,
            skip_lone_archive_marker: true,
            overwrite_saved_output: true,
            ..Switches::default()
        },
        constants: Constants {
            snip_tail_reserve: 1,
            ..Constants::default()
        },
    };
    let hardened = Config {
        switches: Switches {
            micro_only_over_limit: false,
            persist_all_large: true,
            collision_safe_paths: true,
            survive_summary_failure: true,
            ..main.switches.clone()
        },
        constants: main.constants.clone(),
    };
    let prototype = Config {
        switches: Switches {
            auto_summary: false,
            ..Switches::default()
        },
        constants: prototype_constants(),
    };
    vec![
        Profile {
            name: "course-old",
            description: "course site's older revision: no unseen-result guard (placeholders by position and length only)",
            config: old,
        },
        Profile {
            name: "course-f9e8b28",
            description: "the revision the seed analyses: guard on, 'omitted' placeholders, no idempotence",
            config: seed,
        },
        Profile {
            name: "course-main",
            description: "newer course revision: save-before-omit, idempotent placeholders, micro only over the limit, fit_tool_results",
            config: main,
        },
        Profile {
            name: "hardened",
            description: "every safeguard on, micro always, persist every large result, collision-safe file names",
            config: hardened,
        },
        Profile {
            name: "prototype",
            description: "the seed's Python prototype (cc_harness_lab.py): f9e8b28 semantics at scaled constants, no summary",
            config: prototype,
        },
    ]
}

/// Look a profile up by name; `seed` is an alias of `course-f9e8b28`.
pub fn profile(name: &str) -> LabResult<Profile> {
    // Names match case-insensitively, like experiment ids.
    let want = if name.eq_ignore_ascii_case("seed") {
        "course-f9e8b28"
    } else {
        name
    };
    profiles()
        .into_iter()
        .find(|p| p.name.eq_ignore_ascii_case(want))
        .ok_or_else(|| {
            LabError::usage(
                format!("unknown profile {name:?}"),
                format!(
                    "use one of: {}",
                    profiles()
                        .iter()
                        .map(|p| p.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_reach_switches_and_constants() {
        let mut c = Config::default();
        c.apply_override("unseen_guard=false").unwrap();
        c.apply_override("constants.keep_recent_results=7").unwrap();
        c.apply_override("order=micro_first").unwrap();
        assert!(!c.switches.unseen_guard);
        assert_eq!(c.constants.keep_recent_results, 7);
        assert_eq!(c.switches.order, StepOrder::MicroFirst);
    }

    #[test]
    fn unknown_override_names_the_valid_keys() {
        let err = Config::default()
            .apply_override("unseen_gaurd=false")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("unseen_gaurd"), "{text}");
        assert!(text.contains("unseen_guard"), "{text}");
        let bad = Config::default()
            .apply_override("keep_recent_results=lots")
            .unwrap_err();
        assert!(bad.to_string().contains("keep_recent_results"));
    }

    #[test]
    fn profiles_are_distinct_and_valid() {
        let all = profiles();
        for (i, a) in all.iter().enumerate() {
            a.config.constants.validate().unwrap();
            for b in &all[i + 1..] {
                assert_ne!(a.config, b.config, "{} == {}", a.name, b.name);
            }
        }
        assert_eq!(profile("seed").unwrap().name, "course-f9e8b28");
        assert!(profile("nope").is_err());
    }
}
