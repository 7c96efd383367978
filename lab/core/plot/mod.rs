//! The lab's one plotting module: series in, an SVG string out.
//!
//! A [`Figure`] is one or more [`Panel`]s stacked vertically that share an x
//! axis label, a legend to the right of each panel's data, and a caption
//! line saying where the figure came from (command, profile, tokenizer).
//! Every series is drawn at its true values: series that coincide are told
//! apart by [style](style::Style) (colour, marker, dash), and the legend
//! names the series each one coincides with, instead of nudging lines off
//! their values. A panel may draw *context* series in grey behind its
//! highlighted ones (small multiples: every policy in grey, one family in
//! colour), and *marks*: points tagged with a short label placed where no
//! other label is, named in the panel's key (the frontier plot). Axes span
//! every value, so nothing is clipped; ticks fall on 1, 2 or 5 times a
//! power of ten. [`lint`] reads a written SVG back and reports shared
//! styles, overlapping labels and labels off the canvas.
//!
//! Hand-written rather than drawn through `plotters`: the figures need a
//! handful of primitives, the output must be byte-for-byte repeatable for
//! snapshots and reports-check, and label placement needs text extents,
//! which `plotters` measures through the system's fonts (fontconfig) or a
//! bundled font file; here extents are estimated per character
//! ([`text`]) and `<text>` leaves the glyphs to the viewer.

pub mod describe;
pub mod lint;
pub mod style;
pub mod text;

use std::fmt::Write as _;

use style::{Style, CONTEXT};
use text::{Anchor, Rect};

/// One line of data.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points in data units, in x order.
    pub points: Vec<(f64, f64)>,
    /// Draw as a step function (value holds until the next x), for counts
    /// measured at discrete settings; otherwise straight segments.
    pub step: bool,
    /// Style index ([`Style::nth`]); `None` takes the series' position
    /// among the panel's highlighted series. Set it to keep one series'
    /// look across panels and figures.
    pub style: Option<usize>,
    /// Drawn thin and grey behind the highlighted series, without markers
    /// or a legend entry: the others, for comparison.
    pub context: bool,
}

/// A labelled reference line across the data: a limit (horizontal) or an
/// event (vertical).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Text drawn next to the line.
    pub label: String,
    /// Position in data units.
    pub at: f64,
}

/// A point tagged on the plot and named in the key: the tag (a number) is
/// placed beside the point where no other label is.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Short tag drawn beside the point.
    pub tag: String,
    /// What the tag stands for, in the key.
    pub name: String,
    /// Position in data units.
    pub at: (f64, f64),
    /// Drawn filled (e.g. on the frontier) rather than open.
    pub filled: bool,
    /// What a page's filter knows the point by (a policy's family): written
    /// as `data-families` on the point, its tag and its key entry; empty
    /// for none.
    pub group: String,
}

/// ` data-families="…"` for the non-empty groups of `marks`, deduplicated,
/// or nothing: a page's filter hides the element when none is shown.
fn families_attr<'a>(marks: impl Iterator<Item = &'a Mark>) -> String {
    let mut groups: Vec<&str> = Vec::new();
    for m in marks.filter(|m| !m.group.is_empty()) {
        if !groups.contains(&m.group.as_str()) {
            groups.push(&m.group);
        }
    }
    match groups.is_empty() {
        true => String::new(),
        false => format!(r#" data-families="{}""#, esc(&groups.join("|"))),
    }
}

/// One row of a strip panel (a rug): a thin line over the row's extent, a
/// short tick at each event, and a cross where the row ended early. The
/// rows of a panel line up with its legend entries, which name them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Strip {
    /// Legend text of the row.
    pub label: String,
    /// The row's extent in x (data units): where it started and ended.
    pub span: (f64, f64),
    /// The x of each event: one tick each, however close (a count a reader
    /// or a test can take from the drawing).
    pub events: Vec<f64>,
    /// Where the row ended early, if it did: a cross there.
    pub end: Option<f64>,
    /// Style index ([`Style::nth`]) of its colour; `None` takes the row's
    /// position.
    pub style: Option<usize>,
}

/// A shaded range behind a highlighted series: the spread of what its line
/// summarises (e.g. min–max over seeds around a median), in the series'
/// colour, translucent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Band {
    /// Style index ([`Style::nth`]) of the series it belongs to.
    pub style: usize,
    /// `(x, low, high)` in data units, in x order.
    pub points: Vec<(f64, f64, f64)>,
}

/// One plot area with its own y axis.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Panel {
    /// Heading above the panel.
    pub title: String,
    /// Y axis label, with its unit.
    pub y_label: String,
    /// The data.
    pub series: Vec<Series>,
    /// Horizontal reference lines (limits).
    pub h_rules: Vec<Rule>,
    /// Vertical reference lines (events).
    pub v_rules: Vec<Rule>,
    /// Tagged points, named in the key after the legend.
    pub marks: Vec<Mark>,
    /// Height of the plot area in pixels; 0 for the default.
    pub height: f64,
    /// An x range of its own (its own data), instead of the figure's shared
    /// one: for panels of different sessions, whose calls differ in number.
    pub own_x: bool,
    /// An x axis label of its own, drawn under this panel (for a panel with
    /// [`Panel::own_x`] in other units); empty for none.
    pub x_label: String,
    /// A logarithmic y axis (ticks at 1, 2 and 5 per decade): for sizes
    /// that span decades, where a linear axis lets the largest line squeeze
    /// the others against zero. Values at or below zero sit on the axis.
    pub log_y: bool,
    /// Rows of events (a rug, [`Strip`]): the panel is then one row per
    /// strip, without a y scale.
    pub strips: Vec<Strip>,
    /// Shaded ranges behind highlighted series ([`Band`]).
    pub bands: Vec<Band>,
}

