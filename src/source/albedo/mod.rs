//! Albedo (SN97) eval-run folders: `verdict.json`, `generated-samples.jsonl`,
//! `scoring-results.jsonl`. One eval run is the unit of re-ingest: its
//! `run_sha` (over the three files) says whether the lake already holds it.

mod run;
mod sample;

pub use run::read_run;

use std::collections::{BTreeMap, HashMap};

use crate::source::dashboard::{DashboardRun, ENTRY_FILE};
use crate::storage::{Entry, Location, StorageError, StorageResult};

pub const SOURCE: &str = "albedo";
pub const SIDES: [(&str, &str, &str); 2] = [
    ("previous_king", "previous_king_turns", "king_score"),
    ("challenger", "challenger_turns", "challenger_score"),
];
const GENERATED: &str = "generated-samples.jsonl";
const SCORING: &str = "scoring-results.jsonl";
const VERDICT: &str = "verdict.json";
/// Generated samples derived together on every core (a line can be 300 KB).
const SAMPLE_CHUNK: usize = 64;
/// The files of an eval-run folder, with the dashboard's artifact kind of each.
pub const ARTIFACTS: [(&str, &str); 3] = [
    (VERDICT, "EVAL_VERDICT"),
    (GENERATED, "GENERATED_SAMPLES"),
    (SCORING, "SCORING_RESULTS"),
];

/// The artifact a file holds, by its plain name or the name the dashboard
/// saves it under (`artifact_<KIND>_<plain name>`), and whether the name
/// was the plain one.
pub fn artifact_named(name: &str) -> Option<(&'static str, bool)> {
    ARTIFACTS.iter().find_map(|(plain, kind)| {
        if name == *plain {
            Some((*plain, true))
        } else {
            let saved = name.strip_prefix("artifact_")?.strip_prefix(kind)?;
            (saved.strip_prefix('_')? == *plain).then_some((*plain, false))
        }
    })
}

/// What `run_folders` looks for, in words.
pub const LOOKED_FOR: &str = "eval-run folders holding verdict.json, generated-samples.jsonl and \
scoring-results.jsonl (or the dashboard's saved names, artifact_EVAL_VERDICT_verdict.json, ...), \
at the path or one folder below it";

pub struct AlbedoOptions {
    /// Check each artifact's sha256 against verdict.json.
    pub verify: bool,
    /// Who played each run, from a dashboard file (a run's own
    /// `dashboard-entry.json` comes first).
    pub players: Players,
}

/// Dashboard entries by eval run id.
pub type Players = std::sync::Arc<HashMap<String, DashboardRun>>;

/// The traj_id of one duel side.
pub fn traj_id(eval_run_id: &str, sample_id: &str, side: &str) -> String {
    format!("{TRAJ_PREFIX}{eval_run_id}/{sample_id}/{side}")
}

/// How every Albedo `traj_id` starts.
pub const TRAJ_PREFIX: &str = "albedo/";

/// How every `traj_id` of eval run `eval_run_id` starts.
pub fn run_traj_prefix(eval_run_id: &str) -> String {
    format!("{TRAJ_PREFIX}{eval_run_id}/")
}

/// One eval-run folder and the artifacts found in it (its dashboard entry
/// among them, under [`ENTRY_FILE`], where harvest wrote one).
#[derive(Debug, Clone)]
pub struct RunFolder {
    pub dir: Location,
    pub artifacts: BTreeMap<&'static str, Entry>,
}

impl RunFolder {
    /// Total bytes the folder's artifacts hold (for progress).
    pub fn bytes(&self) -> u64 {
        self.artifacts.values().map(|e| e.size).sum()
    }
}

/// Eval-run folders under `paths`: a folder holding the artifacts, or a
/// folder of such folders (local or a prefix in an object store); and how
/// many entries the walks skipped.
pub async fn run_folders(paths: &[Location]) -> StorageResult<(Vec<RunFolder>, u64)> {
    let mut out = Vec::new();
    let mut skipped = 0;
    for p in paths {
        let listing = p.list().await?;
        skipped += listing.skipped;
        let files = listing.entries;
        if files.len() == 1 && files[0].location.same(p) {
            return Err(StorageError::Invalid {
                location: p.to_string(),
                reason: "not an eval-run folder".into(),
            });
        }
        let mut runs: BTreeMap<Vec<String>, RunFolder> = BTreeMap::new();
        let mut direct = false;
        for f in files {
            let Some(name) = f.location.file_name() else {
                continue;
            };
            let Some((artifact, plain)) = artifact_named(&name)
                .or_else(|| (name == ENTRY_FILE).then_some((ENTRY_FILE, true)))
            else {
                continue;
            };
            let Some(dir) = f.location.parent() else {
                continue;
            };
            let is_self = dir.same(p);
            let is_child = dir.parent().is_some_and(|d| d.same(p));
            if !(is_self || is_child) {
                continue;
            }
            direct |= is_self && artifact != ENTRY_FILE;
            let artifacts = &mut runs
                .entry(dir.sort_key())
                .or_insert_with(|| RunFolder {
                    dir: if is_self { p.clone() } else { dir },
                    artifacts: BTreeMap::new(),
                })
                .artifacts;
            // A file under its plain name wins over a saved copy beside it.
            if plain || !artifacts.contains_key(artifact) {
                artifacts.insert(artifact, f);
            }
        }
        // A dashboard entry alone is not a run.
        let runs = runs
            .into_values()
            .filter(|r| r.artifacts.keys().any(|a| *a != ENTRY_FILE));
        if direct {
            // The folder is a run itself: its subfolders are not read.
            out.extend(runs.filter(|r| r.dir.same(p)));
        } else {
            out.extend(runs);
        }
    }
    Ok((out, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_is_known_by_its_plain_or_its_saved_name_only() {
        assert_eq!(artifact_named("verdict.json"), Some((VERDICT, true)));
        assert_eq!(
            artifact_named("artifact_SCORING_RESULTS_scoring-results.jsonl"),
            Some((SCORING, false))
        );
        for other in [
            "artifact_EVAL_VERDICT_generated-samples.jsonl",
            "artifact_REMOTE_LOGS_remote-logs.txt",
            "artifact_EVAL_VERDICTverdict.json",
            "my-verdict.json",
        ] {
            assert_eq!(artifact_named(other), None, "{other}");
        }
    }
}
