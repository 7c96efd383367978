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

use std::borrow::Cow;

use serde::Serialize;

/// One provider model's input prices.
// Its name and date are borrowed for the built-in `SHEETS` and owned for a
// sheet made from the price table (`sheet_of`), so no name outlives its
// sheet (the doc comment above is the JSON schema's description).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PriceSheet {
    /// Name used on the command line and in report headers.
    pub name: Cow<'static, str>,
    /// When the prices were read off the provider's pricing page.
    pub date: Cow<'static, str>,
    /// Dollars per million uncached input tokens.
    pub input_per_mtok: f64,
    /// Multiplier on the input price for tokens written to the cache.
    pub write_mult: f64,
    /// Multiplier on the input price for tokens read from the cache.
    pub read_mult: f64,
    /// The higher tier a request is billed at when its prompt is long
    /// (Gemini 2.5 Pro and 3 Pro above 200k tokens); `None` for a flat sheet.
    pub long_context: Option<SheetTier>,
}

/// A sheet's long-context tier: every prompt token of a request whose
/// prompt (uncached + written + read) exceeds `above_tokens` is billed at
/// `input_per_mtok`, reads at `read_mult` of it; writes keep the sheet's
/// `write_mult`, so they rise with input as the provider's table has them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SheetTier {
    /// Prompt tokens above which the tier applies.
    pub above_tokens: u64,
    /// Dollars per million uncached input tokens in the tier.
    pub input_per_mtok: f64,
    /// Multiplier on the tier's input price for tokens read from the cache.
    pub read_mult: f64,
}

impl PriceSheet {
    /// Dollars for one request's uncached, written and read tokens.
    pub fn dollars(&self, uncached: u64, written: u64, read: u64) -> f64 {
        let prompt = uncached.saturating_add(written).saturating_add(read);
        let (input, read_mult) = match self.long_context {
            Some(t) if prompt > t.above_tokens => (t.input_per_mtok, t.read_mult),
            _ => (self.input_per_mtok, self.read_mult),
        };
        let weighted = uncached as f64 + written as f64 * self.write_mult + read as f64 * read_mult;
        weighted * input / 1e6
    }
}

const ANTHROPIC_DATE: &str = "2025-11-24";
const OPENAI_DATE: &str = "2025-11-24";

/// Every sheet the lab knows. Anthropic: 5-minute writes 1.25×, 1-hour writes
/// 2×, reads 0.1× of input. OpenAI (before the GPT-5.6 family): writes are
/// free, reads are discounted by family (4o 50 %, 4.1 75 %, 5 90 %).
pub const SHEETS: &[PriceSheet] = &[
    PriceSheet {
        name: Cow::Borrowed("claude-opus-4.1-5m"),
        date: Cow::Borrowed(ANTHROPIC_DATE),
        input_per_mtok: 15.0,
        write_mult: 1.25,
        read_mult: 0.1,
        long_context: None,
    },
    PriceSheet {
        name: Cow::Borrowed("claude-sonnet-4.5-5m"),
        date: Cow::Borrowed(ANTHROPIC_DATE),
        input_per_mtok: 3.0,
        write_mult: 1.25,
        read_mult: 0.1,
        long_context: None,
    },
    PriceSheet {
        name: Cow::Borrowed("claude-sonnet-4.5-1h"),
        date: Cow::Borrowed(ANTHROPIC_DATE),
        input_per_mtok: 3.0,
        write_mult: 2.0,
        read_mult: 0.1,
        long_context: None,
    },
    PriceSheet {
        name: Cow::Borrowed("gpt-4o"),
        date: Cow::Borrowed(OPENAI_DATE),
        input_per_mtok: 2.5,
        write_mult: 1.0,
        read_mult: 0.5,
        long_context: None,
    },
    PriceSheet {
        name: Cow::Borrowed("gpt-4.1"),
        date: Cow::Borrowed(OPENAI_DATE),
        input_per_mtok: 2.0,
        write_mult: 1.0,
        read_mult: 0.25,
        long_context: None,
    },
    PriceSheet {
        name: Cow::Borrowed("gpt-5"),
        date: Cow::Borrowed(OPENAI_DATE),
        input_per_mtok: 1.25,
        write_mult: 1.0,
        read_mult: 0.1,
        long_context: None,
    },
];

/// The sheet of the command line's default (`--sheet` not given and no
/// model to price by).
pub const DEFAULT_SHEET: &str = "claude-opus-4.1-5m";

