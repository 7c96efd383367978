//! The HTML report of a policy replay: one self-contained page (no network,
//! no external file; a 30-line inline script for the family filter) with
//! five sections, all from the replay's own data:
//!
//! - `summary`: per session and policy, what was sent, done, kept and paid;
//! - `timelines`: per session, small multiples by policy group of the
//!   request size, the cumulative cost and the events so far, call by call;
//! - `calls`: per policy, every model call: messages and tokens sent and
//!   what the policy persisted, cleared, truncated, summarised or dropped
//!   before it;
//! - `retention`: artifact recall and the fate of each planted fact;
//! - `frontier`: the cost–retention frontier, numbered and keyed.
//!
//! Every element that belongs to policies carries `data-families` (the
//! families of those policies, `|`-separated) so the filter can hide it.

use std::fmt::Write as _;

use super::family::{family, group, style_index, GROUPS};
use super::policies::Compared;
use crate::plot::{esc, Figure, Panel, Series};
use crate::policy::PolicyEvent;
use crate::retention::render::Scored;
use crate::retention::Status;

/// Ids of the page's sections, in order (the browser test checks each renders).
pub const SECTIONS: [&str; 5] = ["summary", "timelines", "calls", "retention", "frontier"];

/// The page for `runs` (one or more sessions under one or more policies,
/// scored as the replay scored them); `command` says what made it.
pub fn page(runs: &[Compared], scored: &[Scored], command: &str) -> String {
    let mut s = String::new();
    head(&mut s, command);
    filter(&mut s, runs);
    s.push_str("<main>\n");
    summary(&mut s, runs, scored);
    timelines(&mut s, runs, command);
    calls(&mut s, runs);
    retention(&mut s, scored);
    frontier(&mut s, scored, command);
    s.push_str("</main>\n");
    let _ = write!(s, "<script>\n{SCRIPT}</script>\n</body>\n</html>\n");
    s
}

/// Write the page to `path` whole or not at all (temp file and rename).
pub fn write(
    path: &std::path::Path,
    runs: &[Compared],
    scored: &[Scored],
    command: &str,
) -> crate::error::LabResult<()> {
    crate::storage::root::cleanup::write_replacing(path, page(runs, scored, command).as_bytes())
        .map_err(|e| crate::error::LabError::io("writing the HTML report", path, e))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0}\
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
td:nth-child(-n+2),th:nth-child(-n+2),td.t{text-align:left}\
th{background:#f0f0f0}\
.present{background:#d9f0d3}.reachable{background:#fff3c4}.gone{background:#f4c7c3}\
.frontier{font-weight:bold}\
details{margin:.3em 0}summary{cursor:pointer}\
#filter{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ccc;z-index:1}\
#filter label{margin-right:1em;white-space:nowrap}\
figure{margin:.5em 0}svg{max-width:100%;height:auto}\
.caption{color:#555;font-size:12px}";

/// Counts the sections that render and the errors seen, for the browser test:
/// written onto `<body>` as `data-rendered` and `data-errors`.
const SCRIPT: &str = r#"(function () {
  var errors = 0;
  window.addEventListener('error', function () { errors += 1; mark(); });
  var consoleError = console.error;
  console.error = function () { errors += 1; mark(); return consoleError.apply(console, arguments); };
  var boxes = Array.prototype.slice.call(document.querySelectorAll('#filter input[type=checkbox]'));
  function apply() {
    var on = {};
    boxes.forEach(function (b) { if (b.checked) on[b.value] = true; });
    document.querySelectorAll('[data-families]').forEach(function (el) {
      el.hidden = !el.getAttribute('data-families').split('|').some(function (f) { return on[f]; });
    });
  }
  function all(v) { boxes.forEach(function (b) { b.checked = v; }); apply(); }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  document.getElementById('all').addEventListener('click', function () { all(true); });
  document.getElementById('none').addEventListener('click', function () { all(false); });
  function mark() {
    var shown = [];
    document.querySelectorAll('main > section').forEach(function (s) {
      if (s.offsetHeight > 0 && s.querySelector('h2')) shown.push(s.id);
    });
    document.body.setAttribute('data-rendered', shown.join(' '));
    document.body.setAttribute('data-errors', String(errors));
  }
  apply();
  mark();
})();
"#;

fn head(s: &mut String, command: &str) {
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>ctxlab replay report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>ctxlab replay report</h1>\n<p class=\"caption\">made by <code>{}</code>; \
         sizes and tokens are estimates by the named tokenizer</p>\n",
        esc(command)
    );
}

