//! Frontmatter properties: any field values round-trip through ctxlab's
//! writer and reader, and no input makes the reader panic.

use proptest::prelude::*;

use ctxlab::memory::frontmatter::{parse, render, Document};

fn field() -> impl Strategy<Value = String> {
    // Any Unicode, with YAML-significant characters and line breaks overrepresented.
    prop_oneof![
        "\\PC{1,24}",
        "[ -~\\t\\r\\n\u{85}\u{2028}\u{2029}\u{FEFF}\u{7F}:#'\"\\\\-]{1,24}",
    ]
    .prop_filter("not blank", |s| !s.trim().is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_values_round_trip(name in field(), description in field(), body in "\\PC{0,40}") {
        let d = Document { name, description, mem_type: "user".into(), body: body.trim().to_string() };
        let text = render(&d);
        prop_assert_eq!(parse(&text).unwrap(), d, "{}", text);
    }

    #[test]
    fn no_input_panics(text in "(---\\n)?[ -~\\n\\r\\t:'\"\\[\\]{}&*!|>%@`#-]{0,80}(\\n---\\n)?") {
        let _ = parse(&text);
    }
}
