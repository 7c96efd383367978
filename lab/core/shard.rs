//! Splitting work across processes. A corpus's sessions go to shards by a
//! stable hash of their key ([`Shard::owns_key`]: the file's path inside
//! the corpus, an archive member's name), so adding sessions moves only the
//! new ones; sweep cells, a fixed grid rather than a growing corpus, go by
//! index mod `n` ([`Shard::owns`]). A shard's output carries a SHA-256
//! checksum so a merge refuses an edited or damaged file. `--shard auto/N`
//! takes the index from the job array the process runs in ([`Shard::parse`]).

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};

/// One of `count` shards: `index` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

/// The job-array variables `--shard auto/N` reads, in the order tried, and
/// what each index starts from: Kubernetes Indexed Jobs and Slurm arrays
/// (`--array=0-(N-1)`) count from 0, GNU parallel's job sequence number
/// (`{#}`) from 1. GNU parallel exports it as `PARALLEL_SEQ` (`man
/// parallel`; 20221122 here); `PARALLEL_SEQN`, the name it is sometimes
/// given, is read too.
pub const AUTO_VARIABLES: [(&str, usize); 4] = [
    ("JOB_COMPLETION_INDEX", 0),
    ("SLURM_ARRAY_TASK_ID", 0),
    ("PARALLEL_SEQ", 1),
    ("PARALLEL_SEQN", 1),
];

impl Shard {
    /// Parse `i/n` with `i < n`, or `auto/n` with the index from the first
    /// of [`AUTO_VARIABLES`] set in the environment (named on stderr).
    pub fn parse(spec: &str) -> LabResult<Shard> {
        let (shard, from) = Shard::parse_with(spec, |k| std::env::var(k).ok())?;
        if let Some(from) = from {
            eprintln!("shard {}/{} from {from}", shard.index, shard.count);
        }
        Ok(shard)
    }

    /// [`Shard::parse`] reading variables through `env`; with `auto`, also
    /// which variable gave the index (`NAME=VALUE`).
    pub fn parse_with(
        spec: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> LabResult<(Shard, Option<String>)> {
        let bad = || {
            LabError::usage(
                format!("bad shard {spec:?}"),
                "write it as i/n with 0 <= i < n, e.g. --shard 0/4, or auto/n inside a job array",
            )
        };
        let (i, n) = spec.split_once('/').ok_or_else(bad)?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 {
            return Err(bad());
        }
        if i.trim() == "auto" {
            return Shard::auto(count, env).map(|(s, from)| (s, Some(from)));
        }
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        if index >= count {
            return Err(bad());
        }
        Ok((Shard { index, count }, None))
    }

    fn auto(count: usize, env: impl Fn(&str) -> Option<String>) -> LabResult<(Shard, String)> {
        let names = AUTO_VARIABLES.map(|(k, _)| k).join(", ");
        let Some((name, base, value)) = AUTO_VARIABLES
            .iter()
            .find_map(|&(k, base)| env(k).map(|v| (k, base, v)))
        else {
            return Err(LabError::usage(
                format!("--shard auto/{count}: none of {names} is set"),
                "run it inside a Kubernetes Indexed Job, a Slurm array (--array=0-N-1) or GNU parallel, or give the index: --shard i/n",
            ));
        };
        let index = value
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|v| v.checked_sub(base))
            .filter(|i| *i < count)
            .ok_or_else(|| {
                LabError::usage(
                    format!(
                        "--shard auto/{count}: {name}={value:?} is not a shard of {count} (read from {names}, the first set)"
                    ),
                    format!(
                        "{name} must run from {base} to {} (e.g. sbatch --array=0-{}, parallel ::: with {count} arguments, completions: {count}), or give the index: --shard i/n",
                        count - 1 + base,
                        count - 1
                    ),
                )
            })?;
        Ok((Shard { index, count }, format!("{name}={value}")))
    }

    /// How many of items `0..total` this shard owns by index.
    pub fn cells_of(&self, total: usize) -> usize {
        total / self.count + usize::from(self.index < total % self.count)
    }

    /// Whether item `index` belongs to this shard, by index mod `count`
    /// (sweep cells: a fixed grid, so an index never moves).
    pub fn owns(&self, index: usize) -> bool {
        index % self.count == self.index
    }

    /// Whether the item keyed `key` belongs to this shard, by a stable hash
    /// of the key ([`owner_of_key`]): the corpus sessions' rule.
    pub fn owns_key(&self, key: &str) -> bool {
        owner_of_key(key, self.count) == self.index
    }
}

/// The shard of `count` that owns `key`: the first eight bytes of the key's
/// SHA-256, big-endian, mod `count`. Fixed by the key alone, so a session
/// keeps its shard however many sessions join the corpus, on every machine
/// and release.
pub fn owner_of_key(key: &str, count: usize) -> usize {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(head) % count as u64) as usize
}

/// SHA-256 of `bytes`, lower-case hex: the checksum a shard carries.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn auto_reads_the_first_array_variable_set() {
        let (s, from) = Shard::parse_with("auto/4", env(&[("SLURM_ARRAY_TASK_ID", "3")])).unwrap();
        assert_eq!(
            (s, from.as_deref()),
            (Shard { index: 3, count: 4 }, Some("SLURM_ARRAY_TASK_ID=3"))
        );
        let both = [("PARALLEL_SEQ", "1"), ("JOB_COMPLETION_INDEX", "2")];
        let (s, from) = Shard::parse_with("auto/4", env(&both)).unwrap();
        assert_eq!(
            (s.index, from.unwrap()),
            (2, "JOB_COMPLETION_INDEX=2".to_string())
        );
        // GNU parallel counts its jobs from 1.
        for name in ["PARALLEL_SEQ", "PARALLEL_SEQN"] {
            let (s, _) = Shard::parse_with("auto/4", env(&[(name, "4")])).unwrap();
            assert_eq!(s.index, 3);
        }
        let (s, from) = Shard::parse_with("1/4", env(&both)).unwrap();
        assert_eq!((s.index, from), (1, None));
    }

    #[test]
    fn auto_without_a_variable_or_out_of_range_is_a_usage_error() {
        let e = Shard::parse_with("auto/4", env(&[])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let text = e.to_string();
        for name in [
            "JOB_COMPLETION_INDEX",
            "SLURM_ARRAY_TASK_ID",
            "PARALLEL_SEQ",
        ] {
            assert!(text.contains(name), "{text}");
        }
        for vars in [
            [("SLURM_ARRAY_TASK_ID", "4")],
            [("PARALLEL_SEQ", "0")],
            [("JOB_COMPLETION_INDEX", "x")],
        ] {
            let e = Shard::parse_with("auto/4", env(&vars)).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(vars[0].0), "{e}");
        }
    }

    #[test]
    fn a_key_owner_is_stable_and_spread() {
        // Pinned: a change of hash would move every session of every corpus.
        // (`printf a/s0001.jsonl | sha256sum`: 0x… head mod 1000 = 459, mod 7 = 1.)
        assert_eq!(owner_of_key("a/s0001.jsonl", 1000), 459);
        assert_eq!(owner_of_key("a/s0001.jsonl", 7), 1);
        let mut per = [0usize; 4];
        for i in 0..400 {
            per[owner_of_key(&format!("s{i}.json"), 4)] += 1;
        }
        assert!(per.iter().all(|&n| (60..=140).contains(&n)), "{per:?}");
    }
}
