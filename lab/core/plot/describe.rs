//! The text a screen reader gives for a figure: its `<title>` and a
//! `<desc>` that says what the figure shows and what it found, computed
//! from the series and marks themselves (which series ends highest and
//! lowest in each panel, which marks are filled), so the description
//! changes when the data does.

use super::{num, Figure, Panel};

/// The description of `fig`: what each panel plots against what, and its
/// main finding.
pub fn describe(fig: &Figure) -> String {
    let mut parts = vec![format!(
        "{}: {} panel{} against {}.",
        fig.title,
        fig.panels.len(),
        if fig.panels.len() == 1 { "" } else { "s" },
        fig.x_label
    )];
    for p in &fig.panels {
        parts.push(panel_finding(p));
    }
    if !fig.caption.is_empty() {
        parts.push(format!("Made by {}.", fig.caption));
    }
    parts.join(" ")
}

/// One panel: how many series, which ends highest and which lowest, and the
/// marks drawn filled.
fn panel_finding(p: &Panel) -> String {
    let name = match p.title.is_empty() {
        true => p.y_label.clone(),
        false => format!("{} ({})", p.title, p.y_label),
    };
    let ends: Vec<(&str, f64)> = p
        .series
        .iter()
        .filter(|s| !s.context)
        .filter_map(|s| s.points.last().map(|&(_, y)| (s.label.as_str(), y)))
        .collect();
    let mut s = format!("{name}: {} series", ends.len());
    let high = ends
        .iter()
        .copied()
        .reduce(|a, b| if b.1 > a.1 { b } else { a });
    let low = ends
        .iter()
        .copied()
        .reduce(|a, b| if b.1 < a.1 { b } else { a });
    match (high, low) {
        (Some(h), Some(l)) if ends.len() > 1 && h.1 != l.1 => s.push_str(&format!(
            "; at its last point the highest is {} ({}), the lowest {} ({})",
            h.0,
            value(h.1),
            l.0,
            value(l.1)
        )),
        (Some(h), _) if ends.len() > 1 => {
            s.push_str(&format!("; every series ends at {}", value(h.1)))
        }
        (Some(h), _) => s.push_str(&format!("; {} ends at {}", h.0, value(h.1))),
        _ => {}
    }
    if !p.marks.is_empty() {
        let filled: Vec<&str> = p
            .marks
            .iter()
            .filter(|m| m.filled)
            .map(|m| m.name.as_str())
            .collect();
        s.push_str(&format!("; {} marked points", p.marks.len()));
        if !filled.is_empty() {
            s.push_str(&format!(", filled: {}", filled.join(", ")));
        }
    }
    if !p.strips.is_empty() {
        let rows: Vec<String> = p
            .strips
            .iter()
            .map(|st| {
                let end = st
                    .end
                    .map_or(String::new(), |e| format!(", ended early at {}", value(e)));
                format!("{} ({} marked{end})", st.label, st.events.len())
            })
            .collect();
        s.push_str(&format!(
            "; {} rows of marks: {}",
            p.strips.len(),
            rows.join(", ")
        ));
    }
    if !p.bands.is_empty() {
        s.push_str(&format!("; {} shaded bands of spread", p.bands.len()));
    }
    if p.log_y {
        s.push_str("; the y axis is logarithmic");
    }
    for r in &p.h_rules {
        s.push_str(&format!("; a line at {} ({})", value(r.at), r.label));
    }
    if !p.v_rules.is_empty() {
        s.push_str(&format!("; {} event lines", p.v_rules.len()));
    }
    s.push('.');
    s
}

/// A value as a reader hears it: whole numbers whole, others to four
/// significant digits.
fn value(v: f64) -> String {
    if v.fract() == 0.0 {
        num(v)
    } else {
        format!("{}", (v * 1e4).round() / 1e4)
    }
}

/// A stable id for the figure's title and description, unique among the
/// figures of one page: FNV-1a of the drawn SVG body, so two figures differ
/// in id whenever they differ in anything drawn.
pub fn id(body: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in body.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fig-{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{Mark, Series};

    fn fig(last: f64) -> Figure {
        Figure {
            title: "t".into(),
            x_label: "call".into(),
            panels: vec![Panel {
                title: "size".into(),
                y_label: "tokens".into(),
                series: vec![
                    Series {
                        label: "a".into(),
                        points: vec![(1.0, 5.0), (2.0, last)],
                        ..Series::default()
                    },
                    Series {
                        label: "b".into(),
                        points: vec![(1.0, 5.0), (2.0, 10.0)],
                        ..Series::default()
                    },
                ],
                marks: vec![Mark {
                    tag: "1".into(),
                    name: "a".into(),
                    at: (1.0, 1.0),
                    filled: true,
                    group: String::new(),
                }],
                ..Panel::default()
            }],
            caption: "lab x".into(),
        }
    }

    #[test]
    fn the_description_follows_the_data() {
        let d = describe(&fig(20.0));
        assert!(d.contains("highest is a (20), the lowest b (10)"), "{d}");
        assert!(
            d.contains("filled: a") && d.contains("Made by lab x"),
            "{d}"
        );
        let d = describe(&fig(3.0));
        assert!(d.contains("highest is b (10), the lowest a (3)"), "{d}");
        let d = describe(&fig(10.0));
        assert!(d.contains("every series ends at 10"), "{d}");
        assert_ne!(id("a"), id("b"));
    }
}
