//! Named, dated price sheets: dollars per million input tokens and the
//! multipliers a provider applies to cache reads and writes.
//!
//! Output tokens are not priced here: a replay re-sends recorded history, it
//! does not generate, so only the prompt side differs between designs. The
//! per-model table with output prices and cache rules is [`table`]; the
//! sheets are kept beside it (a test checks they agree) so `--sheet NAME`
//! prints what it always printed.

pub mod file;
pub mod litellm;
pub mod table;

use serde::Serialize;

/// One provider model's input prices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PriceSheet {
    /// Name used on the command line and in report headers.
    pub name: &'static str,
    /// When the prices were read off the provider's pricing page.
    pub date: &'static str,
    /// Dollars per million uncached input tokens.
    pub input_per_mtok: f64,
    /// Multiplier on the input price for tokens written to the cache.
    pub write_mult: f64,
    /// Multiplier on the input price for tokens read from the cache.
    pub read_mult: f64,
}

impl PriceSheet {
    /// Dollars for one request's uncached, written and read tokens.
    pub fn dollars(&self, uncached: u64, written: u64, read: u64) -> f64 {
        let weighted =
            uncached as f64 + written as f64 * self.write_mult + read as f64 * self.read_mult;
        weighted * self.input_per_mtok / 1e6
    }
}

const ANTHROPIC_DATE: &str = "2025-11-24";
const OPENAI_DATE: &str = "2025-11-24";

/// Every sheet the lab knows. Anthropic: 5-minute writes 1.25×, 1-hour writes
/// 2×, reads 0.1× of input. OpenAI (before the GPT-5.6 family): writes are
/// free, reads are discounted by family (4o 50 %, 4.1 75 %, 5 90 %).
pub const SHEETS: &[PriceSheet] = &[
    PriceSheet {
        name: "claude-opus-4.1-5m",
        date: ANTHROPIC_DATE,
        input_per_mtok: 15.0,
        write_mult: 1.25,
        read_mult: 0.1,
    },
    PriceSheet {
        name: "claude-sonnet-4.5-5m",
        date: ANTHROPIC_DATE,
        input_per_mtok: 3.0,
        write_mult: 1.25,
        read_mult: 0.1,
    },
    PriceSheet {
        name: "claude-sonnet-4.5-1h",
        date: ANTHROPIC_DATE,
        input_per_mtok: 3.0,
        write_mult: 2.0,
        read_mult: 0.1,
    },
    PriceSheet {
        name: "gpt-4o",
        date: OPENAI_DATE,
        input_per_mtok: 2.5,
        write_mult: 1.0,
        read_mult: 0.5,
    },
    PriceSheet {
        name: "gpt-4.1",
        date: OPENAI_DATE,
        input_per_mtok: 2.0,
        write_mult: 1.0,
        read_mult: 0.25,
    },
    PriceSheet {
        name: "gpt-5",
        date: OPENAI_DATE,
        input_per_mtok: 1.25,
        write_mult: 1.0,
        read_mult: 0.1,
    },
];

/// The sheet of the command line's default (`--sheet` not given and no
/// model to price by).
pub const DEFAULT_SHEET: &str = "claude-opus-4.1-5m";

/// A sheet of `m`'s prompt-side prices, writes at its 1-hour price when
/// `one_hour`, named by the model and dated `date`. Names are interned so
/// a sheet stays `Copy`: one small allocation per distinct name per process.
pub fn sheet_of(m: &table::ModelPrice, one_hour: bool, date: &str) -> PriceSheet {
    let write = if one_hour {
        m.cache_write_1h
    } else {
        m.cache_write_5m
    };
    let suffix = if one_hour { " (1h writes)" } else { "" };
    PriceSheet {
        name: intern(format!("{}{suffix}", m.model)),
        date: intern(date.to_string()),
        input_per_mtok: m.input,
        write_mult: if m.input > 0.0 { write / m.input } else { 0.0 },
        read_mult: m.read_mult(),
    }
}

fn intern(s: String) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&n) = names.get(s.as_str()) {
        return n;
    }
    let n: &'static str = Box::leak(s.into_boxed_str());
    names.insert(n);
    n
}

