//! A product's own per-call prompt count beside its port's request, call by
//! call: aider prints `> Tokens: N sent` after every model call, so a replay
//! of its chat history under `aider-chat-summary` can be set against what
//! aider itself sent (the same for any log whose importer fills
//! `recorded_tokens`: Gemini CLI's per-reply `tokens`, opencode's steps, Roo
//! Code's `api_req_started`).
//!
//! The port's count is its request's messages by the run's counter plus the
//! session's envelope: an estimate, and the table says so. A printed count
//! is rounded (`3.2k`): a port count inside the range the text stands for
//! is an exact match.

use serde::Serialize;

use crate::import::ImportedSession;
use crate::policy::engine::PolicyRun;
use crate::render::Format;

/// One session's recorded counts beside its port's.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CountSeries {
    /// Session name.
    pub session: String,
    /// The product's port that replayed it.
    pub policy: String,
    /// Recorded counts paired with a call of the port (the call whose reply
    /// the count was printed after).
    pub paired: usize,
    /// Of them, the port's count inside the range the printed text stands for.
    pub within: usize,
    /// Median of |port − recorded| / recorded over the paired calls, rounded
    /// to 4 decimals (0 inside the printed range).
    pub median_error: f64,
    /// The largest of them, rounded likewise.
    pub max_error: f64,
    /// Calls at which the port summarised.
    pub port_summaries: Vec<usize>,
}

/// The series of `session` replayed as `run` by its product's port; `None`
/// when the log records no per-call count or none pairs with a call.
/// `sized_envelope`: the session's envelope was sized from its first count,
/// which then matches by construction and is not scored.
pub fn series(
    session: &ImportedSession,
    run: &PolicyRun,
    sized_envelope: bool,
) -> Option<CountSeries> {
    let dropped = crate::import::artefacts::product_artefacts(session);
    let mut errors = Vec::new();
    let mut within = 0;
    for t in session
        .recorded_tokens
        .iter()
        .skip(usize::from(sized_envelope))
    {
        let Some(reply) = t.after_messages.checked_sub(1) else {
            continue;
        };
        if dropped.binary_search(&reply).is_ok() {
            continue;
        }
        // The reply's index among the messages the port replayed.
        let at = reply - dropped.iter().filter(|&&d| d < reply).count();
        let Some(call) = run.calls.iter().find(|c| c.at == at) else {
            continue;
        };
        let port = (call.tokens + call.envelope) as u64;
        if (t.sent_min..=t.sent_max).contains(&port) {
            within += 1;
            errors.push(0.0);
        } else {
            errors.push((port as f64 - t.sent as f64).abs() / t.sent.max(1) as f64);
        }
    }
    if errors.is_empty() {
        return None;
    }
    errors.sort_by(f64::total_cmp);
    Some(CountSeries {
        session: session.label.clone(),
        policy: run.policy.clone(),
        paired: errors.len(),
        within,
        median_error: round4(errors[errors.len() / 2]),
        max_error: round4(errors[errors.len() - 1]),
        port_summaries: super::product::fires(run),
    })
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The table (empty when no session has a series), with a note saying what
/// is an estimate.
pub fn render(rows: &[CountSeries], format: Format) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let body = rows
        .iter()
        .map(|r| {
            let fired: Vec<String> = r.port_summaries.iter().map(usize::to_string).collect();
            vec![
                r.session.clone(),
                r.policy.clone(),
                r.paired.to_string(),
                r.within.to_string(),
                format!("{:.1} %", r.median_error * 100.0),
                format!("{:.1} %", r.max_error * 100.0),
                if fired.is_empty() {
                    "-".into()
                } else {
                    fired.join(", ")
                },
            ]
        })
        .collect();
    let mut s = crate::render::table(
        &[
            "session",
            "port",
            "recorded counts",
            "within the printed value",
            "median difference",
            "largest difference",
            "port summarised @call",
        ],
        body,
        format == Format::Markdown,
    );
    s.push_str(
        "\nthe product's own count of each call's prompt (aider: `> Tokens: N sent`), beside its port's request: messages + envelope, an estimate; a session's first count sizes its envelope and is not scored\n",
    );
    s
}
