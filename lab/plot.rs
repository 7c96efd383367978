//! The lab's one plotting module: series in, an SVG string out.
//!
//! A [`Figure`] is one or more [`Panel`]s stacked vertically that share an x
//! axis label, a legend to the right of the data, and a caption line saying
//! where the figure came from (command, profile, tokenizer). Every series is
//! drawn at its true values: series that coincide are told apart by dash
//! pattern and marker shape, and the legend names the series each one
//! coincides with, instead of nudging lines off their values. Axes span every
//! value of every series and rule, so nothing is clipped, and ticks fall on
//! 1, 2 or 5 times a power of ten.
//!
//! Hand-written rather than drawn through a plotting crate: the figures need
//! a handful of primitives, the output must be byte-for-byte repeatable for
//! snapshots, and the crates' SVG backends either measure text through the
//! system's fonts (fontconfig) or need a font file bundled to lay out labels;
//! SVG `<text>` leaves the glyphs to the viewer.

use std::fmt::Write as _;

/// One line of data.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points in data units, in x order.
    pub points: Vec<(f64, f64)>,
    /// Draw as a step function (value holds until the next x), for counts
    /// measured at discrete settings; otherwise straight segments.
    pub step: bool,
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
}

/// A whole figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Figure {
    /// Title line.
    pub title: String,
    /// X axis label, with its unit.
    pub x_label: String,
    /// Panels, top to bottom; they share the x range.
    pub panels: Vec<Panel>,
    /// Provenance caption: the command, profile and tokenizer that made it.
    pub caption: String,
}

const COLOURS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];
const DASHES: [&str; 4] = ["", "6 3", "2 2", "8 3 2 3"];
const MARKERS: usize = 4;
const WIDTH: f64 = 640.0;
const LEFT: f64 = 70.0;
const PANEL_H: f64 = 200.0;
const GAP: f64 = 70.0;
const TOP: f64 = 50.0;
/// Width of one character at the legend's font size, generously, so a
/// label never runs past the edge in a proportional sans-serif font.
const CHAR_W: f64 = 7.0;
/// At most this many markers per series, so dense series stay readable.
const MAX_MARKS: usize = 24;

/// The SVG text of a figure. Pure: the same figure gives the same bytes.
pub fn svg(fig: &Figure) -> String {
    let (xmin, xmax) = x_range(fig);
    let xt = ticks(xmin, xmax);
    let legend_w = legend_width(fig);
    let total_w = LEFT + WIDTH + 24.0 + legend_w;
    let tops = panel_tops(fig);
    // The x axis of the last panel, and the bottom of its slot (its legend may reach lower).
    let axis = tops[tops.len().saturating_sub(2)] + PANEL_H;
    let bottom = axis.max(tops[tops.len() - 1] - GAP);
    let total_h = bottom + 70.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#,
        w = fx(total_w),
        h = fx(total_h)
    );
    let _ = writeln!(
        s,
        r#"<rect width="{}" height="{}" fill="white"/>"#,
        fx(total_w),
        fx(total_h)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" font-size="15">{}</text>"#,
        fx(LEFT),
        esc(&fig.title)
    );
    for (p, &y0) in fig.panels.iter().zip(&tops) {
        panel(&mut s, p, y0, &xt);
        legend(&mut s, p, y0, LEFT + WIDTH + 24.0);
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        fx(LEFT + WIDTH / 2.0),
        fx(axis + 36.0),
        esc(&fig.x_label)
    );
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="10" fill="#555">{}</text>"##,
        fx(LEFT),
        fx(bottom + 60.0),
        esc(&fig.caption)
    );
    s.push_str("</svg>\n");
    s
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

