//! The compaction request is a request: each summary a policy asks for is
//! priced as its product sends it.
//!
//! A summarising design sends one request more per compaction: the
//! conversation plus its summary prompt, and it pays for the summary's
//! output. How much of that request the cache already holds depends on
//! the product: Claude Code forks the main thread with the same system
//! prompt, tools and messages and appends the prompt, so it reads the
//! conversation's cached prefix; Codex sends the same history with no
//! tools, so its prefix differs from the first token and nothing is read.
//! The shapes are data ([`PATH`], each with its source and the date it
//! was read); a policy the file does not name gets its `default`, stated
//! as an assumption.
//!
//! The cost observer builds one [`CacheRequest`] per logged
//! [`SideCall`] ([`request`]) before the model call it preceded, on a
//! stream of its own ([`STREAM`]) so that the conversation's breaks are
//! judged against the conversation's previous request; [`settle`] puts
//! the calls back on the conversation's stream, marks them, and adds the
//! output's price.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::session::RequestBuilder;
use super::{CacheRequest, CostReport, PriceSheet, Segment};
use crate::cache::prices::table::{Lookup, PriceTable};
use crate::message::Message;
use crate::policy::side_calls::SideCall;
use crate::tokens::TokenCounter;

/// Where the shapes are kept, as error messages and notes name it.
pub const PATH: &str = "lab/measure/cache/compaction_calls.json";
const DATA: &str = include_str!("compaction_calls.json");
const FORMAT: &str = "ctxlab-compaction-calls-1";

/// The stream a compaction call is sent on while the cache model runs.
pub const STREAM: u32 = u32::MAX;

/// What the summary request shares with the conversation's fixed prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Prefix {
    /// The conversation's own system prompt, tools and messages; the prompt last.
    Shared,
    /// The same messages and the prompt last, behind a fixed prefix that
    /// differs from the conversation's (sized as the envelope: an estimate).
    Diverged,
    /// A system prompt of its own (the summary prompt), then the messages.
    Own,
}

/// Where the summary request's cache breakpoint sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Marker {
    /// On the conversation's last message: the prompt is neither read nor written.
    LastShared,
    /// On the prompt, the request's last segment.
    Prompt,
}

/// How one product sends its summary request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Shape {
    /// The policy (`lab policies` name); empty for the default.
    #[serde(default)]
    pub policy: String,
    /// What it shares with the conversation's prefix.
    pub prefix: Prefix,
    /// Where its breakpoint sits.
    pub marker: Marker,
    /// Where this was read (`repo@commit: file function`), or why assumed.
    pub source: String,
    /// When it was read.
    pub read: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: String,
    #[allow(dead_code)]
    date: String,
    #[serde(default)]
    #[allow(dead_code)]
    notes: Vec<String>,
    default: Shape,
    policies: Vec<Shape>,
}

/// Every known shape and the default.
#[derive(Debug, Clone, PartialEq)]
pub struct Shapes {
    /// The shape of a policy the file does not name.
    pub default: Shape,
    /// One per named policy.
    pub policies: Vec<Shape>,
}

/// Parses a shapes file's `text`; an error names `path`, line and column.
pub fn parse(path: &str, text: &str) -> crate::error::LabResult<Shapes> {
    let error = |at: (usize, usize), message: String, fix: String| crate::error::LabError::Input {
        file: std::path::PathBuf::from(path),
        line: at.0,
        column: at.1,
        message,
        fix,
    };
    let file: File = serde_json::from_str(text).map_err(|e| {
        let text = e.to_string();
        let at = format!(" at line {} column {}", e.line(), e.column());
        error(
            (e.line(), e.column()),
            format!("bad compaction-call shapes: {}", text.strip_suffix(&at).unwrap_or(&text)),
            "each entry needs prefix (shared|diverged|own), marker (last_shared|prompt), source and read; see lab/measure/cache/compaction_calls.json".to_string(),
        )
    })?;
    if file.format != FORMAT {
        return Err(error(
            (1, 1),
            format!("unknown format `{}`", file.format),
            format!("set \"format\": \"{FORMAT}\""),
        ));
    }
    Ok(Shapes {
        default: file.default,
        policies: file.policies,
    })
}

/// The built-in shapes.
pub fn shapes() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES.get_or_init(|| parse(PATH, DATA).expect("the built-in shapes parse (tested)"))
}

/// The shape `spec`'s summary requests are sent in.
pub fn shape_for(spec: &crate::policy::spec::PolicySpec) -> &'static Shape {
    let s = shapes();
    let base = spec.base();
    s.policies
        .iter()
        .find(|p| p.policy.eq_ignore_ascii_case(base))
        .unwrap_or(&s.default)
}