/// A whole figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figure {
    /// Title line.
    pub title: String,
    /// X axis label, with its unit.
    pub x_label: String,
    /// Panels, top to bottom; they share the x range, except a panel
    /// with [`Panel::own_x`].
    pub panels: Vec<Panel>,
    /// Provenance caption: the command, profile and tokenizer that made it.
    pub caption: String,
}

const WIDTH: f64 = 640.0;
const PANEL_H: f64 = 200.0;
const GAP: f64 = 70.0;
const TOP: f64 = 50.0;
/// Height of one legend entry.
const LEGEND_ROW: f64 = 18.0;
/// At most this many markers per series, so dense series stay readable.
const MAX_MARKS: usize = 24;
/// Font sizes: body, title, caption and rule labels, mark tags.
const FONT: f64 = 12.0;
const TITLE_FONT: f64 = 15.0;
const SMALL_FONT: f64 = 10.0;
/// Bold text is about a tenth wider than regular.
const BOLD: f64 = 1.1;

/// Where things go: the left margin (room for the widest tick label and
/// the y label) and the legend's left edge.
#[derive(Debug, Clone, Copy)]
struct Frame {
    left: f64,
    legend_x: f64,
}

impl Frame {
    fn right(&self) -> f64 {
        self.left + WIDTH
    }
}

/// The SVG text of a figure. Pure: the same figure gives the same bytes.
pub fn svg(fig: &Figure) -> String {
    let (xmin, xmax) = x_range(fig.panels.iter().filter(|p| !p.own_x));
    let shared = ticks(xmin, xmax);
    let xts: Vec<Ticks> = fig
        .panels
        .iter()
        .map(|p| match p.own_x {
            true => {
                let (lo, hi) = x_range(std::iter::once(p));
                ticks(lo, hi)
            }
            false => shared,
        })
        .collect();
    let yts: Vec<Ticks> = fig.panels.iter().map(y_ticks).collect();
    let widest_tick = fig
        .panels
        .iter()
        .zip(&yts)
        .flat_map(|(p, t)| y_labels(p, t))
        .map(|v| text::width(&num(v), FONT))
        .fold(0.0, f64::max);
    let left = (widest_tick + 40.0).max(70.0).round();
    let frame = Frame {
        left,
        legend_x: left + WIDTH + 24.0,
    };
    let total_w = (frame.legend_x + legend_width(fig))
        .max(left + text::width(&fig.title, TITLE_FONT) + 10.0)
        .max(left + text::width(&fig.caption, SMALL_FONT) + 10.0)
        .ceil();
    let tops = panel_tops(fig);
    // The x axis of the last panel, and the bottom of its slot (its legend may reach lower).
    let last = fig.panels.len().saturating_sub(1);
    let axis = tops[last] + fig.panels.get(last).map_or(PANEL_H, panel_h);
    let bottom = axis.max(tops[tops.len() - 1] - GAP);
    let total_h = bottom + 70.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<rect width="{}" height="{}" fill="white"/>"#,
        fx(total_w),
        fx(total_h)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15">{}</text>"#,
        fx(left),
        esc(&fig.title)
    );
    let placed = fig.panels.iter().zip(&tops).zip(yts.iter().zip(&xts));
    for (i, ((p, &y0), (yt, xt))) in placed.enumerate() {
        panel(&mut s, i, p, y0, xt, yt, &frame);
        legend(&mut s, p, y0, frame.legend_x);
    }
    // A last panel with an x label of its own has drawn it already.
    if fig.panels.last().is_none_or(|p| p.x_label.is_empty()) {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            fx(left + WIDTH / 2.0),
            fx(axis + 36.0),
            esc(&fig.x_label)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="10" fill="#555">{}</text>"##,
        fx(left),
        fx(bottom + 60.0),
        esc(&fig.caption)
    );
    s.push_str("</svg>\n");
    // Named for a screen reader: the id hashes the drawn body, so figures
    // inlined into one page keep distinct ids.
    let id = describe::id(&s);
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img" aria-labelledby="{id}-title {id}-desc">
<title id="{id}-title">{}</title>
<desc id="{id}-desc">{}</desc>
{s}"#,
        esc(&fig.title),
        esc(&describe::describe(fig)),
        w = fx(total_w),
        h = fx(total_h)
    )
}

/// The one-call form for a single panel: labelled series in, SVG out.
/// `x_label` and `y_label` carry their units; `caption` says which command,
/// profile and tokenizer made the figure.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: Vec<Series>,
    caption: &str,
) -> String {
    svg(&Figure {
        title: title.to_string(),
        x_label: x_label.to_string(),
        panels: vec![Panel {
            y_label: y_label.to_string(),
            series,
            ..Panel::default()
        }],
        caption: caption.to_string(),
    })
}

fn panel_h(p: &Panel) -> f64 {
    if p.height > 0.0 {
        p.height
    } else if !p.strips.is_empty() {
        // One legend row per strip, the rows beside their names.
        LEGEND_ROW * p.strips.len() as f64
    } else {
        PANEL_H
    }
}

/// The y ticks of a panel.
fn y_ticks(p: &Panel) -> Ticks {
    if p.log_y {
        let (lo, hi) = y_range_positive(p);
        return log_ticks(lo, hi);
    }
    let (lo, hi) = y_range(p);
    whole_ticks_for_counts(ticks(lo, hi), p)
}

/// The y ticks of a panel that carry a label (none on a strip panel; on a
/// log axis, those far enough apart not to overlap at the panel's height).
fn y_labels(p: &Panel, t: &Ticks) -> Vec<f64> {
    if !p.strips.is_empty() {
        return Vec::new();
    }
    t.labelled(panel_h(p))
}

