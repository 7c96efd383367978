//! The syntax of a policy spec, read where no policy is built: a wrapper
//! (`frozen:P`, `gated[@SHEET]:P`) around another spec. Building the
//! policy a spec names is `ctxlab_zoo::list::make_with`, one crate up,
//! since it needs every port; a measure that only needs the base name of
//! a spec (the cost model's compaction-request shapes) reads it here.

/// A wrapped spec's wrapper and the spec it wraps: `frozen:P` is
/// `("frozen", P)`, `gated@SHEET:P` is `("gated@SHEET", P)`; `None` for
/// any other spec (a variant's `NAME:KEY=VALUE` included).
pub fn unwrap(spec: &str) -> Option<(&str, &str)> {
    if let Some(inner) = spec.strip_prefix(crate::freeze::PREFIX) {
        return Some((&spec[..crate::freeze::PREFIX.len() - 1], inner));
    }
    let (_, inner) = crate::gate::parse(spec)?;
    Some((&spec[..spec.len() - inner.len() - 1], inner))
}

/// The base policy of a spec: wrappers (`frozen:`, `gated:`) and a
/// variant's overrides (`NAME:KEY=VALUE`) removed.
pub fn base(spec: &str) -> &str {
    let mut spec = spec;
    while let Some((_, inner)) = unwrap(spec) {
        spec = inner;
    }
    spec.split_once(':').map_or(spec, |(base, _)| base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_and_variants_come_off_down_to_the_base_name() {
        assert_eq!(unwrap("frozen:codex-cli"), Some(("frozen", "codex-cli")));
        assert_eq!(
            unwrap("gated@gpt-5:frozen:x"),
            Some(("gated@gpt-5", "frozen:x"))
        );
        assert_eq!(unwrap("codex-cli:auto_compact_token_limit=9"), None);
        assert_eq!(base("gated:frozen:claude-code:k=1"), "claude-code");
        assert_eq!(base("none"), "none");
    }
}
