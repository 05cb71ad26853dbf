//! Ingest: run a source reader on a blocking thread and write what it yields
//! into the lake in bounded chunks (each chunk one Delta version per table).
//!
//! Re-ingest is idempotent: a trajectory whose `traj_id` the lake holds is
//! not written again (ids of mini-coder and mswea trajectories include their
//! content hash), an Albedo run whose `run_sha` is unchanged is skipped, and
//! a changed run replaces its old rows; a changed mini-swe-agent file (a
//! `--redo-existing` rerun) replaces the trajectory it gave. Counts reconcile:
//! `read = written + unchanged + rejected`.

use arrow::record_batch::RecordBatch;
use futures::StreamExt;
use std::collections::{HashMap, HashSet};

use super::PipelineError;
use crate::columns::strings;
use crate::engine::{self, EngineError};
use crate::lake::{InputFile, Lake, LakeError, Writer};
use crate::source::rows::{self, EvalRow, JudgmentRow, QuestionRow, RejectRow, TrajectoryRow};
use crate::source::{albedo, mini_coder, mswea, Record};
use crate::storage::{Entry, Location, StorageResult};

/// Flush buffered rows once this many trajectories (`TURNLAKE_INGEST_FLUSH`
/// overrides it) or message bytes wait; each flush is one lake commit.
const FLUSH_TRAJECTORIES: usize = 4096;
const FLUSH_BYTES: usize = 256 << 20;

fn flush_trajectories() -> usize {
    std::env::var("TURNLAKE_INGEST_FLUSH")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(FLUSH_TRAJECTORIES)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Albedo { verify: bool },
    MiniCoder,
    Mswea,
}

impl InputKind {
    pub fn name(self) -> &'static str {
        match self {
            InputKind::Albedo { .. } => "albedo",
            InputKind::MiniCoder => "mini-coder",
            InputKind::Mswea => "mswea",
        }
    }

    fn verifies(self) -> bool {
        matches!(self, InputKind::Albedo { verify: true })
    }

    /// What the reader of this kind looks for, in words.
    fn looked_for(self) -> &'static str {
        match self {
            InputKind::Albedo { .. } => albedo::LOOKED_FOR,
            InputKind::MiniCoder => "*.parquet or *.jsonl files (the mini-coder dataset's shards)",
            InputKind::Mswea => {
                "*.traj.json or *.traj files (mini-swe-agent trajectories), in any subfolder"
            }
        }
    }
}

/// What one ingest did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IngestReport {
    pub read: u64,
    pub written: u64,
    pub unchanged: u64,
    pub rejected: u64,
    pub trajectories: u64,
    pub turns: u64,
    pub messages: u64,
    /// Trajectories replaced by a changed file's new one (mswea reruns).
    pub replaced: u64,
    /// Entries of the input folders the walk skipped (each warned about).
    pub skipped: u64,
    pub notes: Vec<String>,
}

impl IngestReport {
    pub fn reconciles(&self) -> bool {
        self.read == self.written + self.unchanged + self.rejected
    }
    /// Nothing usable came out of the input.
    pub fn nothing_usable(&self) -> bool {
        self.written + self.unchanged == 0
    }
}

/// What the lake already holds, for idempotent re-ingest.
struct Known {
    trajectories: KnownTrajectories,
    runs: HashMap<String, String>,
    rejects: HashSet<String>,
    /// The trajectory each mswea file gave (one file, one trajectory).
    mswea_files: HashMap<String, Vec<String>>,
}

/// The trajectory ids a lake holds and this ingest added, each as a 128-bit
/// digest: held as strings, the ids of a large lake were a large share of
/// `ingest`'s memory. Albedo's are kept per eval run, so that a changed run
/// can drop its own.
#[derive(Default)]
struct KnownTrajectories {
    albedo: HashMap<u128, HashSet<u128>>,
    others: HashSet<u128>,
}

impl KnownTrajectories {
    /// Add `traj_id`, of Albedo eval run `albedo_run` (`None` for another
    /// source's); false where it was known.
    fn insert(&mut self, traj_id: &str, albedo_run: Option<&str>) -> bool {
        let digest = super::id_digest(traj_id);
        match albedo_run {
            Some(run) => self
                .albedo
                .entry(super::id_digest(run))
                .or_default()
                .insert(digest),
            None => self.others.insert(digest),
        }
    }

