//! sha256 digests, as lowercase hex: of bytes, of a file, of a stream. Every
//! content key, input hash and manifest entry is one of these.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// The sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// sha256 and size of a file, read in chunks.
pub fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    hash_reader(std::fs::File::open(path)?)
}

/// sha256 and size of everything `f` yields, read in chunks.
pub fn hash_reader(mut f: impl Read) -> std::io::Result<(u64, String)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((size, hex::encode(h.finalize())))
}

/// Hex digits of a sha256 the lake stores per message (`content_sha`) and per
/// turn (`turn_sha`): 64 bits. A full digest is incompressible and took more
/// room than the text it guards (two thirds of the lake); 64 bits still
/// catch any corruption and never collide within a trajectory, which every
/// join on them also matches.
pub const STORED_SHA_HEX: usize = 16;

/// sha256 (its first [`STORED_SHA_HEX`] hex digits) over a message's
/// reasoning, tool calls and tool call id, each length-prefixed or marked
/// absent (the SQL's `fields_sha` UDF calls this).
pub fn fields_sha(
    reasoning_content: Option<&str>,
    tool_calls: Option<&str>,
    tool_call_id: Option<&str>,
) -> String {
    let mut h = Sha256::new();
    for field in [reasoning_content, tool_calls, tool_call_id] {
        match field {
            Some(text) => {
                h.update([1]);
                h.update((text.len() as u64).to_le_bytes());
                h.update(text.as_bytes());
            }
            None => h.update([0]),
        }
    }
    hex::encode(h.finalize())[..STORED_SHA_HEX].to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_and_its_bytes_hash_alike() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let bytes = "naïve\n".repeat(300_000);
        std::fs::write(&p, &bytes).unwrap();
        let (size, sha) = super::hash_file(&p).unwrap();
        assert_eq!(
            (size, sha),
            (bytes.len() as u64, super::sha256_hex(bytes.as_bytes()))
        );
    }
}
