//! sha256 digests, as lowercase hex: of bytes, of a file, of a stream. Every
//! content key, input hash and manifest entry is one of these.

use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// The sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(bytes), &mut out).expect("32 bytes are 64 hex digits");
    String::from_utf8_lossy(&out).into_owned()
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
    // Most messages have none of the three (every mini-coder message).
    static NONE: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| fields_digest(None, None, None));
    if reasoning_content.is_none() && tool_calls.is_none() && tool_call_id.is_none() {
        return NONE.clone();
    }
    fields_digest(reasoning_content, tool_calls, tool_call_id)
}

fn fields_digest(
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
    stored_hex(&h.finalize())
}

/// The stored form of a digest: the hex of its first bytes.
pub fn stored_hex(digest: &[u8]) -> String {
    let mut out = [0u8; STORED_SHA_HEX];
    hex::encode_to_slice(&digest[..STORED_SHA_HEX / 2], &mut out)
        .expect("the digest's first bytes fill the digits");
    stored_hex_digits(&out)
}

/// The stored form of a digest given as hex digits: the first of them.
pub fn stored_hex_digits(hex_digits: &[u8]) -> String {
    String::from_utf8(hex_digits[..STORED_SHA_HEX].to_vec()).expect("hex digits are ASCII")
}

/// Whether a message still has the digests ingest stored: its content's
/// sha256 begins with `content_sha` (at least [`STORED_SHA_HEX`] digits;
/// lakes written before hold all 64), and its reasoning, tool calls and tool
/// call id give `fields_sha` (lakes written before it have none, and are
/// checked on content alone). Exports refuse a message that is not; SQL
/// calls it as `content_intact`.
pub fn content_intact(
    content: &str,
    content_sha: &str,
    [reasoning_content, tool_calls, tool_call_id]: [Option<&str>; 3],
    stored_fields_sha: Option<&str>,
) -> bool {
    content_sha.len() >= STORED_SHA_HEX
        && sha256_hex(content.as_bytes()).starts_with(content_sha)
        && stored_fields_sha
            .is_none_or(|f| fields_sha(reasoning_content, tool_calls, tool_call_id) == f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_form_is_the_full_hex_cut_short() {
        for text in ["", "x", "é 日本"] {
            let full = sha256_hex(text.as_bytes());
            assert_eq!(
                stored_hex(&Sha256::digest(text.as_bytes())),
                full[..STORED_SHA_HEX]
            );
            assert_eq!(stored_hex_digits(full.as_bytes()), full[..STORED_SHA_HEX]);
        }
    }

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

    #[test]
    fn a_message_is_intact_while_its_digests_match() {
        let content = "naïve";
        let full = super::sha256_hex(content.as_bytes());
        let short = &full[..super::STORED_SHA_HEX];
        let none = [None, None, None];
        assert!(super::content_intact(content, short, none, None));
        assert!(super::content_intact(content, &full, none, None));
        assert!(!super::content_intact(content, &full[..8], none, None));
        assert!(!super::content_intact("naive", short, none, None));
        let fields = [Some("think"), None, None];
        let stored = super::fields_sha(Some("think"), None, None);
        assert!(super::content_intact(content, short, fields, Some(&stored)));
        assert!(!super::content_intact(
            content,
            short,
            [Some("other"), None, None],
            Some(&stored)
        ));
    }
}
