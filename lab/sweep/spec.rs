//! What a sweep covers: switch names, path lengths, and the spec with its fixed cell order.

use serde::{Deserialize, Serialize};

use super::{ALL_SWITCHES, MAX_CELLS};
use crate::compact::config;
use crate::error::{LabError, LabResult};
use crate::storage::root::validate_path_len;

/// The two values a switch takes in a sweep, in factor order.
pub fn levels(switch: &str) -> [&'static str; 2] {
    if switch == "order" {
        ["persist_first", "micro_first"]
    } else {
        ["false", "true"]
    }
}

/// Parse a `--vary` list (comma separated switch names, or `all` for every
/// switch of [`ALL_SWITCHES`]); rejects unknown and repeated names.
pub fn parse_vary(spec: &str) -> LabResult<Vec<String>> {
    if spec.trim() == "all" {
        return Ok(ALL_SWITCHES.iter().map(|s| s.to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !ALL_SWITCHES.contains(&name) {
            return Err(LabError::usage(
                format!("unknown switch {name:?} in --vary"),
                format!("use some of: {}", ALL_SWITCHES.join(", ")),
            ));
        }
        if out.iter().any(|o| o == name) {
            return Err(LabError::usage(
                format!("switch {name:?} given twice in --vary"),
                "name each switch once",
            ));
        }
        out.push(name.to_string());
    }
    if out.is_empty() {
        return Err(LabError::usage(
            "--vary names no switch",
            format!("use some of: {}", ALL_SWITCHES.join(", ")),
        ));
    }
    Ok(out)
}

/// Parse path lengths: a comma-separated list of `N` and inclusive ranges
/// `A..B` or `A..B:STEP` (step 1 by default, so thresholds are exact).
/// The result is sorted and deduplicated.
pub fn parse_path_lens(spec: &str) -> LabResult<Vec<usize>> {
    let bad = |item: &str, why: &str| {
        LabError::usage(
            format!("bad path length {item:?}: {why}"),
            "write lengths as N, A..B or A..B:STEP, comma separated (e.g. 60..200:10,90)",
        )
    };
    let num = |item: &str, s: &str| {
        s.trim()
            .parse::<usize>()
            .map_err(|_| bad(item, "not a whole number"))
    };
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once("..") {
            None => out.push(num(item, item)?),
            Some((a, rest)) => {
                let (b, step) = match rest.split_once(':') {
                    Some((b, s)) => (b, num(item, s)?),
                    None => (rest, 1),
                };
                let (a, b) = (num(item, a)?, num(item, b)?);
                if step == 0 {
                    return Err(bad(item, "step must be at least 1"));
                }
                if a > b {
                    return Err(bad(item, "range start is after its end"));
                }
                if (b - a) / step >= MAX_CELLS {
                    return Err(bad(item, "range has too many lengths"));
                }
                for l in [a, b] {
                    validate_path_len(l).map_err(|m| bad(item, &m))?;
                }
                out.extend((a..=b).step_by(step));
            }
        }
    }
    if let Some(&l) = out.iter().find(|l| validate_path_len(**l).is_err()) {
        return Err(bad(&l.to_string(), &validate_path_len(l).unwrap_err()));
    }
    if out.is_empty() {
        return Err(bad(spec, "no length given"));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Path lengths as the command line gives them (`N`, `A..B`, `A..B:STEP`,
/// comma separated), parsed by [`parse_path_lens`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathLens(pub Vec<usize>);

impl std::str::FromStr for PathLens {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_path_lens(s).map(PathLens).map_err(|e| match e {
            LabError::Usage { message, fix } => format!("{message} ({fix})"),
            other => other.to_string(),
        })
    }
}

impl std::fmt::Display for PathLens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let items: Vec<String> = self.0.iter().map(usize::to_string).collect();
        f.write_str(&items.join(","))
    }
}

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Base profile name; the varied switches override it.
    pub profile: String,
    /// Varied switches, in factor order (first = slowest-changing).
    pub vary: Vec<String>,
    /// Path lengths, ascending.
    pub path_lens: Vec<usize>,
    /// Seeds `0..seeds`; seed 0 is the prototype probe.
    pub seeds: u64,
}