    /// Add a trajectory row's id.
    fn insert_row(&mut self, t: &TrajectoryRow) -> bool {
        let albedo_run = (t.source == "albedo").then_some(t.eval_run_id.as_deref());
        self.insert(&t.traj_id, albedo_run.flatten())
    }

    /// Forget a trajectory of another source than Albedo (its rows were dropped).
    fn forget(&mut self, traj_id: &str) {
        self.others.remove(&super::id_digest(traj_id));
    }

    /// Forget the trajectories of eval run `eval_run_id`.
    fn forget_run(&mut self, eval_run_id: &str) {
        self.albedo.remove(&super::id_digest(eval_run_id));
    }
}

async fn known(lake: &Lake) -> Result<Known, PipelineError> {
    let ctx = engine::session(lake).await?;
    let column = |batches: &[arrow::record_batch::RecordBatch], name: &str| -> Vec<String> {
        strings(batches, name)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect()
    };
    // The names the session's view has (the session opens only what it reads).
    let tables: HashSet<String> = lake.view().await?.tables.into_keys().collect();
    let mut k = Known {
        trajectories: KnownTrajectories::default(),
        runs: HashMap::new(),
        rejects: HashSet::new(),
        mswea_files: HashMap::new(),
    };
    if tables.contains("trajectories") {
        // Batch by batch: the ids of a large lake are never held together.
        let context = "loading trajectory ids";
        let query = "SELECT traj_id, CASE WHEN source = 'albedo' THEN eval_run_id END AS albedo_run FROM trajectories";
        let mut ids = engine::stream_sql(&ctx, query, context).await?;
        while let Some(batch) = ids.next().await {
            let batch = [batch.map_err(EngineError::query(context))?];
            let runs = strings(&batch, "albedo_run");
            for (id, run) in strings(&batch, "traj_id").into_iter().zip(runs) {
                if let Some(id) = id {
                    k.trajectories.insert(&id, run.as_deref());
                }
            }
        }
    }
    if tables.contains("trajectories") {
        let b = engine::run_sql(
            &ctx,
            "SELECT input_file, traj_id FROM trajectories WHERE source = 'mswea' ORDER BY traj_id",
            "loading mswea trajectories",
        )
        .await?;
        for (file, id) in column(&b, "input_file")
            .into_iter()
            .zip(column(&b, "traj_id"))
        {
            k.mswea_files.entry(file).or_default().push(id);
        }
    }
    if tables.contains("evals") {
        let b = engine::run_sql(
            &ctx,
            "SELECT eval_run_id, run_sha FROM evals",
            "loading eval runs",
        )
        .await?;
        k.runs = column(&b, "eval_run_id")
            .into_iter()
            .zip(column(&b, "run_sha"))
            .collect();
    }
    // Runs with rows but no evals row were cut short: they are read again whole.
    for (table, query) in [
        (
            "trajectories",
            "SELECT DISTINCT eval_run_id FROM trajectories WHERE eval_run_id IS NOT NULL",
        ),
        ("questions", "SELECT DISTINCT eval_run_id FROM questions"),
    ] {
        if tables.contains(table) {
            let b = engine::run_sql(&ctx, query, "loading eval runs").await?;
            for id in column(&b, "eval_run_id") {
                k.runs.entry(id).or_default();
            }
        }
    }
    if tables.contains("rejects") {
        let b = engine::run_sql(&ctx, "SELECT reject_id FROM rejects", "loading rejects").await?;
        k.rejects = column(&b, "reject_id").into_iter().collect();
    }
    Ok(k)
}

/// What a reader reads: eval-run folders or input files.
enum Inputs {
    Runs(Vec<albedo::RunFolder>),
    Files(Vec<Entry>),
}

impl Inputs {
    fn entries(&self) -> Vec<&Entry> {
        match self {
            Inputs::Runs(runs) => runs.iter().flat_map(|r| r.artifacts.values()).collect(),
            Inputs::Files(files) => files.iter().collect(),
        }
    }
}

