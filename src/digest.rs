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
