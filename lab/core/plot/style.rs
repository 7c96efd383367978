//! How a series looks: a colour from a colour-blind-safe palette, a marker
//! shape and a dash pattern. Style `k` differs from every other style below
//! [`DISTINCT`] in colour or marker, so a panel of up to that many
//! highlighted series never draws two alike (the layout check verifies it
//! on every plot).

use std::fmt::Write as _;

use super::fx;

/// Okabe and Ito's palette without its yellow (too faint on white): told
/// apart under the common colour-vision deficiencies.
pub const COLOURS: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];
/// Marker shapes, by name (the name is what the layout check compares).
pub const MARKERS: [&str; 5] = ["circle", "square", "triangle", "diamond", "cross"];
/// Dash patterns (`""` is solid).
pub const DASHES: [&str; 4] = ["", "6 3", "2 2", "8 3 2 3"];
/// Styles below this index differ pairwise in colour or marker.
pub const DISTINCT: usize = COLOURS.len() * MARKERS.len();
/// Colour of context series (drawn behind the highlighted ones, unlabelled).
pub const CONTEXT: &str = "#c8c8c8";

/// One series' look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Index into [`COLOURS`].
    pub colour: usize,
    /// Index into [`MARKERS`].
    pub marker: usize,
    /// Index into [`DASHES`].
    pub dash: usize,
}

impl Style {
    /// Style `k`. The colour cycles every 7; the marker shifts by one more
    /// each cycle (so two styles with one colour, 7·j apart, differ in
    /// marker by 8·j mod 5, never 0 for j < 5); the dash changes per cycle.
    pub fn nth(k: usize) -> Style {
        let cycle = k / COLOURS.len();
        Style {
            colour: k % COLOURS.len(),
            marker: (k + cycle) % MARKERS.len(),
            dash: (cycle + k / DISTINCT) % DASHES.len(),
        }
    }

    /// The colour's hex code.
    pub fn hex(self) -> &'static str {
        COLOURS[self.colour]
    }

    /// A stable name of the style, written into the SVG as `data-style` for
    /// the layout check.
    pub fn key(self) -> String {
        format!(
            "{}|{}|{}",
            self.hex(),
            MARKERS[self.marker],
            DASHES[self.dash]
        )
    }

    /// ` stroke-dasharray="…"`, or nothing when solid.
    pub fn dash_attr(self) -> String {
        match DASHES[self.dash] {
            "" => String::new(),
            d => format!(r#" stroke-dasharray="{d}""#),
        }
    }

    /// The marker at `(cx, cy)`: open shapes, so a marker of another series
    /// at the same point stays visible through it.
    pub fn marker(self, cx: f64, cy: f64) -> String {
        marker_shape(self.marker, cx, cy, 4.0, self.hex(), false)
    }
}

/// Marker `shape` of radius `r` at `(cx, cy)`, open or filled.
pub fn marker_shape(shape: usize, cx: f64, cy: f64, r: f64, colour: &str, filled: bool) -> String {
    let fill = if filled { colour } else { "none" };
    let style = format!(r#"fill="{fill}" stroke="{colour}" stroke-width="1.5""#);
    let mut s = String::new();
    let _ = match shape % MARKERS.len() {
        0 => writeln!(
            s,
            r#"<circle cx="{}" cy="{}" r="{}" {style}/>"#,
            fx(cx),
            fx(cy),
            fx(r)
        ),
        1 => writeln!(
            s,
            r#"<rect x="{}" y="{}" width="{w}" height="{w}" {style}/>"#,
            fx(cx - r),
            fx(cy - r),
            w = fx(2.0 * r)
        ),
        2 => writeln!(
            s,
            r#"<path d="M{} {} L{} {} L{} {} Z" {style}/>"#,
            fx(cx),
            fx(cy - r - 1.0),
            fx(cx + r + 1.0),
            fx(cy + r),
            fx(cx - r - 1.0),
            fx(cy + r)
        ),
        3 => writeln!(
            s,
            r#"<path d="M{} {} L{} {} L{} {} L{} {} Z" {style}/>"#,
            fx(cx),
            fx(cy - r - 1.0),
            fx(cx + r + 1.0),
            fx(cy),
            fx(cx),
            fx(cy + r + 1.0),
            fx(cx - r - 1.0),
            fx(cy)
        ),
        _ => writeln!(
            s,
            r#"<path d="M{} {} L{} {} M{} {} L{} {}" {style}/>"#,
            fx(cx - r),
            fx(cy - r),
            fx(cx + r),
            fx(cy + r),
            fx(cx - r),
            fx(cy + r),
            fx(cx + r),
            fx(cy - r)
        ),
    };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_styles_differ_in_colour_or_marker() {
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..DISTINCT {
            let s = Style::nth(k);
            assert!(seen.insert((s.colour, s.marker)), "style {k} repeats");
        }
        // Past DISTINCT the dash still tells them apart.
        let keys: std::collections::BTreeSet<String> =
            (0..2 * DISTINCT).map(|k| Style::nth(k).key()).collect();
        assert_eq!(keys.len(), 2 * DISTINCT);
    }
}
