//! One reader per raw input format. A reader runs on a blocking thread,
//! turns each input record (a JSONL line, a Parquet row, a traj.json file)
//! into rows — or into a reject with its reason — and hands them to the
//! ingest writer through a callback. Readers know nothing of the lake.

pub mod albedo;
pub mod derive;
pub(crate) mod json;
pub mod mini_coder;
pub mod mswea;
pub mod rows;

use std::path::{Path, PathBuf};

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
    /// An eval run whose content changed since it was ingested: drop its old rows first.
    ReplaceRun(String),
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
    file: &Path,
    line: Option<i64>,
    field: Option<&str>,
    reason: String,
    raw: &[u8],
) -> Record {
    let input_file = file.display().to_string();
    let reject_id = derive::sha256_hex(format!("{input_file}\0{line:?}\0{field:?}").as_bytes());
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

/// Files under `paths` (files as given, folders searched recursively) whose
/// name satisfies `want`, in a stable order.
pub fn collect_files(
    paths: &[PathBuf],
    want: impl Fn(&str) -> bool,
) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            let mut found = Vec::new();
            while let Some(dir) = stack.pop() {
                for entry in std::fs::read_dir(&dir)? {
                    let path = entry?.path();
                    if path.is_dir() {
                        stack.push(path);
                    } else if path.file_name().and_then(|n| n.to_str()).is_some_and(&want) {
                        found.push(path);
                    }
                }
            }
            found.sort();
            out.extend(found);
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: no such file or folder", p.display()),
            ));
        }
    }
    Ok(out)
}

/// Split a file's bytes into (1-based line number, line) pairs, skipping blank lines.
pub fn lines(bytes: &[u8]) -> impl Iterator<Item = (i64, &[u8])> {
    bytes
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, l)| (i as i64 + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
}

#[cfg(test)]
mod props;