/// Files under `paths` whose name satisfies `want` (a path naming a file is
/// taken as given), in path order within each path; and how many entries
/// the walks skipped.
async fn files_under(
    paths: &[Location],
    want: fn(&str) -> bool,
) -> StorageResult<(Vec<Entry>, u64)> {
    let mut out = Vec::new();
    let mut skipped = 0;
    for p in paths {
        let listing = p.list().await?;
        skipped += listing.skipped;
        out.extend(
            listing
                .entries
                .into_iter()
                .filter(|e| e.location.same(p) || e.location.file_name().is_some_and(|n| want(&n))),
        );
    }
    Ok((out, skipped))
}

/// What `kind` reads under `paths`, and how many entries the walks skipped.
async fn list_inputs(kind: InputKind, paths: &[Location]) -> StorageResult<(Inputs, u64)> {
    Ok(match kind {
        InputKind::Albedo { .. } => {
            let (runs, skipped) = albedo::run_folders(paths).await?;
            (Inputs::Runs(runs), skipped)
        }
        InputKind::MiniCoder => {
            let (files, skipped) = files_under(paths, mini_coder::wants).await?;
            (Inputs::Files(files), skipped)
        }
        InputKind::Mswea => {
            let (files, skipped) = files_under(paths, mswea::wants).await?;
            (Inputs::Files(files), skipped)
        }
    })
}

/// The input files an ingest reads, for its lake commit: a local file with
/// its sha256 (read once more, on a blocking thread), an object with the
/// ETag the store gave (no second download).
fn input_files(inputs: &Inputs) -> std::io::Result<Vec<InputFile>> {
    inputs
        .entries()
        .into_iter()
        .map(|e| {
            let (size, sha256) = match e.location.as_local() {
                Some(p) => {
                    let (size, sha) = crate::digest::hash_file(p)?;
                    (size, Some(sha))
                }
                None => (e.size, None),
            };
            Ok(InputFile {
                size,
                path: e.location.to_string(),
                sha256,
                etag: e.etag.clone().filter(|_| e.location.is_remote()),
            })
        })
        .collect()
}

/// Run the reader for `kind` over `inputs`, sending records to `tx`.
fn read_all(
    kind: InputKind,
    inputs: &Inputs,
    runs: HashMap<String, String>,
    players: albedo::Players,
    tx: tokio::sync::mpsc::Sender<Record>,
) -> std::io::Result<()> {
    let mut emit = |r: Record| {
        // The writer only stops early on an error it reports itself.
        let _ = tx.blocking_send(r);
    };
    let total = inputs.entries().iter().map(|e| e.size).sum();
    let bar = crate::progress::bytes_bar(total, "ingest");
    match (kind, inputs) {
        (InputKind::Albedo { verify }, Inputs::Runs(folders)) => {
            let opts = albedo::AlbedoOptions { verify, players };
            for run in folders {
                per_file(&run.dir, || albedo::read_run(run, &opts, &runs, &mut emit))?;
                bar.inc(run.bytes());
            }
        }
        (InputKind::MiniCoder, Inputs::Files(files)) => {
            for f in files {
                per_file(&f.location, || {
                    mini_coder::read_file(f, &|n| bar.inc(n), &mut emit)
                })?;
            }
        }
        (InputKind::Mswea, Inputs::Files(files)) => {
            for f in files {
                per_file(&f.location, || mswea::read_file(f, &mut emit))?;
                bar.inc(f.size);
            }
        }
        _ => unreachable!("list_inputs lists runs for albedo and files otherwise"),
    }
    bar.finish_and_clear();
    Ok(())
}

#[derive(Default)]
struct Buffer {
    evals: Vec<EvalRow>,
    trajectories: rows::TrajectoryColumns,
    messages: rows::MessageColumns,
    turns: rows::TurnColumns,
    questions: Vec<QuestionRow>,
    judgments: Vec<JudgmentRow>,
    rejects: Vec<RejectRow>,
    message_bytes: usize,
    flush_at: usize,
}

impl Buffer {
    fn new() -> Buffer {
        Buffer {
            flush_at: flush_trajectories(),
            ..Default::default()
        }
    }

