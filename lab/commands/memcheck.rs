//! `lab memcheck` and `lab memtool-serve`: the memory-tool rows against
//! built-in and external implementations.

use std::io::Write;

use crate::error::{LabError, LabResult};
use crate::render::Format;

/// `lab memcheck`: every memory-tool row against each implementation.
pub fn memcheck(
    builtins: &[String],
    execs: &[String],
    timeout: u64,
    only: &[String],
    format: Format,
) -> LabResult<String> {
    use crate::memory::tool::{external::External, rows, MemoryTool};
    let chosen = rows::chosen(only)?;
    let mut names: Vec<String> = builtins.to_vec();
    if names.is_empty() && execs.is_empty() {
        names.push("reference".into());
    }
    let mut cards = Vec::new();
    for name in &names {
        let make = rows::builtin(name).ok_or_else(|| {
            LabError::usage(
                format!("unknown memory-tool implementation {name:?}"),
                "use --builtin reference, naive, cached, prefix, unresolved or follow, or --exec CMD",
            )
        })?;
        let select = format!("--builtin {name}");
        cards.push(rows::card(name, &select, &chosen, make.as_ref(), true)?);
    }
    let wait = std::time::Duration::from_secs(timeout.max(1));
    for cmd in execs {
        crate::memory::tool::external::preflight(cmd, wait)?;
        let make = |_: crate::storage::Shared, root: &std::path::Path| {
            External::start(cmd, root, wait).map(|t| Box::new(t) as Box<dyn MemoryTool>)
        };
        let select = format!("--exec '{}'", cmd.replace('\'', "'\\''"));
        cards.push(rows::card(cmd, &select, &chosen, &make, false)?);
    }
    let out = rows::render(&cards, format);
    if rows::all_held(&cards) {
        return Ok(out);
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    Err(LabError::Expectation {
        failures: vec!["a memory-tool row did not hold (see the lines under the table)".into()],
    })
}

/// `lab memtool-serve NAME`: a built-in implementation over the protocol.
pub fn memtool_serve(name: &str) -> LabResult<String> {
    let make = crate::memory::tool::rows::builtin(name).ok_or_else(|| {
        LabError::usage(
            format!("unknown memory-tool implementation {name:?}"),
            "use reference, naive, cached, prefix, unresolved or follow",
        )
    })?;
    let stdin = std::io::stdin().lock();
    crate::memory::tool::external::serve(make.as_ref(), stdin, std::io::stdout().lock())
        .map_err(|e| LabError::io("serving the memory tool", "<stdout>", e))?;
    Ok(String::new())
}
