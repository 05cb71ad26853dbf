//! One reader per raw input format. A reader runs on a blocking thread,
//! turns each input record (a JSONL line, a Parquet row, a traj.json file)
//! into rows — or into a reject with its reason — and hands them to the
//! ingest writer through a callback. Readers know nothing of the lake.

pub mod albedo;
pub mod dashboard;
pub mod derive;
pub mod json;
pub mod mini_coder;
pub mod mswea;
pub mod rows;
pub mod swebench;

use crate::storage::Location;

pub use derive::{derive, derive_checked, RawMessage, RawTrajectory, TrajectoryRows};
use rows::{EvalRow, JudgmentRow, QuestionRow, RejectRow};

/// The raw bytes kept with a reject.
pub const REJECT_RAW_CAP: usize = 4096;

/// What a reader hands to the writer.
#[derive(Debug)]
pub enum Record {
    /// One accepted input record and the rows it yields.
    Unit(Unit),
    /// One input record that could not be ingested.
    Reject(RejectRow),
    /// `n` input records whose content the lake already holds.
    Unchanged(u64),
    /// An eval run whose content changed since it was ingested (or whose
    /// ingest was interrupted): drop its old rows first.
    ReplaceRun(String),
    /// Every record of an eval run has been sent: its `evals` row, the mark
    /// of a whole run, may now be written (with the row itself when no
    /// verdict record carried it).
    RunDone(String, Option<Box<EvalRow>>),
    /// Something a user should hear about that is not a reject.
    Note(String),
}

#[derive(Debug, Default)]
pub struct Unit {
    pub trajectories: Vec<TrajectoryRows>,
    pub evals: Vec<EvalRow>,
    pub questions: Vec<QuestionRow>,
    pub judgments: Vec<JudgmentRow>,
}

/// Build a reject row; its id keys re-ingest (same file, line, field: same reject).
pub fn reject(
    source: &str,
    file: &Location,
    line: Option<i64>,
    field: Option<&str>,
    reason: String,
    raw: &[u8],
) -> Record {
    let input_file = file.to_string();
    let reject_id =
        crate::digest::sha256_hex(format!("{input_file}\0{line:?}\0{field:?}").as_bytes());
    Record::Reject(RejectRow {
        reject_id,
        source: source.to_string(),
        input_file,
        line,
        field: field.map(str::to_string),
        reason,
        raw: raw[..raw.len().min(REJECT_RAW_CAP)].to_vec(),
    })
}

/// Each non-blank line of `reader` with its 1-based number (`\r\n` or
/// `\n` endings), one line in memory at a time. A line longer than the
/// record limit ([`crate::limits`]) is handed over cut one byte past it (so
/// [`json::parse_record`] refuses it), the rest passed over unread into memory.
pub fn for_each_line(
    mut reader: impl std::io::BufRead,
    mut f: impl FnMut(i64, &[u8]),
) -> std::io::Result<()> {
    use std::io::BufRead;
    let cap = crate::limits::get().record_bytes;
    let mut buf = Vec::new();
    let mut number = 0i64;
    loop {
        buf.clear();
        if std::io::Read::take(&mut reader, cap.saturating_add(1)).read_until(b'\n', &mut buf)? == 0
        {
            return Ok(());
        }
        number += 1;
        if buf.len() as u64 > cap && buf.last() != Some(&b'\n') {
            pass_line(&mut reader)?;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if !line.iter().all(u8::is_ascii_whitespace) {
            f(number, line);
        }
    }
}

/// Read past the rest of a line, keeping none of it.
fn pass_line(reader: &mut impl std::io::BufRead) -> std::io::Result<()> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match memchr::memchr(b'\n', buf) {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod props;
