//! Variants: a built-in policy with constants overridden by their upstream
//! names, `NAME:KEY=VALUE[:KEY=VALUE…]` or `NAME:FILE.toml` (a TOML table
//! of the same keys). A value is read as JSON where it parses (`0.8`,
//! `true`, `[1,2]`, `null`), else as a string; a `:` inside a JSON string,
//! array or object does not end the override (`exclude_tools=["mcp:x"]`).
//! Unknown keys and values of
//! the wrong type are refused, naming the known keys. A variant runs under
//! its whole spec as its name, so its rows never pass for the default's.

use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};
use serde_json::{Map, Value};

use super::{PointerRule, Policy, PolicyCtx, PolicyInfo, Prepared};
use crate::error::{LabError, LabResult};
use crate::message::Message;

/// Overrides by constant name.
pub type Overrides = Map<String, Value>;

/// `spec` as its base policy name and its overrides (none for a plain name).
pub fn parse(spec: &str) -> LabResult<(String, Overrides)> {
    let Some((base, rest)) = spec.split_once(':') else {
        return Ok((spec.to_string(), Overrides::new()));
    };
    let mut out = Overrides::new();
    for part in split_outside_json(rest, ':') {
        match part.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                let v = v.trim();
                let value =
                    serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_string()));
                out.insert(k.trim().to_string(), value);
            }
            Some(_) => return Err(bad(spec, "an override without a name")),
            None => out.extend(read_toml(Path::new(part))?),
        }
    }
    Ok((base.to_string(), out))
}

/// `rest` split at each `sep` outside a JSON string, array or object.
pub fn split_outside_json(rest: &str, sep: char) -> Vec<&str> {
    let (mut out, mut start, mut depth) = (Vec::new(), 0, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for (i, c) in rest.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '[' | '{' if !in_string => depth += 1,
            ']' | '}' if !in_string => depth = depth.saturating_sub(1),
            c if c == sep && !in_string && depth == 0 => {
                out.push(&rest[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&rest[start..]);
    out
}

fn bad(spec: &str, what: &str) -> LabError {
    LabError::usage(
        format!("policy variant `{spec}`: {what}"),
        "write NAME:KEY=VALUE[:KEY=VALUE…] or NAME:FILE.toml (`lab policies --format json` lists each policy's `variant_keys`)",
    )
}

/// The overrides of a TOML file: its top-level keys.
fn read_toml(path: &Path) -> LabResult<Overrides> {
    let text = crate::input::read_text(path, "a policy variant file")?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let (line, column) = crate::input::line_col(&text, e.span().map_or(0, |s| s.start));
        LabError::Input {
            file: path.to_path_buf(),
            line,
            column,
            message: e.message().to_string(),
            fix: "a variant file is a TOML table of constant names and values".into(),
        }
    })?;
    match serde_json::to_value(table) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(bad(&path.display().to_string(), "not a table of constants")),
    }
}

/// Set `overrides` on a serde struct of constants: each key must be one of
/// its fields, and the result must deserialise (types, ranges the struct
/// checks). `target` is unchanged on an error.
pub fn set_fields<T: Serialize + DeserializeOwned>(
    target: &mut T,
    overrides: &Overrides,
) -> Result<(), String> {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(&*target) else {
        return Err("its constants are not a table".into());
    };
    for (k, v) in overrides {
        if !fields.contains_key(k) {
            let known: Vec<&str> = fields.keys().map(String::as_str).collect();
            return Err(format!(
                "unknown constant `{k}`; known: {}",
                known.join(", ")
            ));
        }
        fields.insert(k.clone(), v.clone());
    }
    *target =
        serde_json::from_value(Value::Object(fields)).map_err(|e| format!("bad value: {e}"))?;
    Ok(())
}

/// The fields of a serde struct of constants as overrides, each at its
/// current value: the keys [`set_fields`] accepts on it.
pub fn fields<T: Serialize>(target: &T) -> Overrides {
    match serde_json::to_value(target) {
        Ok(Value::Object(map)) => map,
        _ => Overrides::new(),
    }
}

/// A configured policy under its variant spec.
pub struct Variant {
    inner: Box<dyn Policy>,
    name: String,
}

impl Variant {
    /// `inner` with `overrides` applied, named `spec`.
    pub fn new(mut inner: Box<dyn Policy>, spec: &str, overrides: &Overrides) -> LabResult<Self> {
        inner.configure(overrides).map_err(|why| bad(spec, &why))?;
        Ok(Variant {
            inner,
            name: spec.to_string(),
        })
    }
}

impl Policy for Variant {
    fn info(&self) -> PolicyInfo {
        PolicyInfo {
            name: self.name.clone(),
            ..self.inner.info()
        }
    }

    fn pointer_rules(&self) -> Vec<PointerRule> {
        self.inner.pointer_rules()
    }

    fn prepare(
        &mut self,
        history: &mut Vec<Message>,
        ctx: &mut PolicyCtx<'_>,
    ) -> LabResult<Prepared> {
        self.inner.prepare(history, ctx)
    }

    fn resumed(&mut self, history: &[Message], dropped: bool) {
        self.inner.resumed(history, dropped);
    }

    forward_to_inner!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct S {
        limit: usize,
        ratio: f64,
    }

    #[test]
    fn specs_parse_values_as_json_or_text() {
        let (base, o) = parse("codex-cli:context_window=100000:name=x y").unwrap();
        assert_eq!(base, "codex-cli");
        assert_eq!(o["context_window"], 100000);
        assert_eq!(o["name"], "x y");
        assert!(parse("codex-cli:=3").is_err());
        // A colon inside a JSON value belongs to the value.
        let (_, o) =
            parse(r#"anthropic-clear-tool-uses:exclude_tools=["mcp:x", "a\"b:c"]:keep=2"#).unwrap();
        assert_eq!(o["exclude_tools"], serde_json::json!(["mcp:x", "a\"b:c"]));
        assert_eq!(o["keep"], 2);
        let (_, o) = parse(r#"p:cfg={"a": {"b": "c:d"}}:n=1"#).unwrap();
        assert_eq!(o["cfg"]["a"]["b"], "c:d");
        assert_eq!(o["n"], 1);
        assert_eq!(parse("none").unwrap().1.len(), 0);
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused_and_leave_the_target() {
        let mut s = S {
            limit: 1,
            ratio: 0.5,
        };
        let set = |k: &str, v: Value| Overrides::from_iter([(k.to_string(), v)]);
        set_fields(&mut s, &set("ratio", 0.8.into())).unwrap();
        assert_eq!(
            s,
            S {
                limit: 1,
                ratio: 0.8
            }
        );
        let e = set_fields(&mut s, &set("limt", 3.into())).unwrap_err();
        assert!(
            e.contains("unknown constant `limt`; known: limit, ratio"),
            "{e}"
        );
        let e = set_fields(&mut s, &set("limit", "many".into())).unwrap_err();
        assert!(e.starts_with("bad value"), "{e}");
        assert_eq!(
            s,
            S {
                limit: 1,
                ratio: 0.8
            }
        );
    }
}