/// One panel: frame, grid, ticks, rules, context series, highlighted
/// series, marks.
fn panel(s: &mut String, index: usize, p: &Panel, y0: f64, xt: &Ticks, yt: &Ticks, f: &Frame) {
    let h = panel_h(p);
    let left = f.left;
    let x = |v: f64| left + xt.frac(v) * WIDTH;
    let y = |v: f64| y0 + h - yt.frac(v) * h;
    let labelled = y_labels(p, yt);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-weight="bold">{}</text>"#,
        fx(left),
        fx(y0 - 10.0),
        esc(&p.title)
    );
    for v in yt.values().into_iter().filter(|_| p.strips.is_empty()) {
        let _ = write!(
            s,
            r##"<path d="M{} {y} H{}" stroke="#e0e0e0"/>"##,
            fx(left),
            fx(f.right()),
            y = fx(y(v))
        );
        if labelled.contains(&v) {
            let _ = write!(
                s,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                fx(left - 6.0),
                fx(y(v) + 4.0),
                num(v),
            );
        }
        s.push('\n');
    }
    for v in xt.values() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            fx(x(v)),
            fx(y0 + h + 18.0),
            num(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<path d="M{l} {t} V{b} H{r}" stroke="black" fill="none"/>"#,
        l = fx(left),
        t = fx(y0),
        b = fx(y0 + h),
        r = fx(f.right())
    );
    if !p.x_label.is_empty() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            fx(left + WIDTH / 2.0),
            fx(y0 + h + 36.0),
            esc(&p.x_label)
        );
    }
    let widest_tick = labelled
        .iter()
        .map(|v| text::width(&num(*v), FONT))
        .fold(0.0, f64::max);
    let _ = writeln!(
        s,
        r#"<text transform="translate({} {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        fx(left - widest_tick - 16.0),
        fx(y0 + h / 2.0),
        esc(&p.y_label)
    );
    let area = Rect {
        x0: left,
        y0,
        x1: f.right(),
        y1: y0 + h,
    };
    rules(s, p, &area, &x, &y);
    strips(s, p, y0, &x);
    for series in p.series.iter().filter(|s| s.context) {
        path(
            s,
            series,
            &x,
            &y,
            &format!(r#"stroke="{CONTEXT}" stroke-width="1.2""#),
        );
    }
    bands(s, p, &x, &y);
    for (k, series) in highlighted(p) {
        let style = Style::nth(k);
        let attrs = format!(
            r#"data-panel="{index}" data-label="{}" data-style="{}" stroke="{}" stroke-width="2"{}"#,
            esc(&series.label),
            style.key(),
            style.hex(),
            style.dash_attr()
        );
        path(s, series, &x, &y, &attrs);
        let every = series.points.len().div_ceil(MAX_MARKS).max(1);
        for &(px, py) in series.points.iter().step_by(every) {
            s.push_str(&style.marker(x(px), y(py)));
        }
    }
    marks(s, p, &area, &x, &y);
}

/// The baseline of strip row `i` of a panel whose plot starts at `y0`: the
/// same as the legend's row `i`, so each row sits beside its name.
fn strip_y(y0: f64, i: usize) -> f64 {
    y0 + 8.0 + LEGEND_ROW * i as f64
}

/// The rows of a strip panel: each a thin grey line over its span, one
/// tick per event in its colour (one `M… v…` each, in one path marked
/// `data-strip` and `data-events`), a cross where it ended early.
fn strips(s: &mut String, p: &Panel, y0: f64, x: &dyn Fn(f64) -> f64) {
    for (i, st) in p.strips.iter().enumerate() {
        let ry = strip_y(y0, i);
        let style = Style::nth(st.style.unwrap_or(i));
        let _ = writeln!(
            s,
            r##"<path d="M{} {y} H{}" stroke="#bbbbbb"/>"##,
            fx(x(st.span.0)),
            fx(x(st.span.1)),
            y = fx(ry)
        );
        if !st.events.is_empty() {
            let mut d = String::new();
            for &e in &st.events {
                let _ = write!(d, "M{} {}v10", fx(x(e)), fx(ry - 5.0));
            }
            let _ = writeln!(
                s,
                r#"<path data-strip="{}" data-events="{}" stroke="{}" stroke-width="1" d="{d}"/>"#,
                esc(&st.label),
                st.events.len(),
                style.hex()
            );
        }
        if let Some(end) = st.end {
            s.push_str(&style::marker_shape(4, x(end), ry, 5.0, END_COLOUR, false));
        }
    }
}

/// Colour of a strip's early end (and of event rules).
const END_COLOUR: &str = "#B22222";

/// The bands of a panel, translucent in their series' colour, behind the
/// highlighted lines.
fn bands(s: &mut String, p: &Panel, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
    for b in p.bands.iter().filter(|b| !b.points.is_empty()) {
        let mut d = String::new();
        for (i, &(px, _, hi)) in b.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{} {}",
                if i == 0 { "M" } else { " L" },
                fx(x(px)),
                fx(y(hi))
            );
        }
        for &(px, lo, _) in b.points.iter().rev() {
            let _ = write!(d, " L{} {}", fx(x(px)), fx(y(lo)));
        }
        let _ = writeln!(
            s,
            r#"<path data-band="{}" d="{d} Z" fill="{}" fill-opacity="0.18" stroke="none"/>"#,
            b.style,
            Style::nth(b.style).hex()
        );
    }
}

/// The highlighted series of a panel, each with its style index.
fn highlighted(p: &Panel) -> impl Iterator<Item = (usize, &Series)> {
    p.series
        .iter()
        .filter(|s| !s.context)
        .enumerate()
        .map(|(k, s)| (s.style.unwrap_or(k), s))
}