/// The request `call` was sent as, under `shape`, at `turn`; `envelope`
/// is the conversation's fixed prefix in tokens (the builder's system
/// segment). Also the output tokens of its reply by `counter`.
pub fn request(
    call: &SideCall,
    shape: &Shape,
    builder: &mut RequestBuilder,
    turn: usize,
    counter: &dyn TokenCounter,
    envelope: u64,
) -> (CacheRequest, u64) {
    let mut r = builder.request_counted(&call.messages, turn, counter);
    let prompt = match &call.previous {
        Some(p) => format!("{}\n\n{p}", call.prompt),
        None => call.prompt.clone(),
    };
    let prompt_tokens = counter.count_message(&Message::user_text(prompt.as_str())) as u64;
    match shape.prefix {
        Prefix::Shared => {}
        Prefix::Diverged => {
            r.segments[0] = Segment::new(
                "compaction prefix",
                ("compaction prefix", envelope),
                envelope,
            );
        }
        Prefix::Own => {
            r.segments[0] = Segment::new(
                "compaction system",
                ("compaction system", &prompt),
                prompt_tokens,
            );
        }
    }
    if shape.prefix != Prefix::Own {
        r.segments.push(Segment::new(
            "compaction prompt",
            ("compaction prompt", &prompt),
            prompt_tokens,
        ));
    }
    let last = r.segments.len() - 1;
    r.breakpoints = match shape.marker {
        Marker::LastShared if last > 1 => vec![0, last - 1],
        Marker::LastShared => vec![0],
        Marker::Prompt => vec![0, last],
    };
    r.stream = STREAM;
    let output = call.reply.as_deref().map_or(0, |t| counter.count(t) as u64);
    (r, output)
}

/// Dollars per million output tokens of the model `sheet` prices, from
/// `table`: the sheet's own name (a model's, `(1h writes)` removed), else
/// a built-in sheet's (`claude-opus-4.1-5m` is `claude-opus-4-1`).
pub fn output_per_mtok(sheet: &PriceSheet, table: &PriceTable) -> Option<f64> {
    let name = sheet.name.trim_end_matches(" (1h writes)");
    let stem = name
        .strip_suffix("-5m")
        .or_else(|| name.strip_suffix("-1h"))
        .unwrap_or(name);
    [name.to_string(), stem.to_string(), stem.replace('.', "-")]
        .iter()
        .find_map(|id| match table.lookup(id)? {
            Lookup::Priced(m) => Some(m.output),
            Lookup::NotAModel => None,
        })
}

/// `report` with the compaction calls (`calls`: request index and output
/// tokens) put back on the conversation's stream and marked, their
/// output priced at `output_per_mtok` (0 when unknown). A compaction call
/// is never the conversation's break: its prefix is judged by the
/// conversation's next request.
pub fn settle(
    report: CostReport,
    calls: &[(usize, u64)],
    output_per_mtok: Option<f64>,
) -> CostReport {
    let mut requests = report.requests;
    for &(i, output) in calls {
        let Some(r) = requests.get_mut(i) else {
            continue;
        };
        r.stream = 0;
        r.broke = false;
        r.break_at = None;
        r.expired = false;
        r.payback_turns = None;
        r.compaction = true;
        r.output_tokens = output;
        r.dollars += output as f64 * output_per_mtok.unwrap_or(0.0) / 1e6;
    }
    super::summarize(report.provider, report.sheet, requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Approx;

    #[test]
    fn the_built_in_shapes_parse_and_name_real_policies() {
        let s = shapes();
        for p in &s.policies {
            assert!(ctxlab_zoo::list::check(&p.policy).is_ok(), "{}", p.policy);
            assert!(
                p.source.contains('@'),
                "{}: a source names repo@commit",
                p.policy
            );
        }
        assert_eq!(
            shape_for(&"claude-code".parse().unwrap()).prefix,
            Prefix::Shared
        );
        assert_eq!(
            shape_for(&"gated:claude-code".parse().unwrap()).prefix,
            Prefix::Shared
        );
        assert_eq!(
            shape_for(&"frozen:codex-cli".parse().unwrap()).prefix,
            Prefix::Diverged
        );
        assert_eq!(
            shape_for(&"aider-chat-summary".parse().unwrap()),
            &s.default
        );
    }

    #[test]
    fn a_malformed_shapes_file_names_its_line_and_column() {
        let e = parse(
            "x.json",
            "{\n \"format\": \"ctxlab-compaction-calls-1\",\n \"date\": 1}",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("x.json:3:"), "{e}");
    }

    fn call(reply: &str) -> SideCall {
        SideCall {
            prompt: "p".repeat(400),
            messages: vec![
                Message::user_text("a".repeat(4_000)),
                Message::user_text("b".repeat(400)),
            ],
            previous: None,
            reply: Some(reply.to_string()),
        }
    }

    #[test]
    fn a_shared_prefix_keeps_the_conversation_keys_and_marks_the_last_message() {
        let mut b = RequestBuilder::new(crate::tokens::Tokens::Approx, 1_000);
        let main = b.request_counted(&call("").messages, 0, &Approx);
        let shared = Shape {
            policy: String::new(),
            prefix: Prefix::Shared,
            marker: Marker::LastShared,
            source: String::new(),
            read: String::new(),
        };
        let (r, out) = request(&call(&"s".repeat(80)), &shared, &mut b, 0, &Approx, 1_000);
        assert_eq!(out, 20);
        assert_eq!(r.segments.len(), 4);
        assert_eq!(r.segments[..3], main.segments[..]);
        assert_eq!(r.segments[3].tokens, 100);
        assert_eq!(r.breakpoints, vec![0, 2]);
        let own = Shape {
            prefix: Prefix::Own,
            marker: Marker::Prompt,
            ..shared
        };
        let (o, _) = request(&call(""), &own, &mut b, 0, &Approx, 1_000);
        assert_ne!(o.segments[0].key, main.segments[0].key);
        assert_eq!((o.segments.len(), o.segments[0].tokens), (3, 100));
        assert_eq!(o.breakpoints, vec![0, 2]);
    }
}
