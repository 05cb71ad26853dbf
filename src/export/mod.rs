//! Sinks: files other tools train on.

pub mod manifest;
pub mod sft;
pub mod verl;

/// SQL for whether message `m`'s content still has the digest ingest stored:
/// its sha256 begins with `content_sha` (the first `STORED_SHA_HEX` hex
/// digits; lakes written before hold all 64, which the prefix test reads too).
fn content_intact_sql() -> String {
    format!(
        "(starts_with(encode(sha256(m.content), 'hex'), m.content_sha) \
         AND length(m.content_sha) >= {})",
        crate::source::derive::STORED_SHA_HEX
    )
}
