//! Text extents without a font: per-character width estimates, the boxes
//! they give, and placing labels where no other label is. The widths are
//! those of DejaVu Sans (the widest common sans-serif, and what librsvg and
//! Chromium on Linux fall back to), rounded up, so a box estimated here
//! holds the text in the narrower fonts a viewer may pick instead.

/// Width of one character in ems (estimated, rounded up).
pub fn char_em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | '\'' | '|' | '!' | '.' | ',' | ':' | ';' => 0.30,
        ' ' => 0.33,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' => 0.42,
        'm' => 0.98,
        'w' => 0.82,
        'M' | 'W' => 0.92,
        '%' => 0.96,
        c if c.is_ascii_uppercase() => 0.75,
        c if c.is_ascii_digit() => 0.64,
        _ => 0.64,
    }
}

/// Estimated width of `s` at `size` pixels.
pub fn width(s: &str, size: f64) -> f64 {
    s.chars().map(char_em).sum::<f64>() * size
}

/// An axis-aligned box in SVG coordinates (y grows downward).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left.
    pub x0: f64,
    /// Top.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Bottom.
    pub y1: f64,
}

impl Rect {
    /// Whether the two boxes share any area (touching edges do not count).
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether the box lies inside `o`.
    pub fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
}

/// How text is anchored at its x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// x is the left edge.
    Start,
    /// x is the centre.
    Middle,
    /// x is the right edge.
    End,
}

/// The box of `s` drawn at baseline `(x, y)` in `size`-pixel text.
pub fn text_box(s: &str, x: f64, y: f64, size: f64, anchor: Anchor) -> Rect {
    let w = width(s, size);
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    Rect {
        x0,
        y0: y - 0.8 * size,
        x1: x0 + w,
        y1: y + 0.25 * size,
    }
}

/// Where to put a label of width `w` and size `size` near the point
/// `(px, py)`: the first of rings of candidate spots (right, left, above,
/// below, then the diagonals, then twice as far, ...) whose box stays inside
/// `area` and overlaps none of `taken`. Returns the baseline start and the
/// box; `None` when every spot is taken.
pub fn place_near(
    px: f64,
    py: f64,
    w: f64,
    size: f64,
    area: &Rect,
    taken: &[Rect],
) -> Option<(f64, f64, Rect)> {
    let h = size;
    for ring in 1..=6 {
        let d = 5.0 * ring as f64;
        let spots = [
            (px + d, py + h * 0.35),
            (px - d - w, py + h * 0.35),
            (px - w / 2.0, py - d),
            (px - w / 2.0, py + d + h * 0.7),
            (px + d, py - d),
            (px - d - w, py - d),
            (px + d, py + d + h * 0.7),
            (px - d - w, py + d + h * 0.7),
        ];
        for (x, y) in spots {
            let b = Rect {
                x0: x,
                y0: y - 0.8 * size,
                x1: x + w,
                y1: y + 0.25 * size,
            };
            if b.inside(area) && !taken.iter().any(|t| t.overlaps(&b)) {
                return Some((x, y, b));
            }
        }
    }
    None
}

/// Spread labels that want the baselines `wanted` (in any order) so that
/// consecutive ones are at least `gap` apart, staying within `[lo, hi]`
/// where that is possible. Returns the baselines in the input's order.
pub fn spread(wanted: &[f64], gap: f64, lo: f64, hi: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by(|&a, &b| wanted[a].total_cmp(&wanted[b]).then(a.cmp(&b)));
    let mut ys: Vec<f64> = order.iter().map(|&i| wanted[i].max(lo)).collect();
    for i in 1..ys.len() {
        ys[i] = ys[i].max(ys[i - 1] + gap);
    }
    // Pushed past the bottom: shift back up, keeping the gaps.
    if let Some(&last) = ys.last() {
        if last > hi {
            let shift = last - hi;
            for y in ys.iter_mut() {
                *y -= shift;
            }
            for i in (0..ys.len().saturating_sub(1)).rev() {
                ys[i] = ys[i].min(ys[i + 1] - gap);
            }
        }
    }
    let mut out = vec![0.0; wanted.len()];
    for (slot, &i) in order.iter().enumerate() {
        out[i] = ys[slot];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_letters_are_wider() {
        assert!(width("mmm", 12.0) > width("iii", 12.0) * 2.0);
        assert_eq!(width("", 12.0), 0.0);
    }

    #[test]
    fn spread_keeps_order_and_gaps() {
        let ys = spread(&[50.0, 10.0, 12.0, 11.0], 12.0, 0.0, 100.0);
        let mut sorted = ys.clone();
        sorted.sort_by(f64::total_cmp);
        for w in sorted.windows(2) {
            assert!(w[1] - w[0] >= 12.0 - 1e-9, "{ys:?}");
        }
        assert!(ys[1] < ys[3] && ys[3] < ys[2], "input order kept: {ys:?}");
        let ys = spread(&[95.0, 96.0, 97.0], 10.0, 0.0, 100.0);
        assert!(ys.iter().all(|&y| y <= 100.0), "{ys:?}");
    }

    #[test]
    fn placement_avoids_taken_spots() {
        let area = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: 200.0,
            y1: 200.0,
        };
        let (_, _, first) = place_near(100.0, 100.0, 20.0, 10.0, &area, &[]).unwrap();
        let (_, _, second) = place_near(100.0, 100.0, 20.0, 10.0, &area, &[first]).unwrap();
        assert!(!first.overlaps(&second));
        assert!(second.inside(&area));
    }
}
