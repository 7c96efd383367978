//! Splitting work across processes: `--shard i/n` takes the items whose
//! index is `i` mod `n` (sweep cells, corpus sessions), and a shard's output
//! carries a SHA-256 checksum so a merge refuses an edited or damaged file.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, LabResult};

/// One of `count` shards: the items whose index is `index` mod `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
}

impl Shard {
    /// Parse `i/n` with `i < n`.
    pub fn parse(spec: &str) -> LabResult<Shard> {
        let bad = || {
            LabError::usage(
                format!("bad shard {spec:?}"),
                "write it as i/n with 0 <= i < n, e.g. --shard 0/4",
            )
        };
        let (i, n) = spec.split_once('/').ok_or_else(bad)?;
        let index: usize = i.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// How many of items `0..total` this shard owns.
    pub fn cells_of(&self, total: usize) -> usize {
        total / self.count + usize::from(self.index < total % self.count)
    }

    /// Whether item `index` belongs to this shard.
    pub fn owns(&self, index: usize) -> bool {
        index % self.count == self.index
    }
}

/// SHA-256 of `bytes`, lower-case hex: the checksum a shard carries.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
