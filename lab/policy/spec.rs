//! A policy spec, parsed once: what `--policy`, a sweep, a horizon or a
//! check file names, as a [`PolicySpec`] that the replay carries to the
//! place the policy is built.
//!
//! The syntax (each form may wrap any other):
//! - `NAME`: a built-in policy (case-insensitive);
//! - `NAME:KEY=VALUE[:KEY=VALUE…]` or `NAME:FILE.toml`: a
//!   [variant](crate::variant) of one;
//! - `exec:CMD`: an external process ([`crate::exec`]);
//! - `frozen:P` ([`crate::freeze`]) and `gated[@SHEET]:P` ([`crate::gate`]).
//!
//! Building the policy a spec names needs every port, so it happens one
//! crate up (`ctxlab_zoo::list::make_spec`) through [`PolicySpec::build`],
//! which wraps what a [`Ports`] builds; a measure that only needs the base
//! name of a spec (the cost model's compaction-request shapes) reads
//! [`PolicySpec::base`].

use std::fmt;
use std::str::FromStr;

use crate::error::{LabError, LabResult};
use crate::variant::Overrides;
use crate::Policy;

/// A parsed policy spec. Its [`Display`](fmt::Display) is the text it was
/// parsed from, which is also the name its policy runs under.
#[derive(Debug, Clone, PartialEq)]
pub enum PolicySpec {
    /// A built-in policy, with a variant's overrides when `variant` is
    /// given.
    Named {
        /// The policy's name, as written (matched case-insensitively).
        name: String,
        /// The text after `NAME:`, as written (`None` for a plain name).
        variant: Option<String>,
        /// The overrides `variant` sets (empty for a plain name), TOML
        /// files already read.
        overrides: Overrides,
    },
    /// `exec:CMD`: an external process running `CMD`.
    Exec(String),
    /// `frozen:P`.
    Frozen(Box<PolicySpec>),
    /// `gated:P`, or `gated@SHEET:P` naming its own price sheet.
    Gated {
        /// The sheet the spec names (`None`: the run's, else the default).
        sheet: Option<String>,
        /// The gated spec.
        inner: Box<PolicySpec>,
    },
}

/// A wrapper of another spec, as the syntax writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapper<'a> {
    /// `frozen:`.
    Frozen,
    /// `gated:` (`None`) or `gated@SHEET:`.
    Gated(Option<&'a str>),
}

/// The wrapper `text` starts with and the spec it wraps, or `None` for
/// any other spec (a variant's `NAME:KEY=VALUE` included). The one reader
/// of the wrapper syntax: [`PolicySpec`]'s parser goes through it, and
/// whoever needs a run's wrapper reads it from the parsed spec.
pub fn wrapper(text: &str) -> Option<(Wrapper<'_>, &str)> {
    if let Some(inner) = text.strip_prefix(crate::freeze::PREFIX) {
        return Some((Wrapper::Frozen, inner));
    }
    let rest = text.strip_prefix(crate::gate::PREFIX)?;
    if let Some(inner) = rest.strip_prefix(':') {
        return Some((Wrapper::Gated(None), inner));
    }
    let (sheet, inner) = rest.strip_prefix('@')?.split_once(':')?;
    Some((Wrapper::Gated(Some(sheet)), inner))
}

impl FromStr for PolicySpec {
    type Err = LabError;

    /// Parse `text`: wrappers, `exec:`, then a name and its variant's
    /// overrides (reading a variant's TOML files; a bad override is a
    /// usage error, a bad file an input error naming it).
    fn from_str(text: &str) -> LabResult<PolicySpec> {
        match wrapper(text) {
            Some((Wrapper::Frozen, inner)) => {
                return Ok(PolicySpec::Frozen(Box::new(inner.parse()?)))
            }
            Some((Wrapper::Gated(sheet), inner)) => {
                return Ok(PolicySpec::Gated {
                    sheet: sheet.map(str::to_string),
                    inner: Box::new(inner.parse()?),
                })
            }
            None => {}
        }
        if let Some(cmd) = text.strip_prefix(crate::exec::PREFIX) {
            return Ok(PolicySpec::Exec(cmd.to_string()));
        }
        let (name, overrides) = crate::variant::parse(text)?;
        let variant = text.split_once(':').map(|(_, rest)| rest.to_string());
        Ok(PolicySpec::Named {
            name,
            variant,
            overrides,
        })
    }
}

impl fmt::Display for PolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicySpec::Named { name, variant, .. } => match variant {
                Some(v) => write!(f, "{name}:{v}"),
                None => f.write_str(name),
            },
            PolicySpec::Exec(cmd) => write!(f, "{}{cmd}", crate::exec::PREFIX),
            PolicySpec::Frozen(inner) => write!(f, "{}{inner}", crate::freeze::PREFIX),
            PolicySpec::Gated { sheet, inner } => match sheet {
                Some(s) => write!(f, "{}@{s}:{inner}", crate::gate::PREFIX),
                None => write!(f, "{}:{inner}", crate::gate::PREFIX),
            },
        }
    }
}

/// What building a spec needs from above the policy crate: the ports, a
/// price sheet's weights, the external process's settings.
pub trait Ports {
    /// The policy called `name` with its upstream defaults.
    fn named(&self, name: &str) -> LabResult<Box<dyn Policy>>;

    /// What the gate of `spec` weighs with, `sheet` being the sheet it
    /// names.
    fn weights(&self, spec: &PolicySpec, sheet: Option<&str>) -> LabResult<crate::gate::Weights>;

    /// The external policy running `cmd`.
    fn exec(&self, cmd: &str) -> LabResult<Box<dyn Policy>>;
}

