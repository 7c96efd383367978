//! Claude Code's auto-compaction trigger by model and version, from the data
//! file `triggers.json` beside this module (each rule names the release it
//! was read in and what it says).

use serde::Deserialize;

use super::Switches;

/// The data file, compiled in.
const TRIGGERS_JSON: &str = include_str!("triggers.json");

/// The whole table.
#[derive(Debug, Clone, Deserialize)]
pub struct Triggers {
    /// When and how the releases were read.
    pub read: String,
    /// The context window.
    pub window: Window,
    /// Rules, oldest release first; a version takes the last rule it reaches.
    pub rules: Vec<Rule>,
    /// What a resumed process's read-file state starts from, oldest
    /// release first (the same reach).
    pub resume_read_state: Vec<ResumeRule>,
}

/// The read-file state of a process resumed under the releases from
/// `from_version` on.
#[derive(Debug, Clone, Deserialize)]
pub struct ResumeRule {
    /// First release the rule applies to.
    pub from_version: String,
    /// Releases whose code was read for it.
    pub read_in: Vec<String>,
    /// Whether the state is rebuilt from the loaded messages' whole Reads
    /// and Writes (else it starts empty).
    pub rebuilds: bool,
    /// What the code says, in words.
    pub source: String,
}

/// The context window by model.
#[derive(Debug, Clone, Deserialize)]
pub struct Window {
    /// Tokens, unless the model name carries `one_million_marker`.
    pub tokens: usize,
    /// A model name with this in it has a 1,000,000-token window.
    pub one_million_marker: String,
    /// Where this was read.
    pub source: String,
}

/// The trigger of the releases from `from_version` on.
#[derive(Debug, Clone, Deserialize)]
pub struct Rule {
    /// First release the rule applies to.
    pub from_version: String,
    /// Releases whose code was read for it.
    pub read_in: Vec<String>,
    /// `AUTOCOMPACT_BUFFER_TOKENS`.
    pub buffer: usize,
    /// The output reserve is at most this (`None`: the whole max output).
    pub reserve_cap: Option<usize>,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`' default.
    pub env_max_output: usize,
    /// The model's own output cap: first entry whose text the model name contains.
    pub model_max_output: Vec<(String, usize)>,
    /// Whether the count adds the messages that arrived since the last
    /// response (else it is that response's usage alone).
    pub counts_arrivals: bool,
    /// Whether the release clears old results after an idle gap.
    pub idle_microcompact: bool,
    /// What the code says, in words.
    pub source: String,
}

/// The table in `triggers.json`.
pub fn table() -> Triggers {
    // The file is part of the build and tested; a malformed one cannot ship.
    serde_json::from_str(TRIGGERS_JSON).expect("triggers.json parses")
}

/// `2.0.22` as a comparable triple; missing or unreadable parts count as 0.
fn version_key(v: &str) -> (u32, u32, u32) {
    let mut parts = v
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

impl Triggers {
    /// The rule a release follows (an unknown release: the newest rule).
    pub fn rule(&self, version: Option<&str>) -> &Rule {
        let Some(v) = version else {
            return self.rules.last().expect("triggers.json has rules");
        };
        let key = version_key(v);
        self.rules
            .iter()
            .rev()
            .find(|r| version_key(&r.from_version) <= key)
            .unwrap_or(&self.rules[0])
    }

    /// The resume rule a release follows (an unknown release: the newest).
    pub fn resume_rule(&self, version: Option<&str>) -> &ResumeRule {
        let rules = &self.resume_read_state;
        let newest = rules.last().expect("triggers.json has resume rules");
        let Some(v) = version else {
            return newest;
        };
        let key = version_key(v);
        rules
            .iter()
            .rev()
            .find(|r| version_key(&r.from_version) <= key)
            .unwrap_or(&rules[0])
    }

    /// Claude Code's switches for `model` under `version`: window, output
    /// reserve, buffer, what the count includes and what a resume keeps of
    /// the read-file state; the other switches keep their defaults.
    pub fn switches(&self, model: &str, version: Option<&str>) -> Switches {
        let rule = self.rule(version);
        let lower = model.to_ascii_lowercase();
        let model_cap = rule
            .model_max_output
            .iter()
            .find(|(k, _)| lower.contains(k.as_str()))
            .map_or(rule.env_max_output, |(_, n)| *n);
        let max_output = rule.env_max_output.min(model_cap);
        let window = if lower.contains(&self.window.one_million_marker) {
            1_000_000
        } else {
            self.window.tokens
        };
        Switches {
            context_window: window,
            output_reserve: rule.reserve_cap.map_or(max_output, |c| max_output.min(c)),
            autocompact_buffer: rule.buffer,
            counts_arrivals: rule.counts_arrivals,
            idle_microcompact: rule.idle_microcompact,
            resume_rebuilds_read_state: self.resume_rule(version).rebuilds,
            ..Switches::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_each_read_release_its_threshold() {
        let t = table();
        // 2.0.x: 200,000 - 32,000 - 13,000 for Sonnet 4.5; a haiku keeps 8,192 out.
        let s = t.switches("claude-sonnet-4-5-20250929", Some("2.0.22"));
        assert_eq!((s.autocompact_at(), s.counts_arrivals), (155_000, false));
        assert_eq!(
            t.switches("claude-haiku-4-5", Some("2.0.5"))
                .autocompact_at(),
            178_808
        );
        // 2.1.38: the reserve is capped at 20,000.
        let s = t.switches("claude-opus-4-6", Some("2.1.38"));
        assert_eq!((s.autocompact_at(), s.counts_arrivals), (167_000, true));
        assert_eq!(
            t.switches("claude-3-5-sonnet", Some("2.1.40"))
                .autocompact_at(),
            178_808
        );
        assert_eq!(
            t.switches("claude-sonnet-4-5[1m]", Some("2.1.38"))
                .autocompact_at(),
            967_000
        );
        // Unread releases: before 2.0.5 and between 2.0.22 and 2.1.38, the 2.0 rule.
        assert!(
            !t.switches("claude-opus-4-1", Some("1.0.70"))
                .counts_arrivals
        );
        assert!(
            !t.switches("claude-opus-4-1", Some("2.0.76"))
                .counts_arrivals
        );
        // The default policy is the newest rule on a 200k model.
        assert_eq!(
            t.switches("claude-opus-4-6", None).autocompact_at(),
            Switches::default().autocompact_at()
        );
    }

    #[test]
    fn every_rule_names_where_it_was_read() {
        let t = table();
        assert!(t.read.contains("cli.js"));
        for r in &t.rules {
            assert!(
                !r.read_in.is_empty() && r.source.contains("cli.js"),
                "{r:?}"
            );
        }
        for r in &t.resume_read_state {
            assert!(
                !r.read_in.is_empty() && r.source.contains("cli.js"),
                "{r:?}"
            );
        }
    }

    #[test]
    fn a_resume_rebuilds_the_read_file_state_from_2_0_59_on() {
        let t = table();
        let rebuilds = |v| {
            t.switches("claude-sonnet-4-5", v)
                .resume_rebuilds_read_state
        };
        // Read in 1.0.57 and 2.0.5 to 2.0.58: a resumed process starts empty.
        for v in ["1.0.57", "2.0.22", "2.0.58"] {
            assert!(!rebuilds(Some(v)), "{v}");
        }
        for v in ["2.0.59", "2.1.14", "2.1.38"] {
            assert!(rebuilds(Some(v)), "{v}");
        }
        // An unknown release is the newest, as the default policy is.
        assert_eq!(
            rebuilds(None),
            Switches::default().resume_rebuilds_read_state
        );
    }
}