/// The distinct values of `f` over `runs`, in first-seen order.
fn distinct<'a>(runs: &'a [Compared], f: impl Fn(&'a Compared) -> String) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in runs {
        let v = f(c);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn filter(s: &mut String, runs: &[Compared]) {
    s.push_str("<nav id=\"filter\"><strong>policy families:</strong> ");
    for f in distinct(runs, |c| family(&c.run.policy)) {
        let _ = write!(
            s,
            "<label><input type=\"checkbox\" value=\"{f}\" checked> {f}</label>",
            f = esc(&f)
        );
    }
    s.push_str("<button id=\"all\" type=\"button\">all</button> <button id=\"none\" type=\"button\">none</button></nav>\n");
}

fn section(s: &mut String, id: &str, title: &str, note: &str) {
    let _ = write!(
        s,
        "<section id=\"{id}\">\n<h2>{}</h2>\n<p class=\"caption\">{}</p>\n",
        esc(title),
        esc(note)
    );
}

fn row_attr(policy: &str) -> String {
    format!(" data-families=\"{}\"", esc(&family(policy)))
}

fn summary(s: &mut String, runs: &[Compared], scored: &[Scored]) {
    section(
        s,
        "summary",
        "Summary",
        "per session and policy: model calls, tokens sent (sum over calls), the largest request, events, dollars when priced, artifact recall and planted facts kept when measured",
    );
    s.push_str("<table>\n<tr><th>session</th><th>policy</th><th>family</th><th>calls</th><th>tokens sent</th><th>peak tokens</th><th>events</th><th>dollars</th><th>recall</th><th>facts kept</th><th>frontier</th></tr>\n");
    for c in runs {
        let sc = scored
            .iter()
            .find(|x| x.session == c.run.session && x.policy == c.run.policy);
        let sent: usize = c.run.calls.iter().map(|x| x.tokens).sum();
        let peak = c.run.calls.iter().map(|x| x.tokens).max().unwrap_or(0);
        let _ = writeln!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{sent}</td><td>{peak}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            row_attr(&c.run.policy),
            esc(&c.run.session),
            esc(&c.run.policy),
            esc(&family(&c.run.policy)),
            c.run.calls.len(),
            c.run.events.len(),
            c.cost.as_ref().map_or("-".into(), |r| format!("{:.4}", r.dollars)),
            sc.map_or("-".into(), |x| format!("{:.1} %", x.artifact_recall)),
            sc.map_or("-".into(), |x| {
                let kept = x.retention.facts.iter().filter(|f| f.status != Status::Gone).count();
                format!("{kept}/{}", x.retention.facts.len())
            }),
            sc.map_or("-", |x| if x.dominated { "dominated" } else { "frontier" }),
        );
    }
    s.push_str("</table>\n</section>\n");
}