impl SweepSpec {
    /// Number of switch combinations, `2^vary.len()`.
    pub fn combos(&self) -> usize {
        1usize << self.vary.len()
    }

    /// Total number of cells (checked not to overflow by [`Self::validate_shape`]).
    pub fn total_cells(&self) -> usize {
        self.combos() * self.seeds as usize * self.path_lens.len()
    }

    /// Check the spec before anything runs; the cell cap counts the whole sweep.
    pub fn validate(&self) -> LabResult<()> {
        self.validate_for(None)
    }

    /// Check the spec before `shard` of it runs: the cell cap counts the
    /// cells that run (the shard's, or the whole sweep's without one), so
    /// a sweep too large for one process is split with `--shard i/n`.
    pub fn validate_for(&self, shard: Option<super::Shard>) -> LabResult<()> {
        self.validate_shape()?;
        let total = self.total_cells();
        match shard.map_or(total, |s| s.cells_of(total)) {
            t if t <= MAX_CELLS => Ok(()),
            _ if shard.is_some() => Err(LabError::usage(
                format!("the shard has more than {MAX_CELLS} cells"),
                "split the sweep into more shards (a larger n in --shard i/n), or vary fewer switches",
            )),
            _ => Err(LabError::usage(
                format!("the sweep has more than {MAX_CELLS} cells"),
                "vary fewer switches, use fewer path lengths or seeds, or split it with --shard i/n (the cap counts a shard's cells)",
            )),
        }
    }

    /// The checks that do not depend on size: what `--merge` checks of a
    /// spec read back (merging runs no cell, so the cap does not apply).
    pub fn validate_shape(&self) -> LabResult<()> {
        config::profile(&self.profile)?;
        // Re-parse so a spec read from a shard file gets the same checks as `--vary`.
        if parse_vary(&self.vary.join(","))? != self.vary {
            return Err(LabError::usage(
                "switch names in the sweep spec are not in canonical form",
                "write each switch once, without spaces",
            ));
        }
        if self.path_lens.is_empty() || self.path_lens.windows(2).any(|w| w[0] >= w[1]) {
            return Err(LabError::usage(
                "path lengths must be a non-empty ascending list without repeats",
                "pass them through --path-len",
            ));
        }
        if self.seeds == 0 {
            return Err(LabError::usage(
                "--seeds 0 runs nothing",
                "use --seeds 1 or more",
            ));
        }
        let total = (self.vary.len() < 40)
            .then(|| {
                self.combos()
                    .checked_mul(usize::try_from(self.seeds).ok()?)?
                    .checked_mul(self.path_lens.len())
            })
            .flatten();
        match total {
            Some(_) => Ok(()),
            None => Err(LabError::usage(
                "the sweep has too many cells to number",
                "vary fewer switches, use fewer path lengths or seeds",
            )),
        }
    }

    /// The switch values of combination `combo` (bit `k-1-j` picks switch `j`'s level).
    pub fn values(&self, combo: usize) -> Vec<String> {
        let k = self.vary.len();
        self.vary
            .iter()
            .enumerate()
            .map(|(j, s)| levels(s)[(combo >> (k - 1 - j)) & 1].to_string())
            .collect()
    }

    /// Cell `index` as (combination, seed, path length).
    pub fn cell(&self, index: usize) -> (usize, u64, usize) {
        let lens = self.path_lens.len();
        let per_combo = self.seeds as usize * lens;
        let combo = index / per_combo;
        let seed = ((index % per_combo) / lens) as u64;
        (combo, seed, self.path_lens[index % lens])
    }
}