/// One panel: frame, grid, ticks, rules, series.
fn panel(s: &mut String, p: &Panel, y0: f64, xt: &Ticks) {
    let (lo, hi) = y_range(p);
    let yt = whole_ticks_for_counts(ticks(lo, hi), p);
    let x = |v: f64| LEFT + (v - xt.lo) / (xt.hi - xt.lo) * WIDTH;
    let y = |v: f64| y0 + PANEL_H - (v - yt.lo) / (yt.hi - yt.lo) * PANEL_H;
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" font-weight="bold">{}</text>"#,
        fx(LEFT),
        fx(y0 - 10.0),
        esc(&p.title)
    );
    for v in yt.values() {
        let _ = writeln!(
            s,
            r##"<path d="M{} {y} H{}" stroke="#e0e0e0"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            fx(LEFT),
            fx(LEFT + WIDTH),
            fx(LEFT - 6.0),
            fx(y(v) + 4.0),
            num(v),
            y = fx(y(v))
        );
    }
    for v in xt.values() {
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            fx(x(v)),
            fx(y0 + PANEL_H + 16.0),
            num(v)
        );
    }
    let _ = writeln!(
        s,
        r#"<path d="M{l} {t} V{b} H{r}" stroke="black" fill="none"/>"#,
        l = fx(LEFT),
        t = fx(y0),
        b = fx(y0 + PANEL_H),
        r = fx(LEFT + WIDTH)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate({} {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        fx(LEFT - 48.0),
        fx(y0 + PANEL_H / 2.0),
        esc(&p.y_label)
    );
    rules(s, p, y0, &x, &y);
    for (k, series) in p.series.iter().enumerate() {
        line(s, series, k, &x, &y);
    }
}

fn rules(s: &mut String, p: &Panel, y0: f64, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
    for r in &p.h_rules {
        let _ = writeln!(
            s,
            r##"<path d="M{} {yy} H{}" stroke="#777" stroke-dasharray="1 3"/><text x="{}" y="{}" fill="#555">{}</text>"##,
            fx(LEFT),
            fx(LEFT + WIDTH),
            fx(LEFT + 4.0),
            fx(y(r.at) - 3.0),
            esc(&r.label),
            yy = fx(y(r.at))
        );
    }
    for r in &p.v_rules {
        let _ = writeln!(
            s,
            r##"<path d="M{xx} {} V{}" stroke="#B22222" stroke-dasharray="5 3"/><text x="{}" y="{}" fill="#B22222" font-size="10">{}</text>"##,
            fx(y0),
            fx(y0 + PANEL_H),
            fx(x(r.at) + 3.0),
            fx(y0 + 10.0),
            esc(&r.label),
            xx = fx(x(r.at))
        );
    }
}

/// A series' line in its colour and dash, with a marker at (up to
/// `MAX_MARKS` evenly chosen) points.
fn line(s: &mut String, series: &Series, k: usize, x: &dyn Fn(f64) -> f64, y: &dyn Fn(f64) -> f64) {
    let colour = COLOURS[k % COLOURS.len()];
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
    let _ = writeln!(
        s,
        r#"<path d="{d}" stroke="{colour}" stroke-width="2" fill="none"{}/>"#,
        dash_attr(k)
    );
    let every = series.points.len().div_ceil(MAX_MARKS).max(1);
    for &(px, py) in series.points.iter().step_by(every) {
        s.push_str(&marker(k, x(px), y(py), colour));
    }
}

fn dash_attr(k: usize) -> String {
    match DASHES[k % DASHES.len()] {
        "" => String::new(),
        d => format!(r#" stroke-dasharray="{d}""#),
    }
}

/// Marker shape `k`: circle, square, triangle, diamond; open shapes so a
/// marker of another series at the same point stays visible through it.
fn marker(k: usize, cx: f64, cy: f64, colour: &str) -> String {
    // Past the fourth series the shapes repeat, larger.
    let r = 3.5 + (k / MARKERS % 2) as f64 * 1.5;
    let style = format!(r#"fill="none" stroke="{colour}" stroke-width="1.5""#);
    match k % MARKERS {
        0 => format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {style}/>\n",
            fx(cx),
            fx(cy),
            fx(r)
        ),
        1 => format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{w}\" height=\"{w}\" {style}/>\n",
            fx(cx - r),
            fx(cy - r),
            w = fx(2.0 * r)
        ),
        2 => format!(
            "<path d=\"M{} {} L{} {} L{} {} Z\" {style}/>\n",
            fx(cx),
            fx(cy - r - 1.0),
            fx(cx + r + 1.0),
            fx(cy + r),
            fx(cx - r - 1.0),
            fx(cy + r)
        ),
        _ => format!(
            "<path d=\"M{} {} L{} {} L{} {} L{} {} Z\" {style}/>\n",
            fx(cx),
            fx(cy - r - 1.0),
            fx(cx + r + 1.0),
            fx(cy),
            fx(cx),
            fx(cy + r + 1.0),
            fx(cx - r - 1.0),
            fx(cy)
        ),
    }
}

/// The legend of one panel, right of its data: each series' sample line and
/// marker, its label, and which earlier series it coincides with.
/// The top of each panel, then where the next one would start: a panel's
/// slot is as tall as its plot or its legend, whichever is taller, so a long
/// legend (every policy) never runs past the figure or into the next panel.
fn panel_tops(fig: &Figure) -> Vec<f64> {
    let mut tops = vec![TOP];
    for p in &fig.panels {
        let legend_h = 8.0 + LEGEND_ROW * p.series.len() as f64;
        let last = *tops.last().unwrap_or(&TOP);
        tops.push(last + PANEL_H.max(legend_h) + GAP);
    }
    tops
}

/// Height of one legend entry.
const LEGEND_ROW: f64 = 18.0;

fn legend(s: &mut String, p: &Panel, y0: f64, lx: f64) {
    for (k, text) in legend_texts(p).iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let ly = y0 + 8.0 + LEGEND_ROW * k as f64;
        let _ = writeln!(
            s,
            r#"<path d="M{} {} h28" stroke="{colour}" stroke-width="2"{}/>"#,
            fx(lx),
            fx(ly),
            dash_attr(k)
        );
        s.push_str(&marker(k, lx + 14.0, ly, colour));
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            fx(lx + 34.0),
            fx(ly + 4.0),
            esc(text)
        );
    }
}

