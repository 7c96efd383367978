//! Writes OpenAI's byte-pair vocabularies in the compact form the counter
//! reads (`tokens/bpe.rs`).
//!
//! `tiktoken-rs` embeds the published rank files and parses each into
//! three hash maps of owned byte vectors (encoder, decoder, sorted bytes):
//! about 45 MB and half a billion instructions for `o200k_base`, once per
//! process, where the lab only counts. Here, at build time, the same pinned
//! crate decodes every rank to its bytes, and the build writes them end to
//! end in rank order with their lengths: the counter embeds both and builds
//! one table of 32-bit slots at first use (~3 MB). The vocabularies come
//! from the pinned crate, never from a copy kept here, and the counter's
//! tests compare its counts with `tiktoken-rs` itself.

use std::io::Write;
use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    let out = Path::new(&out);
    // The regular ranks of each encoding run 0..n without a gap (the rank
    // files' lines); the special tokens above them are never counted as
    // ordinary text.
    write_vocabulary(
        out,
        "o200k",
        &tiktoken_rs::o200k_base().expect("tiktoken-rs embeds o200k_base"),
        199_998,
    );
    write_vocabulary(
        out,
        "cl100k",
        &tiktoken_rs::cl100k_base().expect("tiktoken-rs embeds cl100k_base"),
        100_256,
    );
}

/// `NAME.bytes`: every token's bytes in rank order; `NAME.lens`: each
/// token's length as a little-endian `u16`.
fn write_vocabulary(out: &Path, name: &str, bpe: &tiktoken_rs::CoreBPE, ranks: u32) {
    let mut bytes = Vec::new();
    let mut lens = Vec::new();
    let tokens = bpe._decode_native_and_split((0..ranks).collect());
    for token in tokens {
        let len = u16::try_from(token.len()).expect("a token is shorter than 64 KiB");
        assert!(len > 0, "{name}: an empty token");
        bytes.extend_from_slice(&token);
        lens.extend_from_slice(&len.to_le_bytes());
    }
    std::fs::File::create(out.join(format!("{name}.bytes")))
        .and_then(|mut f| f.write_all(&bytes))
        .expect("write the vocabulary's bytes");
    std::fs::File::create(out.join(format!("{name}.lens")))
        .and_then(|mut f| f.write_all(&lens))
        .expect("write the vocabulary's lengths");
}