/// A series' line with the given stroke attributes.
fn path(
    s: &mut String,
    series: &Series,
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
    attrs: &str,
) {
    let mut d = String::new();
    for (i, &(px, py)) in series.points.iter().enumerate() {
        if i == 0 {
            let _ = write!(d, "M{} {}", fx(x(px)), fx(y(py)));
        } else if series.step {
            let _ = write!(d, " H{} V{}", fx(x(px)), fx(y(py)));
        } else {
            let _ = write!(d, " L{} {}", fx(x(px)), fx(y(py)));
        }
    }
    let _ = writeln!(s, r#"<path {attrs} d="{d}" fill="none"/>"#);
}

/// Limits and events. A limit's label sits above its line, or below it at
/// the panel's top; event labels are stacked down the panel where they
/// would overlap.
fn rules(s: &mut String, p: &Panel, area: &Rect, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
    let mut taken: Vec<Rect> = Vec::new();
    for r in &p.h_rules {
        let yy = y(r.at);
        let mut ly = if yy - 3.0 - 0.8 * FONT < area.y0 {
            yy + 14.0
        } else {
            yy - 3.0
        };
        let mut lx = area.x0 + 4.0;
        let w = text::width(&r.label, FONT);
        while taken
            .iter()
            .any(|t| t.overlaps(&text::text_box(&r.label, lx, ly, FONT, Anchor::Start)))
        {
            lx += 12.0;
            if lx + w > area.x1 {
                lx = area.x0 + 4.0;
                ly += 14.0;
            }
        }
        taken.push(text::text_box(&r.label, lx, ly, FONT, Anchor::Start));
        let _ = writeln!(
            s,
            r##"<path d="M{} {} H{}" stroke="#777" stroke-dasharray="1 3"/><text x="{}" y="{}" fill="#555">{}</text>"##,
            fx(area.x0),
            fx(yy),
            fx(area.x1),
            fx(lx),
            fx(ly),
            esc(&r.label),
        );
    }
    for r in &p.v_rules {
        let xx = x(r.at);
        let w = text::width(&r.label, SMALL_FONT);
        // Right of the line, or left of it near the right edge.
        let lx = if xx + 3.0 + w > area.x1 {
            xx - 3.0 - w
        } else {
            xx + 3.0
        };
        let mut ly = area.y0 + 10.0;
        while taken
            .iter()
            .any(|t| t.overlaps(&text::text_box(&r.label, lx, ly, SMALL_FONT, Anchor::Start)))
            && ly + 11.0 < area.y1
        {
            ly += 11.0;
        }
        taken.push(text::text_box(&r.label, lx, ly, SMALL_FONT, Anchor::Start));
        let _ = writeln!(
            s,
            r##"<path d="M{xx} {} V{}" stroke="#B22222" stroke-dasharray="5 3"/><text x="{}" y="{}" fill="#B22222" font-size="10">{}</text>"##,
            fx(area.y0),
            fx(area.y1),
            fx(lx),
            fx(ly),
            esc(&r.label),
            xx = fx(xx)
        );
    }
}

/// Tagged points: a marker each, and one tag per position (coinciding
/// points share it, "3,7"), placed where no other tag or marker is.
fn marks(s: &mut String, p: &Panel, area: &Rect, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
    let mut spots: Vec<((f64, f64), Vec<&Mark>)> = Vec::new();
    for m in &p.marks {
        let at = (x(m.at.0), y(m.at.1));
        match spots
            .iter_mut()
            .find(|(q, _)| (q.0 - at.0).abs() < 1.0 && (q.1 - at.1).abs() < 1.0)
        {
            Some((_, ms)) => ms.push(m),
            None => spots.push((at, vec![m])),
        }
    }
    let mut taken: Vec<Rect> = spots
        .iter()
        .map(|((cx, cy), _)| Rect {
            x0: cx - 4.0,
            y0: cy - 4.0,
            x1: cx + 4.0,
            y1: cy + 4.0,
        })
        .collect();
    // The tags may use the margin around the plot area, not the axes' labels.
    let room = Rect {
        x0: area.x0 + 2.0,
        y0: area.y0 - 2.0,
        x1: area.x1 + 20.0,
        y1: area.y1 - 2.0,
    };
    for ((cx, cy), ms) in &spots {
        let _ = writeln!(s, "<g{}>", families_attr(ms.iter().copied()));
        let colour = if ms.iter().any(|m| m.filled) {
            "#0072B2"
        } else {
            "#555555"
        };
        s.push_str(&style::marker_shape(
            0,
            *cx,
            *cy,
            3.5,
            colour,
            ms.iter().any(|m| m.filled),
        ));
        let tag: Vec<&str> = ms.iter().map(|m| m.tag.as_str()).collect();
        let tag = tag.join(",");
        let w = text::width(&tag, SMALL_FONT);
        let (tx, ty) = match text::place_near(*cx, *cy, w, SMALL_FONT, &room, &taken) {
            Some((tx, ty, b)) => {
                taken.push(b);
                (tx, ty)
            }
            // Nowhere free: beside the point anyway (the layout check reports it).
            None => (cx + 5.0, cy + 3.5),
        };
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-size="10" fill="{colour}">{}</text>"#,
            fx(tx),
            fx(ty),
            esc(&tag)
        );
        s.push_str("</g>\n");
    }
}

/// The top of each panel, then where the next one would start: a panel's
/// slot is as tall as its plot or its legend, whichever is taller, so a long
/// legend (every policy) never runs past the figure or into the next panel.
fn panel_tops(fig: &Figure) -> Vec<f64> {
    let mut tops = vec![TOP];
    for p in &fig.panels {
        let legend_h = 8.0 + LEGEND_ROW * legend_rows(p) as f64;
        let last = *tops.last().unwrap_or(&TOP);
        tops.push(last + panel_h(p).max(legend_h) + GAP);
    }
    tops
}

/// Legend entries of a panel: highlighted series, one line for the
/// context series, the key of its marks.
fn legend_rows(p: &Panel) -> usize {
    let context = usize::from(p.series.iter().any(|s| s.context));
    p.strips.len() + highlighted(p).count() + context + p.marks.len()
}