    /// An empty buffer whose message and turn columns have room for what
    /// this one holds: flushes are alike in size.
    fn next(&self) -> Buffer {
        Buffer {
            messages: self.messages.sized_like(),
            turns: self.turns.sized_like(),
            ..Buffer::new()
        }
    }

    fn full(&self) -> bool {
        self.trajectories.len() >= self.flush_at || self.message_bytes >= FLUSH_BYTES
    }

    fn holds_rows(&self) -> bool {
        !(self.evals.is_empty()
            && self.trajectories.is_empty()
            && self.questions.is_empty()
            && self.judgments.is_empty()
            && self.rejects.is_empty())
    }

    /// The rows as the lake's batches, in the order they are written.
    fn into_batches(self) -> Result<Vec<(&'static str, RecordBatch)>, LakeError> {
        let mut out = Vec::new();
        if !self.evals.is_empty() {
            out.push(("evals", rows::evals_batch(&self.evals)?));
        }
        if !self.trajectories.is_empty() {
            out.push(("trajectories", self.trajectories.finish()?));
            out.push(("messages", self.messages.finish()?));
            out.push(("turns", self.turns.finish()?));
        }
        if !self.questions.is_empty() {
            out.push(("questions", rows::questions_batch(&self.questions)?));
        }
        if !self.judgments.is_empty() {
            out.push(("judgments", rows::judgments_batch(&self.judgments)?));
        }
        if !self.rejects.is_empty() {
            out.push(("rejects", rows::rejects_batch(&self.rejects)?));
        }
        Ok(out)
    }
}

/// Write `batches`, then make them visible in one lake commit: a crash in
/// between leaves none of them, and a rerun writes them again.
async fn write_batches(
    lake: &Lake,
    writer: &mut Writer,
    batches: Vec<(&'static str, RecordBatch)>,
) -> Result<(), LakeError> {
    for (table, batch) in batches {
        lake.append(table, vec![batch]).await?;
    }
    writer.commit().await?;
    Ok(())
}

/// The lake writes of one ingest. A full buffer is written by a task of its
/// own while the reader fills the next one, so parsing and Parquet encoding
/// run at once instead of in turn; writes keep their order, one at a time.
struct Flusher {
    lake: Lake,
    writer: Option<Writer>,
    in_flight: Option<tokio::task::JoinHandle<(Writer, Result<(), LakeError>)>>,
}

impl Flusher {
    fn new(lake: &Lake, writer: Writer) -> Flusher {
        Flusher {
            lake: lake.clone(),
            writer: Some(writer),
            in_flight: None,
        }
    }

    /// Start writing what `buf` holds (once the write before it has ended),
    /// leaving `buf` empty.
    async fn start(&mut self, buf: &mut Buffer) -> Result<(), PipelineError> {
        if !buf.holds_rows() {
            return Ok(());
        }
        let next = buf.next();
        let batches = std::mem::replace(buf, next).into_batches()?;
        self.wait().await?;
        let mut writer = self.writer.take().expect("no write in flight");
        let lake = self.lake.clone();
        self.in_flight = Some(tokio::spawn(async move {
            let written = write_batches(&lake, &mut writer, batches).await;
            (writer, written)
        }));
        Ok(())
    }

    /// The lake writer, once every write started has ended.
    async fn wait(&mut self) -> Result<&mut Writer, PipelineError> {
        if let Some(task) = self.in_flight.take() {
            let (writer, written) = task
                .await
                .map_err(|e| PipelineError::Reader(format!("a lake write {}", panic_message(e))))?;
            self.writer = Some(writer);
            written?;
        }
        Ok(self.writer.as_mut().expect("no write in flight"))
    }

    /// The lake writer, taken back once every write started has ended.
    async fn into_writer(mut self) -> Result<Writer, PipelineError> {
        self.wait().await?;
        Ok(self.writer.take().expect("no write in flight"))
    }

    /// Write what `buf` holds and wait until every write has ended.
    async fn flush(&mut self, buf: &mut Buffer) -> Result<&mut Writer, PipelineError> {
        self.start(buf).await?;
        self.wait().await
    }
}

/// Drop every row of an eval run, before its changed content is written.
async fn delete_run(lake: &Lake, eval_run_id: &str) -> Result<(), LakeError> {
    use datafusion::functions::expr_fn::starts_with;
    use datafusion::prelude::{col, lit};
    for table in ["evals", "trajectories", "questions", "judgments"] {
        lake.delete_where(table, col("eval_run_id").eq(lit(eval_run_id)))
            .await?;
    }
    let prefix = albedo::run_traj_prefix(eval_run_id);
    for table in ["messages", "turns"] {
        lake.delete_where(table, starts_with(col("traj_id"), lit(prefix.as_str())))
            .await?;
    }
    Ok(())
}

/// Drop every row of the trajectories `traj_ids`, before the new trajectory
/// of the file they came from is written.
async fn delete_trajectories(lake: &Lake, traj_ids: &[String]) -> Result<(), LakeError> {
    use datafusion::prelude::{col, lit};
    let ids: Vec<_> = traj_ids.iter().map(|id| lit(id.as_str())).collect();
    for table in ["trajectories", "messages", "turns"] {
        lake.delete_where(table, col("traj_id").in_list(ids.clone(), false))
            .await?;
    }
    Ok(())
}

/// What a reader thread that panicked said (rules run under `derive_checked`,
/// so this is a reader bug, reported with its message).
fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => format!("it panicked: {}", payload_text(payload.as_ref())),
        Err(e) => e.to_string(),
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Read one input file or folder; a panic in the reader becomes an error
/// that names the file and the panic's message.
fn per_file(path: &Location, read: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        Err(std::io::Error::other(format!(
            "{path}: the reader failed on a bug ({}); please report it",
            payload_text(payload.as_ref())
        )))
    })
}

