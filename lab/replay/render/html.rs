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

use super::dollars::subagent_of;
use super::family::{family, family_of, group_of, style_index, GROUPS};
use crate::plot::style::{Style, DISTINCT};
use crate::plot::{esc, Figure, Panel, Rule, Series};
use crate::policy::PolicyEvent;
use crate::replay::input::product::ProductCompaction;
use crate::replay::runs::cost_arms::CostRow;
use crate::replay::runs::policies::{Compared, Sessions};
use crate::retention::render::Scored;
use crate::retention::Status;

/// Ids of the page's sections, in order (the browser test checks each renders).
pub const SECTIONS: [&str; 6] = [
    "summary",
    "product",
    "timelines",
    "calls",
    "retention",
    "frontier",
];

/// The page for `runs` (one or more sessions under one or more policies,
/// scored as the replay scored them) beside what the sessions' logs
/// recorded of the product (`product`: its bill, its compactions, its
/// envelope); `command` says what made it.
pub fn page(runs: &[Compared], scored: &[Scored], product: &Sessions, command: &str) -> String {
    let mut s = String::new();
    head(&mut s, command);
    basis(&mut s, runs);
    headline(&mut s, runs, scored, product);
    filter(&mut s, runs);
    s.push_str("<main>\n");
    summary(&mut s, runs, scored, &product.recorded);
    product_section(&mut s, product);
    timelines(&mut s, runs, product, command);
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
    product: &Sessions,
    command: &str,
) -> crate::error::LabResult<()> {
    let html = page(runs, scored, product, command);
    crate::storage::root::cleanup::write_replacing(path, html.as_bytes())
        .map_err(|e| crate::error::LabError::io("writing the HTML report", path, e))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px;overflow-wrap:anywhere}\