/// The legend of one panel, right of its data: each highlighted series'
/// sample line and marker and its label (naming an earlier series it
/// coincides with), a grey sample for the context series, then the key of
/// the marks.
fn legend(s: &mut String, p: &Panel, y0: f64, lx: f64) {
    let texts = legend_texts(p);
    let mut row = 0;
    let mut next = || {
        row += 1;
        strip_y(y0, row - 1)
    };
    for (i, st) in p.strips.iter().enumerate() {
        let ly = next();
        let colour = Style::nth(st.style.unwrap_or(i)).hex();
        let _ = writeln!(
            s,
            r#"<path d="M{} {}v10 M{} {}v10 M{} {}v10" stroke="{colour}" stroke-width="1"/>"#,
            fx(lx + 6.0),
            fx(ly - 5.0),
            fx(lx + 12.0),
            fx(ly - 5.0),
            fx(lx + 18.0),
            fx(ly - 5.0),
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            fx(lx + 34.0),
            fx(ly + 4.0),
            esc(&st.label)
        );
    }
    for ((k, _), text) in highlighted(p).zip(&texts) {
        let style = Style::nth(k);
        let ly = next();
        let _ = writeln!(
            s,
            r#"<path d="M{} {} h28" stroke="{}" stroke-width="2"{}/>"#,
            fx(lx),
            fx(ly),
            style.hex(),
            style.dash_attr()
        );
        s.push_str(&style.marker(lx + 14.0, ly));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            fx(lx + 34.0),
            fx(ly + 4.0),
            esc(text)
        );
    }
    if p.series.iter().any(|s| s.context) {
        let ly = next();
        let _ = writeln!(
            s,
            r#"<path d="M{} {} h28" stroke="{CONTEXT}" stroke-width="1.2"/>"#,
            fx(lx),
            fx(ly)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            fx(lx + 34.0),
            fx(ly + 4.0),
            CONTEXT_LABEL
        );
    }
    for m in &p.marks {
        let ly = next();
        let _ = writeln!(s, "<g{}>", families_attr(std::iter::once(m)));
        let colour = if m.filled { "#0072B2" } else { "#555555" };
        s.push_str(&style::marker_shape(
            0,
            lx + 14.0,
            ly,
            3.5,
            colour,
            m.filled,
        ));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            fx(lx + 34.0),
            fx(ly + 4.0),
            esc(&key_text(m))
        );
        s.push_str("</g>\n");
    }
}

/// Legend text of the context series.
const CONTEXT_LABEL: &str = "every other policy (grey)";

fn key_text(m: &Mark) -> String {
    format!("{}  {}", m.tag, m.name)
}

/// Legend text per highlighted series: its label, plus "(same as …)" when
/// its points equal an earlier series' points, so a hidden line is named,
/// not lost. A series without points hides nothing and is named alone.
pub fn legend_texts(p: &Panel) -> Vec<String> {
    let shown: Vec<&Series> = p.series.iter().filter(|s| !s.context).collect();
    shown
        .iter()
        .enumerate()
        .map(|(k, sr)| {
            match shown[..k]
                .iter()
                .find(|o| !sr.points.is_empty() && o.points == sr.points)
            {
                Some(o) => format!("{} (same as {})", sr.label, o.label),
                None => sr.label.clone(),
            }
        })
        .collect()
}

fn legend_width(fig: &Figure) -> f64 {
    let widest = fig
        .panels
        .iter()
        .flat_map(|p| {
            let mut t = legend_texts(p);
            t.extend(p.marks.iter().map(key_text));
            t.extend(p.strips.iter().map(|st| st.label.clone()));
            if p.series.iter().any(|s| s.context) {
                t.push(CONTEXT_LABEL.to_string());
            }
            t
        })
        .map(|t| text::width(&t, FONT))
        .fold(0.0, f64::max);
    let titles = fig
        .panels
        .iter()
        .map(|p| text::width(&p.title, FONT) * BOLD - WIDTH - 24.0)
        .fold(0.0, f64::max);
    (34.0 + widest + 12.0).max(titles + 12.0)
}

/// Evenly spaced round tick values covering `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticks {
    /// First tick (at or below the data).
    pub lo: f64,
    /// Last tick (at or above the data).
    pub hi: f64,
    /// Distance between ticks: 1, 2 or 5 times a power of ten (linear
    /// axes; unused on a log axis).
    pub step: f64,
    /// A logarithmic axis: ticks at 1, 2 and 5 times each power of ten
    /// from `lo` to `hi`.
    pub log: bool,
}

impl Ticks {
    /// Every tick value, lo to hi.
    pub fn values(&self) -> Vec<f64> {
        if self.log {
            return log_values(self.lo, self.hi);
        }
        let n = ((self.hi - self.lo) / self.step).round() as usize;
        (0..=n).map(|i| self.lo + i as f64 * self.step).collect()
    }

    /// Where `v` falls along the axis, 0 at `lo` to 1 at `hi`; on a log
    /// axis a value at or below `lo` (zero included) sits at 0.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            let (a, b) = (self.lo.log10(), self.hi.log10());
            return (v.max(self.lo).log10() - a) / (b - a);
        }
        (v - self.lo) / (self.hi - self.lo)
    }

    /// The ticks that get a label on an axis `len` pixels long: every one
    /// on a linear axis; on a log axis the powers of ten, with 2 and 5 too
    /// when a decade is tall enough that no two labels touch, and only
    /// every second (third, ...) power when even those would.
    pub fn labelled(&self, len: f64) -> Vec<f64> {
        let values = self.values();
        if !self.log {
            return values;
        }
        let decade = len / (self.hi.log10() - self.lo.log10()).max(f64::MIN_POSITIVE);
        // The closest two of 1, 2, 5, 10 are log10(2) of a decade apart.
        if decade * 2f64.log10() >= LABEL_GAP {
            return values;
        }
        let every = (LABEL_GAP / decade).ceil().max(1.0) as i64;
        values
            .into_iter()
            .filter(|v| {
                let e = v.log10();
                (e - e.round()).abs() < 1e-9 && (e.round() as i64).rem_euclid(every) == 0
            })
            .collect()
    }
}

/// The least distance, in pixels, between the baselines of two y tick
/// labels: the label's height and a little air.
const LABEL_GAP: f64 = FONT + 3.0;

