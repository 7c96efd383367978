//! No input may panic: arbitrary bytes as a scenario file (compaction or
//! memory) end in a parsed scenario or an input error (exit 3) with a
//! position that is never `:0:`, and every column is a character column
//! inside the line it names.

use std::path::Path;

use ctxlab::error::LabError;
use proptest::prelude::*;

fn check(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let file = Path::new("fuzz.json");
    let text = match ctxlab::input::decode(file, bytes) {
        Ok(t) => t,
        Err(e) => {
            prop_assert_eq!(e.exit_code(), 3);
            return Ok(());
        }
    };
    let results = [
        ctxlab::scenario::Scenario::parse(file, &text).map(|_| ()),
        ctxlab::memory::scenario::parse_scenario(file, &text).map(|_| ()),
    ];
    for r in results {
        if let Err(e) = r {
            prop_assert_eq!(e.exit_code(), 3, "{}", e);
            if let LabError::Input { line, column, .. } = &e {
                prop_assert!(!(*line > 0 && *column == 0), "{}", e);
                if let Some(l) = text.split('\n').nth(line.saturating_sub(1)) {
                    prop_assert!(*column <= l.chars().count() + 1, "{} in {:?}", e, l);
                }
            }
        }
    }
    Ok(())
}

/// JSON-ish text: the bytes a mistyped scenario is made of, with multi-byte
/// characters so that byte and character columns differ.
fn jsonish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(",".to_string()),
            Just(":".to_string()),
            Just("\n".to_string()),
            Just("\"schema\"".to_string()),
            Just("\"ctxlab.scenario/1\"".to_string()),
            Just("\"ctxlab.memory-scenario/1\"".to_string()),
            Just("\"sessions\"".to_string()),
            Just("\"path_len\"".to_string()),
            Just("\"é日\"".to_string()),
            Just("1".to_string()),
            Just("true".to_string()),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        check(bytes)?;
    }

    #[test]
    fn jsonish_text_never_panics_and_columns_stay_in_the_line(text in jsonish()) {
        check(text.into_bytes())?;
    }
}