/// A sheet of `m`'s prompt-side prices, writes at its 1-hour price when
/// `one_hour`, named by the model and dated `date` (both owned).
pub fn sheet_of(m: &table::ModelPrice, one_hour: bool, date: &str) -> PriceSheet {
    let write = if one_hour {
        m.cache_write_1h
    } else {
        m.cache_write_5m
    };
    let suffix = if one_hour { " (1h writes)" } else { "" };
    PriceSheet {
        name: Cow::Owned(format!("{}{suffix}", m.model)),
        date: Cow::Owned(date.to_string()),
        input_per_mtok: m.input,
        write_mult: if m.input > 0.0 { write / m.input } else { 0.0 },
        read_mult: m.read_mult(),
        long_context: m.long_context.map(|lc| SheetTier {
            above_tokens: lc.above_tokens,
            input_per_mtok: lc.input,
            read_mult: if lc.input > 0.0 {
                lc.cache_read / lc.input
            } else {
                0.0
            },
        }),
    }
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
        return Some(s.clone());
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
    let names: Vec<&str> = SHEETS.iter().map(|s| s.name.as_ref()).collect();
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
            let std::borrow::Cow::Borrowed(name) = s.name else {
                panic!("a built-in sheet's name is borrowed: {}", s.name);
            };
            let Some(table::Lookup::Priced(m)) = table.lookup(model_of(name)) else {
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
        assert_eq!((&*s.name, &*s.date), ("claude-opus-4-6", "2026-12-04"));
        // $5 in: 1M written = $6.25, 1M read = $0.50; 1-hour writes $10.
        assert!((s.dollars(0, 1_000_000, 1_000_000) - 6.75).abs() < 1e-9);
        let h = sheet_of(m, true, &t.date);
        assert_eq!(h.name, "claude-opus-4-6 (1h writes)");
        assert!((h.dollars(0, 1_000_000, 0) - 10.0).abs() < 1e-9);
        // Owned: each sheet made holds its own name, nothing is kept
        // behind it.
        assert!(matches!(s.name, Cow::Owned(_)) && matches!(s.date, Cow::Owned(_)));
        assert_eq!(s, sheet_of(m, false, &t.date));
        assert!(SHEETS
            .iter()
            .all(|s| matches!((&s.name, &s.date), (Cow::Borrowed(_), Cow::Borrowed(_)))));
    }

    /// A replayed request is priced by its model's sheet exactly as a
    /// recorded one by the model's entry: every model of the data file, on
    /// prompts either side of any long-context tier, with 5-minute and
    /// 1-hour writes.
    #[test]
    fn every_models_sheet_bills_the_prompt_side_as_its_entry_does() {
        let t = table::PriceTable::builtin();
        let splits = [
            (1_000, 0, 0),
            (150_000, 40_000, 10_000),
            (0, 10_000, 190_001),
        ];
        for m in &t.models {
            for one_hour in [false, true] {
                let s = sheet_of(m, one_hour, &t.date);
                for (uncached, written, read) in splits {
                    let (write_5m, write_1h) = if one_hour { (0, written) } else { (written, 0) };
                    let tokens = table::Tokens {
                        uncached,
                        write_5m,
                        write_1h,
                        read,
                        output: 0,
                    };
                    let want = m.bill(&tokens).input_side;
                    let got = s.dollars(uncached, written, read);
                    assert!(
                        (got - want).abs() < 1e-9,
                        "{} {one_hour} {tokens:?}: {got} vs {want}",
                        m.model
                    );
                }
            }
        }
    }

    #[test]
    fn a_replayed_prompt_above_200k_is_billed_at_the_long_context_tier() {
        let t = table::PriceTable::builtin();
        let Some(table::Lookup::Priced(m)) = t.lookup("gemini-3-pro-preview") else {
            panic!("no gemini 3 pro");
        };
        let s = sheet_of(m, false, &t.date);
        let tier = s
            .long_context
            .expect("gemini 3 pro has a long-context tier");
        assert_eq!(tier.above_tokens, 200_000);
        // The same tokens cost more per token one past the threshold.
        let at = s.dollars(200_000, 0, 0) / 200_000.0;
        let past = s.dollars(200_001, 0, 0) / 200_001.0;
        assert!((at - s.input_per_mtok / 1e6).abs() < 1e-15);
        assert!((past - tier.input_per_mtok / 1e6).abs() < 1e-15);
        assert!(past > at);
        // A flat sheet has no tier.
        assert!(sheet("claude-sonnet-4.5-5m")
            .unwrap()
            .long_context
            .is_none());
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = SHEETS.iter().map(|s| s.name.as_ref()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SHEETS.len());
    }
}
