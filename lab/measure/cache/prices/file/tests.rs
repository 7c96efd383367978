use super::*;
use crate::cache::prices::table::{Lookup, ModelPrice, Tokens, BUILTIN_PATH};
use crate::error::LabError;

fn priced<'a>(t: &'a PriceTable, model: &str) -> &'a ModelPrice {
    match t.lookup(model) {
        Some(Lookup::Priced(m)) => m,
        other => panic!("{model}: {other:?}"),
    }
}

#[test]
fn the_builtin_table_is_dated_and_prices_opus_4_6_at_its_list_price() {
    let t = PriceTable::builtin();
    assert_eq!(t.date, "2026-12-04");
    assert_eq!(t.origin, BUILTIN_PATH);
    let m = priced(&t, "claude-opus-4-6");
    let mtok = 1_000_000;
    let bill = m.bill(&Tokens {
        uncached: mtok,
        write_5m: mtok,
        write_1h: mtok,
        read: mtok,
        output: mtok,
    });
    // $5 + $6.25 + $10 + $0.50 in, $25 out.
    assert!((bill.input_side - 21.75).abs() < 1e-9, "{bill:?}");
    assert!((bill.output - 25.0).abs() < 1e-9, "{bill:?}");
    assert!((m.read_mult() - 0.1).abs() < 1e-12);
    assert_eq!(m.min_cache_tokens, 4_096);
    // An alias finds the dated id; `<synthetic>` is no model.
    assert_eq!(
        priced(&t, "claude-opus-4-1").model,
        "claude-opus-4-1-20250805"
    );
    assert_eq!(t.lookup("<synthetic>"), Some(Lookup::NotAModel));
    assert_eq!(t.lookup("claude-nope"), None);
}

#[test]
fn every_entry_is_sourced_dated_and_consistent() {
    let t = PriceTable::builtin();
    let mut ids = std::collections::HashSet::new();
    for m in &t.models {
        assert!(!m.source.is_empty() && m.date.len() == 10, "{}", m.model);
        for id in std::iter::once(&m.model).chain(&m.aliases) {
            assert!(ids.insert(id.clone()), "{id} twice");
        }
        // A model without a write premium bills a written token as input.
        if !m.writes_billed {
            assert_eq!(m.cache_write_5m, m.input, "{}", m.model);
        }
        assert!(m.cache_read < m.input, "{}", m.model);
    }
    let providers: std::collections::BTreeSet<_> =
        t.models.iter().map(|m| m.provider.as_str()).collect();
    assert_eq!(
        providers.into_iter().collect::<Vec<_>>(),
        ["anthropic", "google", "openai"]
    );
}

#[test]
fn a_prompt_above_200k_is_billed_at_geminis_long_context_tier() {
    let t = PriceTable::builtin();
    let m = priced(&t, "gemini-2.5-pro");
    let short = m.bill(&Tokens {
        uncached: 200_000,
        output: 1_000,
        ..Tokens::default()
    });
    let long = m.bill(&Tokens {
        uncached: 200_001,
        output: 1_000,
        ..Tokens::default()
    });
    assert!((short.input_side - 0.25).abs() < 1e-9, "{short:?}");
    assert!((long.input_side - 200_001.0 * 2.5 / 1e6).abs() < 1e-9);
    assert!((long.output - 0.015).abs() < 1e-9, "{long:?}");
}

fn parse_err(text: &str) -> LabError {
    parse(Path::new("p.json"), text).unwrap_err()
}

fn position(e: &LabError) -> (usize, usize) {
    match e {
        LabError::Input { line, column, .. } => (*line, *column),
        other => panic!("not an input error: {other}"),
    }
}

const ONE: &str = r#"{
  "format": "ctxlab-prices/1",
  "date": "2026-01-01",
  "models": [
    {"model": "m", "provider": "x", "input": 1.0, "output": 2.0,
     "cache_write_5m": 1.25, "cache_write_1h": 2.0, "cache_read": 0.1,
     "batch_discount": 0.5, "min_cache_tokens": 1024, "writes_billed": true,
     "source": "s", "date": "2026-01-01"}
  ]
}"#;