/// The sheet with this name, if any.
pub fn sheet(name: &str) -> Option<&'static PriceSheet> {
    SHEETS.iter().find(|s| s.name == name)
}

/// A sheet by name: one of [`SHEETS`], else a model of the built-in price
/// table ([`table::BUILTIN_PATH`]) at its 5-minute write price, or at its
/// 1-hour one with the suffix `-1h` (`gemini-2.5-pro`, `claude-opus-4.5-1h`).
/// Dated with the table's date.
pub fn named(name: &str) -> Option<PriceSheet> {
    if let Some(s) = sheet(name) {
        return Some(*s);
    }
    let (model, one_hour) = match name.strip_suffix("-1h") {
        Some(m) => (m, true),
        None => (name, false),
    };
    let table = table::PriceTable::builtin();
    match table.lookup(model)? {
        table::Lookup::Priced(m) => Some(sheet_of(m, one_hour, &table.date)),
        table::Lookup::NotAModel => None,
    }
}

/// What `--sheet` and a gate's `@SHEET` accept, for error messages.
pub fn named_help() -> String {
    let names: Vec<_> = SHEETS.iter().map(|s| s.name).collect();
    format!(
        "use one of: {}, or a model of {} (add -1h for 1-hour writes)",
        names.join(", "),
        table::BUILTIN_PATH
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_multipliers_price_a_write_above_and_a_read_below_input() {
        let s = sheet("claude-sonnet-4.5-5m").unwrap();
        // $3 base: 1M written = $3.75, 1M read = $0.30.
        assert!((s.dollars(0, 1_000_000, 0) - 3.75).abs() < 1e-9);
        assert!((s.dollars(0, 0, 1_000_000) - 0.30).abs() < 1e-9);
        assert!(
            (sheet("claude-sonnet-4.5-1h")
                .unwrap()
                .dollars(0, 1_000_000, 0)
                - 6.0)
                .abs()
                < 1e-9
        );
        assert!(sheet("nope").is_none());
    }

    /// Each named sheet is its model's entry in the data file: same input
    /// price, same write and read multipliers (the sheets keep their own
    /// date, the day they were first read).
    #[test]
    fn every_sheet_agrees_with_the_data_file() {
        let table = table::PriceTable::builtin();
        let model_of = |name: &'static str| -> &'static str {
            match name {
                "claude-opus-4.1-5m" => "claude-opus-4-1-20250805",
                "claude-sonnet-4.5-5m" | "claude-sonnet-4.5-1h" => "claude-sonnet-4-5-20250929",
                other => other,
            }
        };
        for s in SHEETS {
            let Some(table::Lookup::Priced(m)) = table.lookup(model_of(s.name)) else {
                panic!("no data entry for sheet {}", s.name);
            };
            let write = if s.name.ends_with("-1h") {
                m.cache_write_1h
            } else {
                m.cache_write_5m
            };
            let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
            assert!(close(s.input_per_mtok, m.input), "{}", s.name);
            assert!(close(s.write_mult * s.input_per_mtok, write), "{}", s.name);
            assert!(
                close(s.read_mult * s.input_per_mtok, m.cache_read),
                "{}",
                s.name
            );
        }
    }

    #[test]
    fn a_models_sheet_prices_the_prompt_side_like_its_entry() {
        let t = table::PriceTable::builtin();
        let Some(table::Lookup::Priced(m)) = t.lookup("claude-opus-4-6") else {
            panic!("no opus 4.6");
        };
        let s = sheet_of(m, false, &t.date);
        assert_eq!((s.name, s.date), ("claude-opus-4-6", "2026-12-04"));
        // $5 in: 1M written = $6.25, 1M read = $0.50; 1-hour writes $10.
        assert!((s.dollars(0, 1_000_000, 1_000_000) - 6.75).abs() < 1e-9);
        let h = sheet_of(m, true, &t.date);
        assert_eq!(h.name, "claude-opus-4-6 (1h writes)");
        assert!((h.dollars(0, 1_000_000, 0) - 10.0).abs() < 1e-9);
        // Interned: the same name is the same allocation.
        assert!(std::ptr::eq(s.name, sheet_of(m, false, &t.date).name));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = SHEETS.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SHEETS.len());
    }
}