/// Per session, one figure per policy group: request tokens, cumulative
/// dollars (when priced) and events so far, call by call.
fn timelines(s: &mut String, runs: &[Compared], command: &str) {
    section(
        s,
        "timelines",
        "Timelines",
        "per session and policy group: the request each policy sends at every model call (tokens), its cumulative prompt cost, and its events so far; the group's policies in colour, every other policy in grey",
    );
    let names: Vec<&str> = runs.iter().map(|c| c.run.policy.as_str()).collect();
    for session in distinct(runs, |c| c.run.session.clone()) {
        let of: Vec<&Compared> = runs.iter().filter(|c| c.run.session == session).collect();
        let _ = writeln!(s, "<h3>session {}</h3>", esc(&session));
        for g in GROUPS {
            let members: Vec<&&Compared> =
                of.iter().filter(|c| group(&c.run.policy) == g).collect();
            if members.is_empty() {
                continue;
            }
            let families: Vec<String> = members.iter().map(|c| family(&c.run.policy)).collect();
            let panel = |title: &str, y: &str, f: &dyn Fn(&Compared) -> Vec<(f64, f64)>| Panel {
                title: title.to_string(),
                y_label: y.to_string(),
                series: of
                    .iter()
                    .map(|c| Series {
                        label: c.run.policy.clone(),
                        points: f(c),
                        style: Some(style_index(&c.run.policy, &names)),
                        context: group(&c.run.policy) != g,
                        step: false,
                    })
                    .collect(),
                ..Panel::default()
            };
            let mut panels = vec![panel("request size", "request (tokens)", &|c| {
                c.run
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (i as f64 + 1.0, x.tokens as f64))
                    .collect()
            })];
            if of.iter().any(|c| c.cost.is_some()) {
                panels.push(panel("cumulative prompt cost", "cost (dollars)", &|c| {
                    c.cost
                        .as_ref()
                        .map(super::dollars::cumulative_dollars)
                        .unwrap_or_default()
                }));
            }
            panels.push(panel("events so far", "events (count)", &events_so_far));
            let svg = crate::plot::svg(&Figure {
                title: format!("{g} on {session}"),
                x_label: "model call (count)".into(),
                panels,
                caption: command.to_string(),
            });
            let _ = writeln!(
                s,
                "<figure data-families=\"{}\">\n{}</figure>",
                esc(&families.join("|")),
                svg.trim_end()
            );
        }
    }
    s.push_str("</section>\n");
}

/// Events recorded up to and including each call, call by call.
fn events_so_far(c: &Compared) -> Vec<(f64, f64)> {
    let mut per_call = vec![0usize; c.run.calls.len()];
    for (at, _) in &c.run.events {
        if let Some(n) = per_call.get_mut(*at) {
            *n += 1;
        }
    }
    let mut total = 0;
    per_call
        .iter()
        .enumerate()
        .map(|(i, n)| {
            total += n;
            (i as f64 + 1.0, total as f64)
        })
        .collect()
}

/// What one event did, in a line.
pub fn describe(e: &PolicyEvent) -> String {
    match e {
        PolicyEvent::Persisted { id, path, chars } => {
            format!("persisted result {id} to {path} ({chars} chars)")
        }
        PolicyEvent::Cleared { id, part, .. } => format!("cleared the {part} of {id}"),
        PolicyEvent::Truncated {
            id,
            from_chars,
            to_chars,
            saved_to,
        } => format!(
            "truncated {id}: {from_chars} to {to_chars} chars{}",
            saved_to
                .as_ref()
                .map_or(String::new(), |p| format!(", full text in {p}"))
        ),
        PolicyEvent::Summarised {
            replaced,
            kept,
            archive,
        } => format!(
            "summarised {replaced} messages, kept {kept}{}",
            archive
                .as_ref()
                .map_or(String::new(), |p| format!(", archived in {p}"))
        ),
        PolicyEvent::Restored { items, chars } => {
            format!("restored {} ({chars} chars)", items.join(", "))
        }
        PolicyEvent::Dropped { messages, why } => format!("dropped {messages} messages ({why})"),
        PolicyEvent::Repaired { id, what } => format!("repaired {id}: {what}"),
        PolicyEvent::ModelFailed { role, outcome } => format!("{role} model failed: {outcome}"),
        PolicyEvent::Gated {
            frees,
            payback_calls,
            expected_calls,
            sheet,
        } => format!(
            "gate skipped an edit freeing {frees} tokens: payback {payback_calls} calls > {expected_calls} expected (an estimate; {sheet})"
        ),
    }
}