/// Ingest `paths` of `kind` into `lake`; Albedo runs take who played from
/// their own dashboard entry, else from `players`.
pub async fn ingest(
    lake: &Lake,
    kind: InputKind,
    paths: Vec<Location>,
    players: albedo::Players,
) -> Result<IngestReport, PipelineError> {
    // Inputs that cannot be listed or read fail before the lake is touched.
    let (listed, skipped) = list_inputs(kind, &paths).await?;
    if listed.entries().is_empty() {
        return Err(PipelineError::NothingFound {
            kind: kind.name(),
            paths: paths
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            looked_for: kind.looked_for(),
        });
    }
    let listed = std::sync::Arc::new(listed);
    let inputs = {
        let listed = listed.clone();
        tokio::task::spawn_blocking(move || input_files(&listed))
            .await
            .map_err(|e| PipelineError::Reader(panic_message(e)))??
    };
    let writer = lake
        .begin(
            &format!("ingest {}", kind.name()),
            serde_json::json!({"paths": paths, "kind": kind.name(), "verify": kind.verifies()}),
        )
        .await?;
    let mut known = known(lake).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Record>(64);
    let runs = known.runs.clone();
    let reader = tokio::task::spawn_blocking(move || read_all(kind, &listed, runs, players, tx));

    let mut report = IngestReport {
        notes: writer
            .restored
            .iter()
            .map(|r| format!("an interrupted writer left uncommitted versions; restored: {r}"))
            .collect(),
        skipped,
        ..Default::default()
    };
    let mut flusher = Flusher::new(lake, writer);
    let mut buf = Buffer::new();
    let mut pending_evals: HashMap<String, Vec<EvalRow>> = HashMap::new();
    while let Some(record) = rx.recv().await {
        match record {
            Record::Unit(unit) => {
                report.read += 1;
                let before = report.trajectories;
                let had_run_rows = !unit.evals.is_empty()
                    || !unit.questions.is_empty()
                    || !unit.judgments.is_empty();
                for t in unit.trajectories {
                    if !known.trajectories.insert_row(&t.trajectory) {
                        continue;
                    }
                    if t.trajectory.source == mswea::SOURCE {
                        let file = &t.trajectory.input_file;
                        let new_id = t.trajectory.traj_id.clone();
                        let before = known.mswea_files.insert(file.clone(), vec![new_id]);
                        if let Some(old) = before.filter(|ids| !ids.is_empty()) {
                            let writer = flusher.flush(&mut buf).await?;
                            delete_trajectories(lake, &old).await?;
                            writer.commit().await?;
                            report.replaced += old.len() as u64;
                            old.iter().for_each(|id| known.trajectories.forget(id));
                            report.notes.push(format!(
                                "{file}: changed since it was ingested; its trajectory {} was replaced",
                                old.join(", ")
                            ));
                        }
                    }
                    report.trajectories += 1;
                    report.turns += t.turns.len() as u64;
                    report.messages += t.messages.len() as u64;
                    buf.trajectories.push(&t.trajectory);
                    for m in &t.messages {
                        buf.message_bytes += m.content.len();
                        buf.messages.push(m);
                    }
                    t.turns.iter().for_each(|turn| buf.turns.push(turn));
                }
                if report.trajectories > before || had_run_rows {
                    report.written += 1;
                } else {
                    report.unchanged += 1;
                }
                for e in unit.evals {
                    pending_evals
                        .entry(e.eval_run_id.clone())
                        .or_default()
                        .push(e);
                }
                buf.questions.extend(unit.questions);
                buf.judgments.extend(unit.judgments);
            }
            Record::Reject(r) => {
                report.read += 1;
                report.rejected += 1;
                if known.rejects.insert(r.reject_id.clone()) {
                    buf.rejects.push(r);
                }
            }
            Record::Unchanged(n) => {
                report.read += n;
                report.unchanged += n;
            }
            Record::ReplaceRun(id) => {
                let writer = flusher.flush(&mut buf).await?;
                delete_run(lake, &id).await?;
                writer.commit().await?;
                known.trajectories.forget_run(&id);
                let why = if known.runs.get(&id).is_some_and(String::is_empty) {
                    "an earlier ingest of it was interrupted"
                } else {
                    "it changed since it was ingested"
                };
                report
                    .notes
                    .push(format!("eval run {id}: {why}; its rows were replaced"));
            }
            Record::RunDone(id, eval) => {
                // The run's evals row goes in no earlier a lake commit than
                // its last row: a run with an evals row is whole.
                buf.evals
                    .extend(pending_evals.remove(&id).unwrap_or_default());
                buf.evals.extend(eval.map(|e| *e));
            }
            Record::Note(n) => report.notes.push(n),
        }
        if buf.full() {
            flusher.start(&mut buf).await?;
        }
    }
    // A reader that stopped on an error (an input that could not be read)
    // leaves the lake at its last flush's commit, which a rerun completes.
    let read = match reader.await {
        Ok(r) => r.map_err(PipelineError::from),
        Err(e) => Err(PipelineError::Reader(panic_message(e))),
    };
    if let Err(e) = read {
        flusher.into_writer().await?.release().await?;
        return Err(e);
    }
    // The input files are recorded as read in the commit that completes them.
    let wrote_any = buf.holds_rows() || report.written > 0 || report.rejected > 0;
    flusher.wait().await?.add_inputs(inputs);
    if buf.holds_rows() {
        flusher.start(&mut buf).await?;
    } else if wrote_any {
        flusher.wait().await?.commit().await?;
    }
    flusher.into_writer().await?.release().await?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_trajectories_skip_repeats_and_a_replaced_run_forgets_only_its_own() {
        let mut known = KnownTrajectories::default();
        // Run ids as verdict.json gives them: one is a prefix of another,
        // one holds a `/`.
        let ids = [
            (albedo::traj_id("r1", "s1", "challenger"), Some("r1")),
            (albedo::traj_id("r10", "s1", "challenger"), Some("r10")),
            (albedo::traj_id("r1/b", "s1", "challenger"), Some("r1/b")),
            (albedo::traj_id("r2", "s1", "challenger"), Some("r2")),
            ("mini_coder/django__django-1/3f2a".to_string(), None),
            ("mswea/run/astropy__astropy-7".to_string(), None),
        ];
        for (id, run) in &ids {
            assert!(known.insert(id, *run), "{id} is new");
            assert!(!known.insert(id, *run), "{id} is known");
        }
        known.forget_run("r1/b");
        known.forget_run("r1");
        let again: Vec<bool> = ids.iter().map(|(id, run)| known.insert(id, *run)).collect();
        assert_eq!(again, [true, false, true, false, false, false]);
    }
}
