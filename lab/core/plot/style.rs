//! How a series looks: a colour from a colour-blind-safe palette, a marker
//! shape and a dash pattern. Style `k` differs from every other style below
//! [`DISTINCT`] in colour or marker, so a panel of up to that many
//! highlighted series never draws two alike (the layout check verifies it
//! on every plot).

use std::fmt::Write as _;

use super::fx;

/// Okabe and Ito's palette without its yellow, its orange (#E69F00, 2.25:1
/// on white) and its sky blue (#56B4E9, 2.31:1) replaced by a brick brown
/// and a violet: every colour reaches 3:1 on white (the contrast WCAG asks
/// of graphics), and under simulated protanopia, deuteranopia and
/// tritanopia every two colours stay further apart than Okabe-Ito's own
/// closest pair (the tests below check both).
pub const COLOURS: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#994433", "#8800FF", "#000000",
];
/// The plots' background.
pub const BACKGROUND: &str = "#FFFFFF";
/// The least contrast a data colour has against [`BACKGROUND`] (WCAG 2.1,
/// non-text contrast).
pub const MIN_CONTRAST: f64 = 3.0;
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

/// A `#RRGGBB` colour's linear RGB, or `None` for anything else.
fn linear_rgb(hex: &str) -> Option<[f64; 3]> {
    let h = hex.strip_prefix('#').filter(|h| h.len() == 6)?;
    let mut out = [0.0; 3];
    for (i, c) in out.iter_mut().enumerate() {
        let v = f64::from(u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?) / 255.0;
        *c = if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        };
    }
    Some(out)
}

/// WCAG relative luminance of linear RGB.
fn luminance(c: [f64; 3]) -> f64 {
    0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
}

/// The WCAG contrast ratio of two `#RRGGBB` colours (1 to 21), or `None`
/// when either is not one.
pub fn contrast(a: &str, b: &str) -> Option<f64> {
    let (la, lb) = (luminance(linear_rgb(a)?), luminance(linear_rgb(b)?));
    Some((la.max(lb) + 0.05) / (la.min(lb) + 0.05))
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
    fn every_colour_reaches_three_to_one_on_the_background() {
        for c in COLOURS {
            let r = contrast(c, BACKGROUND).unwrap();
            assert!(r >= MIN_CONTRAST, "{c}: {r:.2}");
        }
        // The two Okabe-Ito colours this palette replaces did not.
        assert!(contrast("#E69F00", BACKGROUND).unwrap() < MIN_CONTRAST);
        assert!(contrast("#56B4E9", BACKGROUND).unwrap() < MIN_CONTRAST);
        assert_eq!(contrast("nope", BACKGROUND), None);
    }

    /// Machado, Oliveira and Fernandes (2009) at full severity, on linear RGB.
    const DEFICIENCIES: [[[f64; 3]; 3]; 3] = [
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ],
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ],
        [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.303900],
        ],
    ];

    /// CIE L*a*b* of linear RGB (D65).
    fn lab(c: [f64; 3]) -> [f64; 3] {
        let xyz = [
            (0.4124 * c[0] + 0.3576 * c[1] + 0.1805 * c[2]) / 0.95047,
            0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2],
            (0.0193 * c[0] + 0.1192 * c[1] + 0.9505 * c[2]) / 1.08883,
        ];
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        let [x, y, z] = xyz.map(f);
        [116.0 * y - 16.0, 500.0 * (x - y), 200.0 * (y - z)]
    }

    /// The smallest CIE76 distance between two colours of `palette`, seen
    /// normally and under each simulated deficiency.
    fn closest_pair(palette: &[&str]) -> f64 {
        let identity = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let mut best = f64::MAX;
        for m in std::iter::once(identity).chain(DEFICIENCIES) {
            let seen: Vec<[f64; 3]> = palette
                .iter()
                .map(|c| {
                    let c = linear_rgb(c).unwrap();
                    lab(m.map(|row| (0..3).map(|j| row[j] * c[j]).sum::<f64>().clamp(0.0, 1.0)))
                })
                .collect();
            for (i, a) in seen.iter().enumerate() {
                for b in &seen[i + 1..] {
                    let d = (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>().sqrt();
                    best = best.min(d);
                }
            }
        }
        best
    }

    #[test]
    fn the_palette_stays_colour_blind_safe() {
        let okabe_ito = [
            "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
        ];
        let ours = closest_pair(&COLOURS);
        let theirs = closest_pair(&okabe_ito);
        assert!(
            ours >= theirs,
            "closest pair {ours:.1} < Okabe-Ito's {theirs:.1}"
        );
        // Simply darkening the two faint colours would not do: the darker
        // orange merges with the vermillion under deuteranopia.
        let darkened = [
            "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#B07A00", "#3A8CC8", "#000000",
        ];
        assert!(closest_pair(&darkened) < theirs);
    }

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