/// Per policy, every call: what it sent and what the policy did before it.
fn calls(s: &mut String, runs: &[Compared]) {
    section(
        s,
        "calls",
        "Call by call",
        "per policy (open one): every model call, the messages and tokens it sent, and what the policy persisted, cleared, truncated, summarised or dropped just before it",
    );
    for c in runs {
        let r = &c.run;
        let _ = writeln!(
            s,
            "<details{}><summary>{} · {} · {} calls, {} events</summary>\n<table>\n<tr><th>call</th><th>messages</th><th>tokens</th><th>chars</th><th>dollars</th><th>before this call</th></tr>",
            row_attr(&r.policy),
            esc(&r.session),
            esc(&r.policy),
            r.calls.len(),
            r.events.len()
        );
        for (i, call) in r.calls.iter().enumerate() {
            let did: Vec<String> = r
                .events
                .iter()
                .filter(|(at, _)| *at == i)
                .map(|(_, e)| esc(&describe(e)))
                .collect();
            let dollars = c
                .cost
                .as_ref()
                .and_then(|x| x.requests.get(i))
                .map_or("-".into(), |q| format!("{:.4}", q.dollars));
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{dollars}</td><td class=\"t\">{}</td></tr>",
                i + 1,
                call.messages,
                call.tokens,
                call.chars,
                did.join("<br>")
            );
        }
        s.push_str("</table>\n</details>\n");
    }
    s.push_str("</section>\n");
}

fn retention(s: &mut String, scored: &[Scored]) {
    section(
        s,
        "retention",
        "Retention",
        "artifact recall at the last request, re-fetches, and where each planted fact is at the end: present in the request, reachable through a pointer, or gone",
    );
    if scored.is_empty() {
        s.push_str("<p>Retention was not measured: replay with <code>--retention</code>.</p>\n</section>\n");
        return;
    }
    let facts: Vec<String> = scored
        .first()
        .map(|x| x.retention.facts.iter().map(|f| f.label.clone()).collect())
        .unwrap_or_default();
    s.push_str("<table>\n<tr><th>session</th><th>policy</th><th>recall</th><th>re-fetches</th>");
    for f in &facts {
        let _ = write!(s, "<th>{}</th>", esc(f));
    }
    s.push_str("</tr>\n");
    for x in scored {
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td>",
            row_attr(&x.policy),
            esc(&x.session),
            esc(&x.policy),
            x.artifact_recall,
            x.retention.refetch_calls
        );
        for f in &x.retention.facts {
            let status = match f.status {
                Status::Present => "present",
                Status::Reachable => "reachable",
                Status::Gone => "gone",
            };
            let _ = write!(s, "<td class=\"{status}\">{status}</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n</section>\n");
}

fn frontier(s: &mut String, scored: &[Scored], command: &str) {
    section(
        s,
        "frontier",
        "Cost–retention frontier",
        "per session: every policy numbered; filled points are on the frontier (no other policy keeps more for less)",
    );
    if scored.is_empty() {
        s.push_str("<p>The frontier needs retention: replay with <code>--retention</code>.</p>\n");
    }
    let mut sessions: Vec<&str> = Vec::new();
    for x in scored {
        if !sessions.contains(&x.session.as_str()) {
            sessions.push(&x.session);
        }
    }
    for session in sessions {
        let rows: Vec<Scored> = scored
            .iter()
            .filter(|x| x.session == session)
            .cloned()
            .collect();
        let svg = super::frontier_plot::svg(
            &rows,
            &format!("cost-retention frontier on {session}"),
            command,
        );
        let _ = writeln!(s, "<figure>\n{}</figure>", svg.trim_end());
    }
    s.push_str("</section>\n");
}