impl PolicySpec {
    /// The base policy of the spec: wrappers and a variant's overrides
    /// removed (`exec` for an external process).
    pub fn base(&self) -> &str {
        match self {
            PolicySpec::Named { name, .. } => name,
            PolicySpec::Exec(_) => crate::exec::PREFIX.trim_end_matches(':'),
            PolicySpec::Frozen(inner) | PolicySpec::Gated { inner, .. } => inner.base(),
        }
    }

    /// The spec inside every wrapper: a named policy or an external one.
    pub fn innermost(&self) -> &PolicySpec {
        match self {
            PolicySpec::Frozen(inner) | PolicySpec::Gated { inner, .. } => inner.innermost(),
            other => other,
        }
    }

    /// Is it an external process, wrapped or not?
    pub fn is_exec(&self) -> bool {
        matches!(self.innermost(), PolicySpec::Exec(_))
    }

    /// The policy the spec names, its named and external policies from
    /// `ports`, wrapped and configured as written; each named after the
    /// text of its own spec. A gate's weights are resolved before what it
    /// wraps is built.
    pub fn build(&self, ports: &dyn Ports) -> LabResult<Box<dyn Policy>> {
        match self {
            PolicySpec::Named {
                name, overrides, ..
            } => {
                let policy = ports.named(name)?;
                if overrides.is_empty() {
                    return Ok(policy);
                }
                let spec = self.to_string();
                let variant = crate::variant::Variant::new(policy, &spec, overrides)?;
                Ok(Box::new(variant))
            }
            PolicySpec::Exec(cmd) => ports.exec(cmd),
            PolicySpec::Frozen(inner) => {
                let policy = inner.build(ports)?;
                let spec = self.to_string();
                Ok(Box::new(crate::freeze::Frozen::new(policy, &spec)))
            }
            PolicySpec::Gated { sheet, inner } => {
                let weights = ports.weights(self, sheet.as_deref())?;
                let policy = inner.build(ports)?;
                let spec = self.to_string();
                Ok(Box::new(crate::gate::Gated::new(policy, &spec, weights)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec(text: &str) -> PolicySpec {
        text.parse().unwrap()
    }

    #[test]
    fn wrappers_and_variants_come_off_down_to_the_base_name() {
        assert_eq!(
            wrapper("frozen:codex-cli"),
            Some((Wrapper::Frozen, "codex-cli"))
        );
        assert_eq!(
            wrapper("gated@gpt-5:frozen:x"),
            Some((Wrapper::Gated(Some("gpt-5")), "frozen:x"))
        );
        assert_eq!(wrapper("codex-cli:auto_compact_token_limit=9"), None);
        assert_eq!(spec("gated:frozen:claude-code:k=1").base(), "claude-code");
        assert_eq!(spec("none").base(), "none");
        assert_eq!(spec("frozen:exec:python3 p.py").base(), "exec");
        assert!(spec("gated:exec:x").is_exec());
        assert!(!spec("gated:x").is_exec());
    }

    #[test]
    fn each_form_parses_to_its_own_shape() {
        assert_eq!(
            spec("gated@gpt-5:frozen:codex-cli:k=2"),
            PolicySpec::Gated {
                sheet: Some("gpt-5".into()),
                inner: Box::new(PolicySpec::Frozen(Box::new(PolicySpec::Named {
                    name: "codex-cli".into(),
                    variant: Some("k=2".into()),
                    overrides: Overrides::from_iter([("k".to_string(), 2.into())]),
                }))),
            }
        );
        // An exec command keeps its colons; a malformed gate is a name.
        assert_eq!(spec("exec:a:b=1"), PolicySpec::Exec("a:b=1".into()));
        assert_eq!(spec("gated@x").base(), "gated@x");
        assert_eq!(spec("gated").base(), "gated");
    }

    #[test]
    fn a_bad_override_is_the_variant_error() {
        let err = "frozen:codex-cli:=3".parse::<PolicySpec>().unwrap_err();
        let want = crate::variant::parse("codex-cli:=3").unwrap_err();
        assert_eq!(err.to_string(), want.to_string());
        assert_eq!(err.exit_code(), want.exit_code());
    }

    /// A spec's text: wrappers around a named policy with overrides (JSON
    /// values with colons and commas inside) or an external command.
    fn text() -> impl Strategy<Value = String> {
        let key = "[a-z_]{1,8}";
        let value = prop_oneof![
            "[0-9]{1,4}".boxed(),
            "[a-z ]{1,6}".boxed(),
            Just(r#"["mcp:x","a,b"]"#.to_string()).boxed(),
            Just("true".to_string()).boxed(),
        ];
        let named = (
            "[a-z][a-z0-9-]{0,12}",
            prop::collection::vec((key, value), 0..3),
        )
            .prop_map(|(name, kv)| {
                let mut s = name;
                for (k, v) in kv {
                    s.push_str(&format!(":{k}={v}"));
                }
                s
            });
        let exec = "[a-z :=./]{1,12}".prop_map(|c| format!("exec:{c}"));
        let leaf = prop_oneof![named, exec];
        let wrapper = prop_oneof![
            Just("frozen:".to_string()),
            Just("gated:".to_string()),
            "[a-z0-9.-]{1,8}".prop_map(|s| format!("gated@{s}:")),
        ];
        (prop::collection::vec(wrapper, 0..3), leaf)
            .prop_map(|(wrappers, leaf)| wrappers.concat() + &leaf)
    }

    proptest! {
        #[test]
        fn a_spec_prints_as_the_text_it_was_parsed_from(text in text()) {
            let parsed: PolicySpec = text.parse().unwrap();
            prop_assert_eq!(parsed.to_string(), text.clone());
            let again: PolicySpec = parsed.to_string().parse().unwrap();
            prop_assert_eq!(again, parsed);
        }
    }
}
