//! The layout check: read an SVG this module wrote and say what a reader
//! could not tell apart or could not read. It returns data (what shares a
//! style, which labels overlap, which leave the canvas) rather than
//! panicking, so a test can print every problem at once and a command could
//! report them.
//!
//! It reads the SVG text back, not the figure, so it runs on every file the
//! lab writes, whatever made it: each `<text>` gives a box from the
//! per-character width estimates of [`super::text`]; each highlighted series
//! carries `data-panel` and `data-style`, written by the renderer.

use serde::Serialize;

use super::text::{text_box, width, Anchor, Rect};

/// What the check found; empty when the plot is readable.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Problems {
    /// Series of one panel drawn in one style: "panel P: A and B share S".
    pub shared_style: Vec<String>,
    /// Pairs of labels whose boxes overlap.
    pub overlaps: Vec<(String, String)>,
    /// Labels reaching past the canvas.
    pub outside: Vec<String>,
    /// Labels checked.
    pub labels: usize,
    /// Highlighted series checked.
    pub series: usize,
}

impl Problems {
    /// Nothing shares a style, overlaps or leaves the canvas.
    pub fn is_empty(&self) -> bool {
        self.shared_style.is_empty() && self.overlaps.is_empty() && self.outside.is_empty()
    }
}

/// One `<text>` of the SVG: its content and estimated box.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    /// The text, unescaped.
    pub text: String,
    /// Where it is drawn.
    pub rect: Rect,
}

/// Check an SVG written by [`super::svg`].
pub fn check(svg: &str) -> Problems {
    let canvas = Rect {
        x0: 0.0,
        y0: 0.0,
        x1: root_attr(svg, "width").unwrap_or(0.0),
        y1: root_attr(svg, "height").unwrap_or(0.0),
    };
    let labels = labels(svg);
    let mut p = Problems {
        labels: labels.len(),
        ..Problems::default()
    };
    for (i, a) in labels.iter().enumerate() {
        if !a.rect.inside(&canvas) {
            p.outside.push(a.text.clone());
        }
        for b in &labels[i + 1..] {
            if a.rect.overlaps(&b.rect) {
                p.overlaps.push((a.text.clone(), b.text.clone()));
            }
        }
    }
    let series = series(svg);
    p.series = series.len();
    for (i, (panel, label, style)) in series.iter().enumerate() {
        for (panel2, label2, style2) in &series[i + 1..] {
            if panel == panel2 && style == style2 {
                p.shared_style
                    .push(format!("panel {panel}: {label} and {label2} share {style}"));
            }
        }
    }
    p
}

/// Every `<text>` element with its estimated box.
pub fn labels(svg: &str) -> Vec<Label> {
    let root_size = root_attr(svg, "font-size").unwrap_or(12.0);
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(start) = rest.find("<text") {
        rest = &rest[start..];
        let Some(open_end) = rest.find('>') else {
            break;
        };
        let tag = &rest[..open_end];
        let Some(close) = rest.find("</text>") else {
            break;
        };
        let text = unescape(&rest[open_end + 1..close]);
        rest = &rest[close..];
        let size = attr(tag, "font-size").unwrap_or(root_size);
        let anchor = match attr_str(tag, "text-anchor") {
            Some("middle") => Anchor::Middle,
            Some("end") => Anchor::End,
            _ => Anchor::Start,
        };
        let rect = match attr_str(tag, "transform") {
            Some(t) => rotated(t, &text, size, anchor),
            None => text_box(
                &text,
                attr(tag, "x").unwrap_or(0.0),
                attr(tag, "y").unwrap_or(0.0),
                size,
                anchor,
            ),
        };
        out.push(Label { text, rect });
    }
    out
}

/// The box of text under `translate(x y) rotate(-90)`: upright text turned
/// to read bottom to top, its baseline at x.
fn rotated(transform: &str, text: &str, size: f64, anchor: Anchor) -> Rect {
    let nums: Vec<f64> = transform
        .trim_start_matches("translate(")
        .split([' ', ')'])
        .filter_map(|n| n.parse().ok())
        .collect();
    let (x, y) = (
        nums.first().copied().unwrap_or(0.0),
        nums.get(1).copied().unwrap_or(0.0),
    );
    let w = width(text, size);
    let (y0, y1) = match anchor {
        Anchor::Middle => (y - w / 2.0, y + w / 2.0),
        Anchor::Start => (y - w, y),
        Anchor::End => (y, y + w),
    };
    Rect {
        x0: x - 0.8 * size,
        y0,
        x1: x + 0.25 * size,
        y1,
    }
}

/// `(panel, label, style)` of every highlighted series.
fn series(svg: &str) -> Vec<(String, String, String)> {
    svg.lines()
        .filter(|l| l.contains("data-style="))
        .map(|l| {
            let get = |k: &str| attr_str(l, k).map(unescape).unwrap_or_default();
            (get("data-panel"), get("data-label"), get("data-style"))
        })
        .collect()
}

/// The value of attribute `name` on the root `<svg>` element.
fn root_attr(svg: &str, name: &str) -> Option<f64> {
    let root = &svg[..svg.find('>')?];
    attr(root, name)
}

fn attr(tag: &str, name: &str) -> Option<f64> {
    attr_str(tag, name)?.parse().ok()
}

fn attr_str<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let len = tag[at..].find('"')?;
    Some(&tag[at..at + len])
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_outside_labels_are_found() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" font-size="12">
<text x="10" y="20">first</text>
<text x="12" y="22">second</text>
<text x="60" y="40">far too long a label</text>
<text transform="translate(40 80) rotate(-90)" text-anchor="middle">y</text>
</svg>"#;
        let p = check(svg);
        assert_eq!(p.labels, 4);
        assert_eq!(p.overlaps, vec![("first".into(), "second".into())]);
        assert_eq!(p.outside, vec!["far too long a label".to_string()]);
        assert!(!p.is_empty());
    }

    #[test]
    fn shared_styles_are_found_per_panel() {
        let svg = r#"<svg width="10" height="10">
<path data-panel="0" data-label="a" data-style="s1" d=""/>
<path data-panel="0" data-label="b" data-style="s1" d=""/>
<path data-panel="1" data-label="c" data-style="s1" d=""/>
</svg>"#;
        let p = check(svg);
        assert_eq!(p.series, 3);
        assert_eq!(
            p.shared_style,
            vec!["panel 0: a and b share s1".to_string()]
        );
    }
}