@media (max-width:600px){body{margin:.5em}#filter{position:static}}\
.path{border-bottom:1px dotted #777}td,th{overflow-wrap:normal}td{white-space:nowrap}td.t{white-space:normal;min-width:12em}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0}\
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
td:nth-child(-n+2),th:nth-child(-n+2),td.t{text-align:left}\
th{background:#f0f0f0}\
.present{background:#d9f0d3}.reachable{background:#fff3c4}.gone{background:#f4c7c3}\
.frontier{font-weight:bold}tr.product,tr.compaction{background:#eef4fb}\
details{margin:.3em 0}summary{cursor:pointer}\
#filter{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ccc;z-index:1}\
#filter label{margin-right:1em;white-space:nowrap}\
figure{margin:.5em 0}svg{max-width:100%;height:auto}\
.scroll{overflow-x:auto;max-width:100%}caption{text-align:left;font-weight:bold;padding:.2em 0}\
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
      var shown = el.getAttribute('data-families').split('|').some(function (f) { return on[f]; });
      el.style.display = shown ? '' : 'none';
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
    document.body.setAttribute('data-scroll-width', String(document.documentElement.scrollWidth));
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
    for f in distinct(runs, |c| family_of(&c.spec)) {
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

/// A table's opening: its caption (what it lists, for a screen reader and
/// for a reader who scrolled past the heading) and its header row, each
/// header cell scoped to its column.
fn table_open(s: &mut String, caption: &str, headers: &[&str]) {
    let _ = write!(
        s,
        "<div class=\"scroll\"><table>\n<caption>{}</caption>\n<tr>",
        esc(caption)
    );
    for h in headers {
        let _ = write!(s, "<th scope=\"col\">{}</th>", esc(h));
    }
    s.push_str("</tr>\n");
}

/// A table's end, with the scrolling box around it.
const TABLE_CLOSE: &str = "</table></div>\n";

fn row_attr(policy: &str) -> String {
    format!(" data-families=\"{}\"", esc(&family(policy)))
}

fn summary(s: &mut String, runs: &[Compared], scored: &[Scored], recorded: &[CostRow]) {
    section(
        s,
        "summary",
        "Summary",
        "per session and policy: model calls; tokens sent (every request as sent, its envelope included, summed over calls); the largest request; events; when priced, the tokens priced (the same requests plus any summary calls the policy made) and their dollars, on the basis stated at the top; artifact recall and planted facts kept when measured (open loop: a fact behind a pointer counts as kept); with the closed loop, the dollars once every recovery call and re-fetch a removal causes is inserted and priced, the demands no call could meet, and the frontier on those dollars against in-request recall. The product's recorded rows (its own requests as the log recorded them) come first in their session",
    );
    // Closed-loop columns when the runs were closed: what the removals cost
    // the agent later, and the frontier on that cost.
    let closed = scored.iter().any(|x| x.closed.is_some());
    let mut columns = vec![
        "session",
        "policy",
        "family",
        "calls",
        "tokens sent",
        "peak tokens",
        "events",
        "tokens priced",
        "dollars",
        "recall",
        "facts kept",
        "frontier",
    ];
    if closed {
        columns.extend([
            "closed-loop dollars",
            "lost demands",
            "closed-loop frontier",
        ]);
    }
    table_open(
        s,
        "Every policy on every session: what it sent, did, kept and paid",
        &columns,
    );
    let mut shown: Vec<&str> = Vec::new();
    for c in runs {
        if !shown.contains(&c.run.session.as_str()) {
            shown.push(&c.run.session);
            for r in recorded.iter().filter(|r| r.source == c.run.session) {
                recorded_row(s, r);
            }
        }
        let sc = scored
            .iter()
            .find(|x| x.session == c.run.session && x.policy == c.run.policy);
        let sent: usize = c.run.calls.iter().map(|x| x.tokens + x.envelope).sum();
        let peak = c
            .run
            .calls
            .iter()
            .map(|x| x.tokens + x.envelope)
            .max()
            .unwrap_or(0);
        let closed_cells = match (closed, sc.and_then(|x| x.closed)) {
            (false, _) => String::new(),
            (true, None) => "<td>-</td><td>-</td><td>-</td>".into(),
            (true, Some(p)) => format!(
                "<td>{:.4}</td><td>{}</td><td>{}</td>",
                p.dollars,
                p.lost_demands,
                match (sc.is_some_and(|x| x.ended_by_error.is_some()), p.dominated) {
                    (true, _) => "ended by error",
                    (false, true) => "dominated",
                    (false, false) => "frontier",
                }
            ),
        };
        let _ = writeln!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{sent}</td><td>{peak}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{closed_cells}</tr>",
            row_attr(&c.run.policy),
            esc(&c.run.session),
            esc(&c.run.policy),
            esc(&family_of(&c.spec)),
            c.run.calls.len(),
            c.run.events.len(),
            c.cost.as_ref().map_or("-".into(), |r| r.input_tokens.to_string()),
            c.cost.as_ref().map_or("-".into(), |r| format!("{:.4}", r.dollars)),
            sc.map_or("-".into(), |x| format!("{:.1} %", x.artifact_recall)),
            sc.map_or("-".into(), |x| {
                let kept = x.retention.facts.iter().filter(|f| f.status != Status::Gone).count();
                format!("{kept}/{}", x.retention.facts.len())
            }),
            sc.map_or("-", crate::retention::render::frontier_cell),
        );
    }
    s.push_str(TABLE_CLOSE);
    s.push_str("</section>\n");
}

/// Per session, one figure per policy group: request tokens, cumulative
/// dollars (when priced) and events so far, call by call.
fn timelines(s: &mut String, runs: &[Compared], product: &Sessions, command: &str) {
    section(
        s,
        "timelines",
        "Timelines",
        "per session and policy group: the request each policy sends at every model call (tokens on a log scale, envelope included; the product's own requests as its log recorded them, in API tokens, when priced), its cumulative prompt cost, and its events so far; the group's policies in colour, every other policy in grey; a vertical line at each call where the product itself compacted, and the product's context window as a horizontal line on the request sizes",
    );
    let names: Vec<&str> = runs.iter().map(|c| c.run.policy.as_str()).collect();
    let costs = super::dollars::policy_costs(runs);
    // A log's subagents are drawn together after it, not a figure set each.
    let logs = distinct(runs, |c| c.run.session.clone());
    for session in logs.iter().filter(|s| subagent_of(s).is_none()) {
        let session = session.clone();
        let of: Vec<&Compared> = runs.iter().filter(|c| c.run.session == session).collect();
        let _ = writeln!(s, "<h3>session {}</h3>", esc(&session));
        let real = real_compaction_rules(&product.compactions, &session);
        let window = product
            .products
            .iter()
            .find(|(x, _)| *x == session)
            .and_then(|(_, p)| Some((*p, context_window(p)?)));
        for g in GROUPS {
            let members: Vec<&&Compared> = of.iter().filter(|c| group_of(&c.spec) == g).collect();
            if members.is_empty() {
                continue;
            }
            let families: Vec<String> = members.iter().map(|c| family_of(&c.spec)).collect();
            let panel = |title: &str, y: &str, f: &dyn Fn(&Compared) -> Vec<(f64, f64)>| Panel {
                title: title.to_string(),
                y_label: y.to_string(),
                series: of
                    .iter()
                    .map(|c| Series {
                        label: c.run.policy.clone(),
                        points: f(c),
                        style: Some(style_index(&c.run.policy, &names)),
                        context: group_of(&c.spec) != g,
                        step: false,
                    })
                    .collect(),
                v_rules: real.clone(),
                ..Panel::default()
            };
            // Log scale: an uncompacted policy runs decades above the
            // compacting ones and would squeeze them against zero.
            let mut sizes = panel("request size (log scale)", "request (tokens, log)", &|c| {
                c.run
                    .calls
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (i as f64 + 1.0, (x.tokens + x.envelope) as f64))
                    .collect()
            });
            if let Some(points) = recorded_sizes(&product.recorded, &session) {
                // A look no policy of the panel has.
                let used: Vec<(usize, usize)> = sizes
                    .series
                    .iter()
                    .filter(|x| !x.context)
                    .filter_map(|x| x.style.map(Style::nth))
                    .map(|x| (x.colour, x.marker))
                    .collect();
                let style = (0..DISTINCT).find(|&k| {
                    let x = Style::nth(k);
                    !used.contains(&(x.colour, x.marker))
                });
                sizes.series.insert(
                    0,
                    Series {
                        label: "the product (recorded, API tokens)".into(),
                        points,
                        style,
                        ..Series::default()
                    },
                );
            }
            sizes.log_y = true;
            if let Some((port, at)) = window {
                sizes.h_rules.push(Rule {
                    label: format!("{port} context window"),
                    at,
                });
            }
            let mut panels = vec![sizes];
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
        subagents(s, &costs, &session, command);
    }
    s.push_str("</section>\n");
}

/// The subagents of log `session` together: one figure of each policy's
/// dollars over every subagent's calls (per policy group), and a table
/// with a row per subagent; nothing when it had none or none was priced.
fn subagents(s: &mut String, costs: &[super::dollars::PolicyCost], session: &str, command: &str) {
    use super::dollars::{subagent_cells, subagent_panels, subagent_rows, SUBAGENT_COLUMNS};
    let panels = subagent_panels(costs, session);
    let rows: Vec<_> = subagent_rows(costs)
        .into_iter()
        .filter(|r| r.log == session)
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "<h3>subagents of {}, together</h3>", esc(session));
    if !panels.is_empty() {
        let svg = crate::plot::svg(&Figure {
            title: format!("{} subagents of {session}, one after another", rows.len()),
            x_label: "model call of the subagents, one after another (count)".into(),
            panels,
            caption: command.to_string(),
        });
        let _ = writeln!(s, "<figure>\n{}</figure>", svg.trim_end());
    }
    table_open(
        s,
        &format!(
            "each subagent of {session} priced under every policy: its calls, and its dollars under the cheapest policy, the median and the dearest"
        ),
        &SUBAGENT_COLUMNS,
    );
    for r in &rows {
        let cells: String = subagent_cells(r)
            .iter()
            .map(|c| format!("<td>{}</td>", esc(c)))
            .collect();
        let _ = writeln!(s, "<tr>{cells}</tr>");
    }
    s.push_str(TABLE_CLOSE);
}

/// The product's real compactions on `session`, as event lines at the
/// call each preceded (the x axis counts calls from 1).
fn real_compaction_rules(rows: &[ProductCompaction], session: &str) -> Vec<Rule> {
    rows.iter()
        .filter(|r| r.session == session)
        .map(|r| Rule {
            label: format!("product compacted (call {})", r.call + 1),
            at: r.call as f64 + 1.0,
        })
        .collect()
}

/// The product's own request sizes on `session`, call by call, as its log
/// recorded them (`recorded-usage`: input, cache reads and writes).
fn recorded_sizes(recorded: &[CostRow], session: &str) -> Option<Vec<(f64, f64)>> {
    let row = recorded
        .iter()
        .find(|r| r.source == session && r.arm == "recorded-usage")?;
    Some(
        row.report
            .requests
            .iter()
            .enumerate()
            .map(|(i, q)| (i as f64 + 1.0, q.input_tokens as f64))
            .collect(),
    )
}

/// The context window the product's port works to (`context_window` among
/// its constants), in tokens.
fn context_window(port: &str) -> Option<f64> {
    fn find(v: &serde_json::Value) -> Option<f64> {
        match v {
            serde_json::Value::Object(m) => m
                .get("context_window")
                .and_then(serde_json::Value::as_f64)
                .or_else(|| m.values().find_map(find)),
            _ => None,
        }
    }
    find(&crate::zoo::list::make(port).ok()?.info().constants)
}

/// The sections' headings, for the table of contents.
const HEADINGS: [&str; 6] = [
    "Summary",
    "The product",
    "Timelines",
    "Call by call",
    "Retention",
    "Cost–retention frontier",
];

/// What the run found, ranked ([`super::headline::findings`]), and the
/// table of contents linking every section.
fn headline(s: &mut String, runs: &[Compared], scored: &[Scored], product: &Sessions) {
    s.push_str("<section id=\"headline\">\n<h2>What this run found</h2>\n<ol>\n");
    let mut findings = super::headline::findings(runs, scored);
    // The product's own bill, to read the policies' dollars against.
    for r in product
        .recorded
        .iter()
        .filter(|r| r.arm == "recorded-usage")
    {
        let compactions = product
            .compactions
            .iter()
            .filter(|c| c.session == r.source)
            .count();
        findings.push(super::headline::Finding {
            topic: format!("the product, as recorded, on {}", r.source),
            text: format!(
                "${:.4} (prompt side) over {} requests, {compactions} real compactions",
                r.report.dollars,
                r.report.requests.len()
            ),
        });
    }
    for f in findings {
        let _ = writeln!(
            s,
            "<li><strong>{}:</strong> {}</li>",
            esc(&f.topic),
            esc(&f.text)
        );
    }
    s.push_str("</ol>\n<nav id=\"toc\" aria-label=\"contents\"><strong>contents:</strong> ");
    let links: Vec<String> = SECTIONS
        .iter()
        .zip(HEADINGS)
        .map(|(id, h)| format!("<a href=\"#{id}\">{}</a>", esc(h)))
        .collect();
    s.push_str(&links.join(" · "));
    s.push_str("</nav>\n</section>\n");
}

/// The line under the title: the prices, the cache model and the tokenizer
/// the figures were made with, and the one basis of tokens and dollars.
fn basis(s: &mut String, runs: &[Compared]) {
    let mut tokenizers = distinct(runs, |c| c.run.tokenizer.clone());
    tokenizers.retain(|t| !t.is_empty());
    let sheets = distinct(runs, |c| {
        c.cost.as_ref().map_or(String::new(), |r| {
            format!(
                "{} (prices as of {}; cache model {})",
                r.sheet.name, r.sheet.date, r.provider
            )
        })
    });
    let sheets: Vec<String> = sheets.into_iter().filter(|x| !x.is_empty()).collect();
    let prices = match sheets.is_empty() {
        true => "not priced (replay with --cost)".to_string(),
        false => sheets.join("; "),
    };
    let _ = writeln!(
        s,
        "<p id=\"basis\"><strong>price sheet:</strong> {}; <strong>tokenizer:</strong> {}. \
         <strong>basis:</strong> tokens are the requests as sent, each with the session's envelope \
         (system prompt and tools), counted by the tokenizer; dollars price those same requests, \
         prompt side only (plus each summary call a policy made, as its product sends it). \
         Replayed figures are estimates; the product's recorded rows are the API's own counts.</p>",
        esc(&prices),
        esc(&tokenizers.join(", "))
    );
}

/// The product's own record: its bill on its own requests, its real
/// compactions beside its port's, and each session's envelope.
fn product_section(s: &mut String, product: &Sessions) {
    section(
        s,
        "product",
        "The product",
        "what the session's log recorded of the product itself: the bill of its own requests, each compaction it made (with the call where its port, replayed on the same session without the product's compactions, fired), and the envelope every replayed request carries",
    );
    if product.recorded.is_empty() && product.compactions.is_empty() {
        s.push_str("<p>No product record: the sessions' logs record no usage and no compaction (or the replay was not priced: add <code>--cost</code>).</p>\n</section>\n");
        return;
    }
    if !product.recorded.is_empty() {
        table_open(
            s,
            "The product's recorded bill, beside the cache model on the same requests",
            &[
                "session",
                "row",
                "prices",
                "requests",
                "input tokens",
                "cache read",
                "cache write",
                "dollars (prompt side)",
                "billed with output",
            ],
        );
        for r in &product.recorded {
            let prices = match &r.billed {
                Some(b) => b.prices.clone(),
                None => format!("{} ({})", r.report.sheet.name, r.report.sheet.date),
            };
            let _ = writeln!(
                s,
                "<tr class=\"product\"><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4}</td><td>{}</td></tr>",
                esc(&r.source),
                esc(&r.arm),
                esc(&prices),
                r.report.requests.len(),
                r.report.input_tokens,
                r.report.cache_read_tokens,
                r.report.cache_write_tokens,
                r.report.dollars,
                r.billed.as_ref().map_or("-".into(), |b| format!("{:.4}", b.dollars)),
            );
        }
        s.push_str(TABLE_CLOSE);
    }
    if !product.compactions.is_empty() {
        table_open(
            s,
            "Each real compaction of the product, beside its port replaying the session",
            &[
                "session",
                "call",
                "trigger",
                "tokens before",
                "size after (recorded)",
                "the product's port",
                "port fired @call",
                "port's size after (estimate)",
                "difference",
            ],
        );
        for c in &product.compactions {
            let cell = |v: Option<String>| esc(&v.unwrap_or_else(|| "-".into()));
            let diff = match (c.policy_after, c.recorded_after) {
                (Some(p), Some(rec)) if rec > 0 => Some(format!(
                    "{:+.1} %",
                    (p as f64 - rec as f64) / rec as f64 * 100.0
                )),
                _ => None,
            };
            let _ = writeln!(
                s,
                "<tr class=\"compaction\"><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.session),
                c.call + 1,
                cell(c.trigger.clone()),
                cell(c.pre_tokens.map(|x| x.to_string())),
                cell(c.recorded_after.map(|x| x.to_string())),
                cell(c.policy.clone()),
                cell(c.policy_call.map(|x| (x + 1).to_string())),
                cell(c.policy_after.map(|x| x.to_string())),
                cell(diff),
            );
        }
        s.push_str(TABLE_CLOSE);
        s.push_str("<p class=\"caption\">calls are counted from 1, as on the timelines; tokens before: the product's own count when it compacted; size after: the first request after, as recorded and as the port's replay estimates it (messages plus envelope)</p>\n");
    }
    for e in &product.envelopes {
        let _ = writeln!(
            s,
            "<p class=\"caption\">{}: envelope {} tokens sent before every replayed request</p>",
            esc(&e.session),
            e.tokens
        );
    }
    s.push_str("</section>\n");
}

/// One recorded row of the summary: the product's own requests.
fn recorded_row(s: &mut String, r: &CostRow) {
    let tokens = r.report.input_tokens;
    let peak = r
        .report
        .requests
        .iter()
        .map(|q| q.input_tokens)
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        s,
        "<tr class=\"product\"><td>{}</td><td>{}</td><td class=\"t\">the product (recorded)</td><td>{}</td><td>{tokens}</td><td>{peak}</td><td>-</td><td>{tokens}</td><td>{:.4}</td><td>-</td><td>-</td><td>-</td></tr>",
        esc(&r.source),
        esc(&r.arm),
        r.report.requests.len(),
        r.report.dollars,
    );
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

/// Paths longer than this are shortened on the page.
const LONG_PATH: usize = 32;

/// `text` as HTML, each long path (a word with a `/`) shortened to its last
/// two parts, the whole path on hover (`title`): the placeholders policies
/// write run to 100 characters and would widen every table.
pub fn short_paths(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let path = word.trim_end_matches([',', ';', ')', '.']);
            let tail = &word[path.len()..];
            if path.contains('/') && path.chars().count() > LONG_PATH {
                let parts: Vec<&str> = path.rsplit('/').take(2).collect();
                format!(
                    "<span class=\"path\" title=\"{}\">…/{}/{}</span>{}",
                    esc(path),
                    esc(parts.get(1).unwrap_or(&"")),
                    esc(parts[0]),
                    esc(tail)
                )
            } else {
                esc(word)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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
            "<details{}><summary>{} · {} · {} calls, {} events</summary>",
            row_attr(&r.policy),
            esc(&r.session),
            esc(&r.policy),
            r.calls.len(),
            r.events.len()
        );
        table_open(
            s,
            &format!("{} on {}: every model call", r.policy, r.session),
            &[
                "call",
                "messages",
                "tokens",
                "chars",
                "dollars",
                "before this call",
            ],
        );
        for (i, call) in r.calls.iter().enumerate() {
            let did: Vec<String> = r
                .events
                .iter()
                .filter(|(at, _)| *at == i)
                .map(|(_, e)| short_paths(&describe(e)))
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
        s.push_str(TABLE_CLOSE);
        s.push_str("</details>\n");
    }
    s.push_str("</section>\n");
}

fn retention(s: &mut String, scored: &[Scored]) {
    section(
        s,
        "retention",
        "Retention",
        "artifact recall at the last request, every artifact in tiers (verbatim in the request, behind a pointer, re-fetchable, lost) and by kind (instruction, task state, tool output), re-fetches, and where each planted fact is at the end: present in the request, reachable through a pointer, or gone (re-fetchable or lost)",
    );
    if scored.is_empty() {
        s.push_str("<p>Retention was not measured: replay with <code>--retention</code>.</p>\n</section>\n");
        return;
    }
    let facts: Vec<String> = scored
        .first()
        .map(|x| x.retention.facts.iter().map(|f| f.label.clone()).collect())
        .unwrap_or_default();
    let mut headers = vec![
        "session",
        "policy",
        "recall",
        "tiers: verbatim/pointer/re-fetchable/lost",
        "instruction",
        "task state",
        "tool output",
        "re-fetches",
    ];
    headers.extend(facts.iter().map(String::as_str));
    table_open(
        s,
        "Artifact recall, re-fetches and each planted fact's fate at the end",
        &headers,
    );
    for x in scored {
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>{:.1} %</td><td>{}</td>",
            row_attr(&x.policy),
            esc(&x.session),
            esc(&x.policy),
            x.artifact_recall,
            x.retention.tiers.cell(),
        );
        for o in crate::retention::Origin::ALL {
            let cell = x
                .retention
                .by_origin
                .get(&o)
                .map_or("-".into(), |t| t.cell());
            let _ = write!(s, "<td>{cell}</td>");
        }
        let _ = write!(s, "<td>{}</td>", x.retention.refetch_calls);
        for f in &x.retention.facts {
            let (status, text) = match (f.status, f.refetchable) {
                (Status::Present, _) => ("present", "present"),
                (Status::Reachable, _) => ("reachable", "reachable"),
                (Status::Gone, true) => ("gone", "gone (re-fetchable)"),
                (Status::Gone, false) => ("gone", "gone (lost)"),
            };
            let _ = write!(s, "<td class=\"{status}\">{text}</td>");
        }
        s.push_str("</tr>\n");
    }
    s.push_str(TABLE_CLOSE);
    s.push_str("</section>\n");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_shortened_with_the_whole_path_on_hover() {
        let long = "/tmp/ctxlab-root/sessions/0123456789abcdef/tool-results/toolu_01.txt";
        let html = short_paths(&format!("persisted result t1 to {long}, (12 chars) <x>"));
        assert!(
            html.contains(&format!(
                "<span class=\"path\" title=\"{long}\">…/tool-results/toolu_01.txt</span>,"
            )),
            "{html}"
        );
        assert!(html.ends_with("(12 chars) &lt;x&gt;"), "{html}");
        // A short path stays as it is.
        assert_eq!(short_paths("in /a/b.txt"), "in /a/b.txt");
    }
}