/// Legend text per series: its label, plus "(same as …)" when its points
/// equal an earlier series' points, so a hidden line is named, not lost.
pub fn legend_texts(p: &Panel) -> Vec<String> {
    p.series
        .iter()
        .enumerate()
        .map(
            |(k, sr)| match p.series[..k].iter().find(|o| o.points == sr.points) {
                Some(o) => format!("{} (same as {})", sr.label, o.label),
                None => sr.label.clone(),
            },
        )
        .collect()
}

fn legend_width(fig: &Figure) -> f64 {
    let longest = fig
        .panels
        .iter()
        .flat_map(legend_texts)
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0);
    34.0 + longest as f64 * CHAR_W + 12.0
}

/// Evenly spaced round tick values covering `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ticks {
    /// First tick (at or below the data).
    pub lo: f64,
    /// Last tick (at or above the data).
    pub hi: f64,
    /// Distance between ticks: 1, 2 or 5 times a power of ten.
    pub step: f64,
}

impl Ticks {
    /// Every tick value, lo to hi.
    pub fn values(&self) -> Vec<f64> {
        let n = ((self.hi - self.lo) / self.step).round() as usize;
        (0..=n).map(|i| self.lo + i as f64 * self.step).collect()
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
        .all(|v| v.fract() == 0.0);
    if whole && t.step < 1.0 {
        Ticks {
            lo: t.lo.floor(),
            hi: t.hi.ceil(),
            step: 1.0,
        }
    } else {
        t
    }
}

fn x_range(fig: &Figure) -> (f64, f64) {
    let xs = fig.panels.iter().flat_map(|p| {
        p.series
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.0))
            .chain(p.v_rules.iter().map(|r| r.at))
    });
    min_max(xs)
}

/// The y range of a panel: every point and every limit, and zero, so bars of
/// counts and sizes are read from a true origin.
fn y_range(p: &Panel) -> (f64, f64) {
    let ys = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.1))
        .chain(p.h_rules.iter().map(|r| r.at))
        .chain(std::iter::once(0.0));
    min_max(ys)
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

    #[test]
    fn one_call_gives_a_captioned_chart() {
        let s = Series {
            label: "size".into(),
            points: vec![(1.0, 10.0), (2.0, 30.0)],
            step: false,
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
        };
        let b = Series {
            label: "b".into(),
            ..a.clone()
        };
        let c = Series {
            label: "c".into(),
            points: vec![(0.0, 0.0)],
            step: false,
        };
        let p = Panel {
            series: vec![a, b, c],
            ..Panel::default()
        };
        assert_eq!(legend_texts(&p), vec!["a", "b (same as a)", "c"]);
    }

    #[test]
    fn nothing_is_clipped_and_text_is_escaped() {
        let p = Panel {
            series: vec![Series {
                label: "<x>\u{0}".into(),
                points: vec![(0.0, 5.0), (10.0, 900.0)],
                step: true,
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