#[test]
fn a_good_file_parses_and_a_bad_one_names_file_line_column_and_fix() {
    let t = parse(Path::new("p.json"), ONE).unwrap();
    assert_eq!(priced(&t, "m").output, 2.0);
    assert_eq!(t.label(), "p.json as of 2026-01-01");

    let e = parse_err(&ONE.replace("\"output\": 2.0,", ""));
    let text = e.to_string();
    assert!(
        text.contains("p.json:") && text.contains("missing field `output`"),
        "{text}"
    );
    assert!(text.contains("fix:"), "{text}");
    assert_eq!(position(&e).0, 8, "{text}");
    assert!(!text.contains("at line"), "{text}");
    assert_eq!(e.exit_code(), 3);

    let e = parse_err(&ONE.replace("\"cache_read\": 0.1", "\"cache_read\": -0.1"));
    assert!(e.to_string().contains("negative"), "{e}");
    assert_eq!(position(&e).0, 6, "{e}");

    let e = parse_err("{\n  \"format\": ");
    assert_eq!(position(&e).0, 2, "{e}");
    let e = parse_err("[1, 2]");
    assert!(e.to_string().contains("must be a JSON object"), "{e}");
    let e = parse_err(&ONE.replace("ctxlab-prices/1", "ctxlab-prices/9"));
    assert!(e.to_string().contains("ctxlab-prices/9"), "{e}");
}

const LITELLM: &str = r#"{
    "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "max_tokens": "see docs"},
    "claude-opus-4-6": {
        "cache_creation_input_token_cost": 6.25e-06,
        "cache_creation_input_token_cost_above_1hr": 1e-05,
        "cache_read_input_token_cost": 5e-07,
        "input_cost_per_token": 5e-06,
        "input_cost_per_token_batches": 2.5e-06,
        "litellm_provider": "anthropic",
        "mode": "chat",
        "output_cost_per_token": 2.5e-05
    },
    "gemini/gemini-9-pro": {
        "input_cost_per_token": 2e-06,
        "input_cost_per_token_above_200k_tokens": 4e-06,
        "output_cost_per_token": 1.2e-05,
        "output_cost_per_token_above_200k_tokens": 1.8e-05,
        "litellm_provider": "gemini"
    },
    "256-x-256/dall-e-2": {"input_cost_per_pixel": 2.4e-07, "litellm_provider": "openai", "mode": "image_generation"}
}"#;

#[test]
fn litellms_map_reads_per_token_prices_as_per_million() {
    let t = parse(Path::new("l.json"), LITELLM).unwrap();
    assert_eq!(t.date, "undated");
    assert_eq!(
        t.models.len(),
        2,
        "sample_spec and the image model are left out"
    );
    let m = priced(&t, "claude-opus-4-6");
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(m.input, 5.0) && close(m.output, 25.0));
    assert!(close(m.cache_write_5m, 6.25) && close(m.cache_write_1h, 10.0));
    assert!(close(m.cache_read, 0.5) && close(m.batch_discount, 0.5));
    assert!(m.writes_billed);
    // The cache rule comes from the built-in entry of the same model.
    assert_eq!(m.min_cache_tokens, 4_096);
    let g = priced(&t, "gemini-9-pro");
    assert_eq!(g.model, "gemini/gemini-9-pro");
    assert!(!g.writes_billed && close(g.cache_read, 2.0));
    assert!(close(g.long_context.unwrap().output, 18.0));

    let e = parse_err(&LITELLM.replace("5e-07", "-5e-07"));
    assert!(e.to_string().contains("negative"), "{e}");
    assert_eq!(position(&e).0, 6, "{e}");
}

#[test]
fn an_unknown_model_is_a_usage_error_naming_model_source_and_fix() {
    let e = PriceTable::builtin()
        .require("claude-nope-9", "s.jsonl")
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("claude-nope-9") && text.contains("s.jsonl"),
        "{text}"
    );
    assert!(text.contains("--prices FILE"), "{text}");
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn a_routers_provider_prefix_names_the_providers_model() {
    let t = PriceTable::builtin();
    // OpenRouter's id for Gemini 3 Pro is priced as Google's model.
    assert_eq!(
        priced(&t, "google/gemini-3-pro-preview").model,
        "gemini-3-pro-preview"
    );
    assert_eq!(
        priced(&t, "openrouter/google/gemini-3-pro-preview").model,
        "gemini-3-pro-preview"
    );
    // A prefix does not make an unknown model known.
    assert!(t.lookup("google/no-such-model").is_none());
    assert!(t.lookup("no-such-model").is_none());
}