/// `1, 2, 5 × 10^k` from `lo` to `hi` (both such values).
fn log_values(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut e = lo.log10().floor() as i32;
    while out.last().is_none_or(|&v: &f64| v < hi * (1.0 - 1e-9)) && e < 400 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(e);
            if v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9) {
                out.push(v);
            }
        }
        e += 1;
    }
    out
}

/// A log axis for positive data in `[lo, hi]`: from the largest
/// `1, 2, 5 × 10^k` at or below `lo` to the smallest at or above `hi`,
/// spanning at least one step.
pub fn log_ticks(lo: f64, hi: f64) -> Ticks {
    let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
    let hi = if hi > lo && hi.is_finite() { hi } else { lo };
    let steps = |v: f64| {
        let e = v.log10().floor() as i32;
        [1.0, 2.0, 5.0, 10.0].map(|m| m * 10f64.powi(e))
    };
    let below = steps(lo)
        .into_iter()
        .filter(|&s| s <= lo * (1.0 + 1e-9))
        .fold(f64::NAN, f64::max);
    let mut above = steps(hi)
        .into_iter()
        .find(|&s| s >= hi * (1.0 - 1e-9))
        .unwrap_or(hi);
    if above <= below {
        above = steps(below * 1.5)
            .into_iter()
            .find(|&s| s > below * (1.0 + 1e-9))
            .unwrap_or(below * 10.0);
    }
    Ticks {
        lo: below,
        hi: above,
        step: 0.0,
        log: true,
    }
}

/// Round ticks for data in `[lo, hi]`: the 1-2-5 step that gives closest to
/// six intervals, the range widened outward to whole steps.
pub fn ticks(lo: f64, hi: f64) -> Ticks {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
    let base = 10f64.powf(((hi - lo) / 6.0).log10().floor());
    let candidates = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0];
    let best = candidates
        .iter()
        .map(|m| {
            let step = m * base;
            let (a, b) = ((lo / step).floor(), (hi / step).ceil());
            (((b - a) - 6.0).abs(), step, a * step, b * step)
        })
        .min_by(|x, y| x.0.total_cmp(&y.0).then(y.1.total_cmp(&x.1)))
        .unwrap_or((0.0, 1.0, lo, hi));
    Ticks {
        lo: best.2,
        hi: best.3,
        step: best.1,
        log: false,
    }
}

/// Counts have no fractions: when every y value is whole, ticks are at
/// least one apart (a 0/1 counter gets ticks 0 and 1, not 0, 0.2, ...).
fn whole_ticks_for_counts(t: Ticks, p: &Panel) -> Ticks {
    let whole = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.1))
        .chain(p.h_rules.iter().map(|r| r.at))
        .chain(p.marks.iter().map(|m| m.at.1))
        .all(|v| v.fract() == 0.0);
    if whole && t.step < 1.0 {
        Ticks {
            lo: t.lo.floor(),
            hi: t.hi.ceil(),
            step: 1.0,
            log: false,
        }
    } else {
        t
    }
}

/// The x range of `panels`: every point, event and mark.
fn x_range<'a>(panels: impl Iterator<Item = &'a Panel>) -> (f64, f64) {
    let xs = panels.flat_map(|p| {
        p.series
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.0))
            .chain(p.v_rules.iter().map(|r| r.at))
            .chain(p.marks.iter().map(|m| m.at.0))
            .chain(p.strips.iter().flat_map(|st| {
                [st.span.0, st.span.1]
                    .into_iter()
                    .chain(st.events.iter().copied())
                    .chain(st.end)
            }))
            .chain(p.bands.iter().flat_map(|b| b.points.iter().map(|q| q.0)))
    });
    min_max(xs)
}

/// Every y value of a panel: points, limits, marks and bands.
fn y_values(p: &Panel) -> impl Iterator<Item = f64> + '_ {
    p.series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.1))
        .chain(p.h_rules.iter().map(|r| r.at))
        .chain(p.marks.iter().map(|m| m.at.1))
        .chain(
            p.bands
                .iter()
                .flat_map(|b| b.points.iter().flat_map(|q| [q.1, q.2])),
        )
}

/// The y range of a panel: every point and every limit, and zero, so bars of
/// counts and sizes are read from a true origin.
fn y_range(p: &Panel) -> (f64, f64) {
    min_max(y_values(p).chain(std::iter::once(0.0)))
}

/// The y range of a log panel: its positive values (zero has no place on
/// a log axis; such points sit on the axis).
fn y_range_positive(p: &Panel) -> (f64, f64) {
    min_max(y_values(p).filter(|v| *v > 0.0))
}

fn min_max(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    vals.filter(|v| v.is_finite())
        .fold(None, |acc: Option<(f64, f64)>, v| match acc {
            None => Some((v, v)),
            Some((a, b)) => Some((a.min(v), b.max(v))),
        })
        .unwrap_or((0.0, 1.0))
}

/// Fixed-point with one decimal, never `-0.0`, so the bytes are stable.
fn fx(v: f64) -> String {
    let tenths = (v * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    format!("{sign}{}.{}", tenths.abs() / 10, tenths.abs() % 10)
}

/// A tick label: whole numbers without decimals, thousands as `k` / `M`.
fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 && (v / 1e6).fract() == 0.0 {
        format!("{}M", v / 1e6)
    } else if a >= 1e3 && (v / 1e3).fract() == 0.0 {
        format!("{}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{}", (v * 1e6).round() / 1e6)
    }
}

/// Text for SVG: XML specials escaped, control characters dropped (they
/// are not allowed in XML 1.0 at all).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_data() {
        let t = ticks(0.0, 106.0);
        assert_eq!((t.lo, t.hi, t.step), (0.0, 120.0, 20.0));
        assert_eq!(t.values(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0, 120.0]);
        let t = ticks(60.0, 200.0);
        assert_eq!((t.lo, t.hi, t.step), (60.0, 200.0, 20.0));
        let t = ticks(0.0, 0.0);
        assert!(t.hi > t.lo);
        assert_eq!(ticks(0.0, 7_340.0).step, 2_000.0);
    }

    /// The mantissa of a positive tick value: 1, 2 or 5 on a log axis.
    fn mantissa(v: f64) -> f64 {
        (v / 10f64.powf(v.log10().floor())).round()
    }

    #[test]
    fn log_ticks_fall_on_one_two_five_and_cover_the_data() {
        let t = log_ticks(3_000.0, 180_000.0);
        assert_eq!((t.lo, t.hi), (2_000.0, 200_000.0));
        assert_eq!(
            t.values(),
            vec![2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5],
            "1-2-5 in every decade"
        );
        for (lo, hi) in [
            (0.3, 7.0),
            (1.0, 1.0),
            (12.0, 9.9e6),
            (5e4, 5e4),
            (0.0, 40.0),
        ] {
            let t = log_ticks(lo, hi);
            assert!(t.lo > 0.0 && t.hi > t.lo, "{lo}..{hi}: {t:?}");
            assert!(lo <= 0.0 || t.lo <= lo, "{lo}..{hi}: {t:?}");
            assert!(t.hi >= hi, "{lo}..{hi}: {t:?}");
            for v in t.values() {
                assert!([1.0, 2.0, 5.0].contains(&mantissa(v)), "{v} in {t:?}");
            }
            assert_eq!((t.frac(t.lo), t.frac(t.hi)), (0.0, 1.0));
        }
        // Equal ratios take equal lengths; zero sits on the axis.
        let t = log_ticks(10.0, 10_000.0);
        assert!((t.frac(100.0) - t.frac(10.0) - (t.frac(1_000.0) - t.frac(100.0))).abs() < 1e-12);
        assert_eq!(t.frac(0.0), 0.0);
    }

    #[test]
    fn log_tick_labels_keep_apart_at_any_height() {
        for (hi, len) in [(2e5, 200.0), (1e7, 200.0), (1e12, 120.0), (1e3, 60.0)] {
            let t = log_ticks(1.0, hi);
            let shown = t.labelled(len);
            assert!(
                shown.contains(&1.0),
                "the first decade is labelled: {shown:?}"
            );
            let ys: Vec<f64> = shown.iter().map(|&v| t.frac(v) * len).collect();
            for w in ys.windows(2) {
                assert!(
                    w[1] - w[0] >= LABEL_GAP - 1e-9,
                    "hi {hi}, len {len}: {shown:?}"
                );
            }
        }
        // A short range labels its 2s and 5s; a long one only its decades.
        assert!(log_ticks(1e3, 2e5).labelled(200.0).contains(&5e4));
        assert!(!log_ticks(1.0, 1e7).labelled(200.0).contains(&5e4));
    }

    /// The numbers of an SVG path's `d`, as (x, y) pairs.
    fn path_points(d: &str) -> Vec<(f64, f64)> {
        let nums: Vec<f64> = d
            .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
            .filter_map(|n| n.parse().ok())
            .collect();
        nums.chunks(2).map(|c| (c[0], c[1])).collect()
    }

    #[test]
    fn a_log_panel_keeps_every_series_inside_its_plot_area() {
        let line = |label: &str, ys: &[f64]| Series {
            label: label.into(),
            points: ys.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect(),
            ..Series::default()
        };
        let p = Panel {
            title: "request size".into(),
            y_label: "request (tokens)".into(),
            series: vec![
                line("uncompacted", &[2_000.0, 40_000.0, 900_000.0, 2_400_000.0]),
                line("compacting", &[2_000.0, 8_000.0, 3_000.0, 9_000.0]),
                line("empty at first", &[0.0, 150.0, 300.0, 600.0]),
            ],
            h_rules: vec![Rule {
                label: "window".into(),
                at: 200_000.0,
            }],
            log_y: true,
            ..Panel::default()
        };
        let out = svg(&Figure {
            title: "log".into(),
            x_label: "call".into(),
            panels: vec![p],
            caption: "test".into(),
        });
        let frame = out
            .lines()
            .find(|l| l.contains(r#"stroke="black" fill="none""#))
            .unwrap();
        let corners = path_points(
            frame
                .split("d=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap(),
        );
        let (left, top) = corners[0];
        let bottom = path_points(&frame[frame.find(" V").unwrap()..])[0].0;
        let right = frame
            .split(" H")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap();
        let mut drawn = 0;
        for l in out.lines().filter(|l| l.contains("data-style=")) {
            let d = l.split(" d=\"").nth(1).unwrap().split('"').next().unwrap();
            for (x, y) in path_points(d) {
                assert!(
                    (left..=right).contains(&x) && (top..=bottom).contains(&y),
                    "({x}, {y}) outside {left}..{right} x {top}..{bottom}: {l}"
                );
                drawn += 1;
            }
        }
        assert_eq!(drawn, 12, "every point of the three series");
        let problems = lint::check(&out);
        assert!(problems.is_empty(), "{problems:#?}");
        assert!(
            out.contains(">1M<") && out.contains(">100<"),
            "decades labelled"
        );
        assert!(out.contains("the y axis is logarithmic"));
    }

    #[test]
    fn a_strip_draws_one_tick_per_event_beside_its_name() {
        let p = Panel {
            title: "stalls".into(),
            y_label: "policy".into(),
            strips: vec![
                Strip {
                    label: "a: 3 stalls".into(),
                    span: (0.0, 100.0),
                    events: vec![10.0, 10.0, 50.0],
                    ..Strip::default()
                },
                Strip {
                    label: "b: stalled for good".into(),
                    span: (0.0, 60.0),
                    end: Some(60.0),
                    ..Strip::default()
                },
            ],
            own_x: true,
            x_label: "tokens".into(),
            ..Panel::default()
        };
        let out = svg(&Figure {
            panels: vec![p],
            x_label: "unused".into(),
            ..Figure::default()
        });
        let ticks: usize = out
            .lines()
            .filter(|l| l.contains("data-strip="))
            .map(|l| l.split(" d=\"").nth(1).unwrap().matches('M').count())
            .sum();
        assert_eq!(ticks, 3, "coinciding events are still one tick each");
        assert!(out.contains(">tokens<") && !out.contains(">unused<"));
        assert!(out.contains("a: 3 stalls (3 marked)") && out.contains("ended early at 60"));
        assert!(lint::check(&out).is_empty());
    }

    #[test]
    fn one_call_gives_a_captioned_chart() {
        let s = Series {
            label: "size".into(),
            points: vec![(1.0, 10.0), (2.0, 30.0)],
            step: false,
            ..Series::default()
        };
        let out = line_chart(
            "t",
            "call (index)",
            "size (chars)",
            vec![s],
            "lab x · profile p · tokenizer approx",
        );
        assert!(out.contains(">size (chars)<") && out.contains(">call (index)<"));
        assert!(out.contains("lab x · profile p · tokenizer approx"));
        assert_eq!(
            out.matches("<circle").count(),
            3,
            "two points and the legend sample"
        );
    }

    #[test]
    fn counts_get_whole_ticks() {
        let flag = Series {
            label: "f".into(),
            points: vec![(0.0, 0.0), (1.0, 1.0)],
            step: true,
            ..Series::default()
        };
        let p = Panel {
            series: vec![flag],
            ..Panel::default()
        };
        let t = whole_ticks_for_counts(ticks(0.0, 1.0), &p);
        assert_eq!(t.values(), vec![0.0, 1.0]);
        let half = Series {
            label: "h".into(),
            points: vec![(0.0, 0.5)],
            step: false,
            ..Series::default()
        };
        let p = Panel {
            series: vec![half],
            ..Panel::default()
        };
        assert_eq!(whole_ticks_for_counts(ticks(0.0, 1.0), &p).step, 0.2);
    }

    #[test]
    fn fixed_point_is_stable() {
        assert_eq!(fx(0.0), "0.0");
        assert_eq!(fx(-0.04), "0.0");
        assert_eq!(fx(12.25), "12.3");
        assert_eq!(fx(-1.5), "-1.5");
    }

    #[test]
    fn tick_labels_are_short_and_whole() {
        assert_eq!(num(120_000.0), "120k");
        assert_eq!(num(2_000_000.0), "2M");
        assert_eq!(num(15.0), "15");
        assert_eq!(num(0.5), "0.5");
    }

    #[test]
    fn coinciding_series_are_named_in_the_legend() {
        let a = Series {
            label: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
            step: false,
            ..Series::default()
        };
        let b = Series {
            label: "b".into(),
            ..a.clone()
        };
        let c = Series {
            label: "c".into(),
            points: vec![(0.0, 0.0)],
            step: false,
            ..Series::default()
        };
        let empty = |label: &str| Series {
            label: label.into(),
            points: Vec::new(),
            ..Series::default()
        };
        let p = Panel {
            series: vec![a, b, c, empty("d"), empty("e")],
            ..Panel::default()
        };
        assert_eq!(
            legend_texts(&p),
            vec!["a", "b (same as a)", "c", "d", "e"],
            "two series without points draw nothing to hide"
        );
    }

    #[test]
    fn nothing_is_clipped_and_text_is_escaped() {
        let p = Panel {
            series: vec![Series {
                label: "<x>\u{0}".into(),
                points: vec![(0.0, 5.0), (10.0, 900.0)],
                step: true,
                ..Series::default()
            }],
            h_rules: vec![Rule {
                label: "limit".into(),
                at: 1_000.0,
            }],
            ..Panel::default()
        };
        let fig = Figure {
            panels: vec![p],
            caption: "lab x & y".into(),
            ..Figure::default()
        };
        let out = svg(&fig);
        assert!(!out.contains("clip"));
        assert!(out.contains("&lt;x&gt;<") && !out.contains('\u{0}'));
        assert!(out.contains("lab x &amp; y"));
        assert_eq!(out, svg(&fig));
    }

    /// The largest y of any `<text>` in an SVG.
    fn lowest_text(out: &str) -> f64 {
        out.lines()
            .filter_map(|l| l.strip_prefix("<text ")?.split("y=\"").nth(1))
            .filter_map(|r| r.split('"').next()?.parse::<f64>().ok())
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_long_legend_stays_inside_the_figure_and_its_panel() {
        let series = |n: usize| -> Vec<Series> {
            (0..n)
                .map(|k| Series {
                    label: format!("policy {k}"),
                    points: vec![(0.0, k as f64), (1.0, 2.0 * k as f64)],
                    step: false,
                    ..Series::default()
                })
                .collect()
        };
        let fig = |panels: Vec<Panel>| Figure {
            panels,
            ..Figure::default()
        };
        let one = fig(vec![Panel {
            series: series(26),
            ..Panel::default()
        }]);
        let out = svg(&one);
        let height: f64 = out
            .split("height=\"")
            .nth(1)
            .and_then(|r| r.split('"').next()?.parse().ok())
            .unwrap();
        assert!(
            lowest_text(&out) < height,
            "legend past the figure's bottom"
        );
        // Two long panels: the second starts below the first one's legend.
        let two = fig(vec![
            Panel {
                title: "first".into(),
                series: series(26),
                ..Panel::default()
            },
            Panel {
                title: "second".into(),
                series: series(2),
                ..Panel::default()
            },
        ]);
        let out = svg(&two);
        let y_of = |needle: &str| -> f64 {
            let line = out.lines().find(|l| l.contains(needle)).unwrap();
            line.split("y=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(y_of(">second<") > y_of(">policy 25<"));
        // A short legend keeps the fixed panel height.
        let short = svg(&fig(vec![Panel {
            series: series(3),
            ..Panel::default()
        }]));
        assert!(short.contains(&format!("height=\"{}\"", fx(TOP + PANEL_H + 70.0))));
    }
}
