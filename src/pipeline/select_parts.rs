//! The selection's candidates, built part by part so that no join holds
//! the whole lake: Albedo's per bucket of eval runs, mini-coder's per part
//! of the runs.
//!
//! `sql/select_sides.sql` joins each credited turn with its turn and side;
//! it runs once per bucket of whole eval runs (`buckets::side_buckets`: a
//! sample never spans two), and leaves `sides_gated`, `credit_rows`,
//! `credit_demotions` and `sides_tally`.
//!
//! `sql/select_runs.sql` finds each verified run's submit and its finish_mini
//! pick by joins that hold an entry per run. Run on the whole lake, they
//! grow with it; so the runs are split into parts by a hash of `traj_id`
//! (about [`PART_RUNS`] runs each) and the file runs once per
//! part. To read the lake once rather than once per part, the rows it reads
//! (`sql/select_runs_input.sql`) are first written to a Parquet folder per
//! part in a scratch directory. After each part, `sql/finish_keep.sql` keeps
//! finish_mini's rows so far (at most the cap), and `sql/select.sql` then
//! reads what the parts left: `runs_gated` and `runs_tally`.
//!
//! Over a local lake every table the buckets and parts build, and what is
//! gathered of them, is kept in the step's scratch folder as Parquet
//! ([`engine::scratch`]), not on the heap: these are the selection's
//! candidates, and grow with the lake.

use arrow::array::{ArrayRef, Int64Array};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::listing::ListingTable;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use datafusion::prelude::{cast, col, ident, lit, SessionContext};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::select::{register_config, SelectConfig};
use super::sqlstep::run_script;
use super::PipelineError;
use crate::columns::{i64s, scalar_i64, strings};
use crate::engine::{self, scratch, EngineError};

pub const GATES_SQL_FILE: &str = "sql/side_gates.sql";
pub const GATES_SQL: &str = include_str!("../../sql/side_gates.sql");
pub const CREDIT_KEEP_SQL_FILE: &str = "sql/credit_keep.sql";
pub const CREDIT_KEEP_SQL: &str = include_str!("../../sql/credit_keep.sql");
pub const SIDES_SQL_FILE: &str = "sql/select_sides.sql";
pub const SIDES_SQL: &str = include_str!("../../sql/select_sides.sql");
pub const INPUT_SQL_FILE: &str = "sql/select_runs_input.sql";
pub const INPUT_SQL: &str = include_str!("../../sql/select_runs_input.sql");
pub const RUNS_SQL_FILE: &str = "sql/select_runs.sql";
pub const RUNS_SQL: &str = include_str!("../../sql/select_runs.sql");
pub const KEEP_SQL_FILE: &str = "sql/finish_keep.sql";
pub const KEEP_SQL: &str = include_str!("../../sql/finish_keep.sql");

/// Mini-coder runs per part, about (the parts are `ceil(runs /
/// PART_RUNS)` buckets of a hash): a part's joins hold an entry per run,
/// verified or not (escape_mini takes every run's instance). Counted by
/// verified runs instead, a part's runs, and with them `select`'s heap peak
/// (a part's join), grew with the corpus.
pub const PART_RUNS: usize = 100_000;

/// How the selection splits its candidates: buckets of whole eval runs of at
/// most `bucket_sides` judged sides (where an eval run is smaller), parts of
/// about `part_runs` mini-coder runs.
#[derive(Debug, Clone, Copy)]
pub struct PartSizes {
    pub bucket_sides: usize,
    pub part_runs: usize,
}

impl Default for PartSizes {
    fn default() -> Self {
        PartSizes {
            bucket_sides: super::buckets::BUCKET_SIDES,
            part_runs: PART_RUNS,
        }
    }
}

/// Where each part's runs are read from.
enum Parts {
    /// One part: `sql/select_runs_input.sql`'s views over the lake.
    Whole,
    /// Several: each of those views split into parts in a scratch folder.
    Split(Vec<(&'static str, scratch::SplitTable)>),
}

/// Run `sql/select_sides.sql` over each bucket of at most `bucket_sides`
/// judged sides (whole eval runs; on a cluster one bucket, `ctx` itself) and
/// register in `ctx` what `sql/select.sql` reads of them: `sides_gated`,
/// `credit_rows`, `credit_demotions` and `sides_tally` (the buckets' counts,
/// summed).
pub async fn prepare_sides(
    ctx: &SessionContext,
    config: &SelectConfig,
    bucket_sides: usize,
    on_cluster: bool,
) -> Result<(), PipelineError> {
    let buckets = match on_cluster {
        true => vec![None],
        false => super::buckets::side_buckets(ctx, bucket_sides)
            .await?
            .into_iter()
            .map(Some)
            .collect(),
    };
    let mut gathered: [(&str, Gathered); 3] = [
        ("sides_gated", Gathered::default()),
        ("credit_rows", Gathered::default()),
        ("credit_demotions", Gathered::default()),
    ];
    let mut tally = [
        ("sides_judged", 0),
        ("sides_passing", 0),
        ("recovery_available", 0),
        ("recovery_passing", 0),
        ("escape_duel_samples", 0),
        ("escape_duel_after_failure", 0),
        ("escape_duel_failure_known", 0),
        ("escape_duel_after_repeat_run", 0),
        ("escape_duel_repeat_known", 0),
    ];
    // credit's one side per sample_id is chosen over the whole lake: a
    // sample recurs across eval runs, which buckets keep apart.
    register_config(ctx, config)?;
    run_script(ctx, GATES_SQL_FILE, GATES_SQL).await?;
    run_script(ctx, CREDIT_KEEP_SQL_FILE, CREDIT_KEEP_SQL).await?;
    let kept = engine::run_sql(ctx, "SELECT * FROM credit_kept", CREDIT_KEEP_SQL_FILE).await?;
    let recurring = engine::run_sql(
        ctx,
        "SELECT * FROM credit_recurring_tally",
        CREDIT_KEEP_SQL_FILE,
    )
    .await?;
    let kept_schema: SchemaRef = {
        let err = EngineError::query(CREDIT_KEEP_SQL_FILE);
        let frame = ctx.table("credit_kept").await.map_err(err)?;
        Arc::new(frame.schema().as_arrow().clone())
    };
    // One bucket's session at a time: each holds its own tables.
    for bucket in buckets {
        let bucket_session = bucket.is_some();
        let (session, file) = match bucket {
            None => (ctx.clone(), SIDES_SQL_FILE.to_string()),
            Some(bucket) => {
                let tables = ["trajectories", "turns", "turn_credit", "judgments"];
                let file = format!("{SIDES_SQL_FILE} over {bucket}");
                (bucket.session(ctx, &tables, &[]).await?, file)
            }
        };
        let q = |sql: &'static str| engine::run_sql(&session, sql, SIDES_SQL_FILE);
        if bucket_session {
            register_config(&session, config)?;
            run_script(&session, GATES_SQL_FILE, GATES_SQL).await?;
            register(&session, "credit_kept", kept_schema.clone(), kept.clone())?;
        }
        run_script(&session, &file, SIDES_SQL).await?;
        for (table, rows) in gathered.iter_mut() {
            rows.add(&session, table, None).await?;
        }
        add_counts(&mut tally, &q("SELECT * FROM sides_tally").await?);
    }
    for (table, rows) in gathered {
        rows.register(ctx, table)?;
    }
    let count = |name: &str| {
        i64s(&recurring, name)
            .first()
            .copied()
            .flatten()
            .unwrap_or(0)
    };
    let mut tally = tally.to_vec();
    tally.push(("credit_samples_recurring", count("samples")));
    tally.push(("credit_runs_dropped", count("runs_dropped")));
    register_counts(ctx, "sides_tally", &tally)
}

/// Run `sql/select_runs.sql` over each part of the mini-coder runs (about
/// `part_runs` runs each) and register in `ctx` what
/// `sql/select.sql` reads of them: `runs_gated` (every escape_mini candidate,
/// and of finish_mini's those demoted and those kept) and `runs_tally`
/// (finish_mini's counts). On a cluster the runs are one part.
pub async fn prepare_runs(
    ctx: &SessionContext,
    config: &SelectConfig,
    part_runs: usize,
    on_cluster: bool,
) -> Result<(), PipelineError> {
    run_script(ctx, INPUT_SQL_FILE, INPUT_SQL).await?;
    let runs = scalar_i64(&engine::run_sql(ctx, "SELECT n FROM run_count", INPUT_SQL_FILE).await?);
    let count = (runs.max(0) as usize).div_ceil(part_runs.max(1));
    let parts = match on_cluster || count <= 1 {
        true => Parts::Whole,
        false => split(ctx, count).await?,
    };
    let mut gated = Gathered::default();
    let mut best: Vec<RecordBatch> = Vec::new();
    let mut tally = [
        ("finish_before_gate", 0),
        ("finish_passing", 0),
        ("finish_passing_submit", 0),
    ];
    // Instances with a finish_mini row that trains (one may have runs in
    // several parts), by a 128-bit digest of their id, smaller than the id.
    let mut instances = HashSet::new();
    for part in 0..parts.count() {
        let session = parts.session(ctx, part).await?;
        let q = |sql: &'static str| engine::run_sql(&session, sql, RUNS_SQL_FILE);
        register_config(&session, config)?;
        let file = format!("{RUNS_SQL_FILE}, part {} of {}", part + 1, parts.count());
        run_script(&session, &file, RUNS_SQL).await?;
        let not_kept = col("mix")
            .not_eq(lit("finish_mini"))
            .or(col("demoted").is_not_null());
        gated.add(&session, "part_gated", Some(not_kept)).await?;
        add_counts(&mut tally, &q("SELECT * FROM part_tally").await?);
        let ids = q("SELECT DISTINCT instance_id FROM part_finish_rows").await?;
        let ids = strings(&ids, "instance_id").into_iter().flatten();
        instances.extend(ids.map(|id| super::id_digest(&id)));
        best = keep_finish(&session, std::mem::take(&mut best)).await?;
        if part + 1 == parts.count() {
            gated.add(&session, "finish_best", None).await?;
        }
    }
    gated.register(ctx, "runs_gated")?;
    let mut counts = tally.to_vec();
    counts.push(("finish_instances", instances.len() as i64));
    register_counts(ctx, "runs_tally", &counts)
}

/// finish_mini's rows kept after this part: `sql/finish_keep.sql` over the
/// part's rows that train and those kept before it.
async fn keep_finish(
    session: &SessionContext,
    before: Vec<RecordBatch>,
) -> Result<Vec<RecordBatch>, PipelineError> {
    let finish_rows = match before.first() {
        Some(first) => {
            register(session, "finish_best_before", first.schema(), before)?;
            "CREATE VIEW finish_rows AS SELECT * FROM part_finish_rows UNION ALL SELECT * FROM finish_best_before"
        }
        None => "CREATE VIEW finish_rows AS SELECT * FROM part_finish_rows",
    };
    engine::run_sql(session, finish_rows, KEEP_SQL_FILE).await?;
    run_script(session, KEEP_SQL_FILE, KEEP_SQL).await?;
    Ok(engine::run_sql(session, "SELECT * FROM finish_best", KEEP_SQL_FILE).await?)
}

/// Write the rows of `sql/select_runs_input.sql`'s views into a Parquet
/// folder per part: one pass over the lake.
async fn split(ctx: &SessionContext, parts: usize) -> Result<Parts, PipelineError> {
    let err = EngineError::query(format!("{INPUT_SQL_FILE}: splitting the runs into parts"));
    let scratch = scratch::scratch_of(ctx).ok_or_else(|| {
        err(DataFusionError::Internal(
            "no scratch folder for the parts".into(),
        ))
    })?;
    let dir = scratch.folder("runs").await.map_err(&err)?;
    let mut splits = Vec::new();
    for table in ["run_turns", "run_trajectories"] {
        let split = scratch::write_parts(ctx, table, parts, &dir.join(table))
            .await
            .map_err(&err)?;
        splits.push((table, split));
    }
    Ok(Parts::Split(splits))
}

impl Parts {
    fn count(&self) -> usize {
        match self {
            Parts::Whole => 1,
            // Every view was split alike.
            Parts::Split(splits) => splits.first().map_or(1, |(_, s)| s.parts()),
        }
    }

    /// The session `part` runs in: `ctx` itself for the whole, else one on
    /// its runtime whose `run_turns` and `run_trajectories` are the part's.
    async fn session(
        &self,
        ctx: &SessionContext,
        part: usize,
    ) -> Result<SessionContext, PipelineError> {
        let splits = match self {
            Parts::Whole => return Ok(ctx.clone()),
            Parts::Split(splits) => splits,
        };
        let err = EngineError::query(format!("{RUNS_SQL_FILE}: reading part {part} of the runs"));
        let session = engine::sub_session(ctx);
        for (table, split) in splits {
            // No rows where no run of the lake fell in this part.
            let rows = split.part(&session, part).await.map_err(&err)?;
            session.register_table(*table, rows).map_err(&err)?;
        }
        Ok(session)
    }
}

/// Register `rows` as `name` in `ctx`, replacing any table of that name.
fn register(
    ctx: &SessionContext,
    name: &str,
    schema: SchemaRef,
    rows: Vec<RecordBatch>,
) -> Result<(), PipelineError> {
    let err = EngineError::query(format!("registering {name}"));
    let table = MemTable::try_new(schema, vec![rows]).map_err(&err)?;
    let _ = ctx.deregister_table(name);
    ctx.register_table(name, Arc::new(table)).map_err(&err)?;
    Ok(())
}

/// Register one row of named counts as `name` in `ctx`.
fn register_counts(
    ctx: &SessionContext,
    name: &str,
    counts: &[(&str, i64)],
) -> Result<(), PipelineError> {
    let columns = counts
        .iter()
        .map(|(column, n)| (*column, Arc::new(Int64Array::from(vec![*n])) as ArrayRef));
    let row = RecordBatch::try_from_iter(columns)
        .map_err(|e| EngineError::query(format!("registering {name}"))(e.into()))?;
    register(ctx, name, row.schema(), vec![row])
}

/// Add the counts of a one-row result to `sums`, column by column.
fn add_counts(sums: &mut [(&str, i64)], counts: &[RecordBatch]) {
    for (name, sum) in sums.iter_mut() {
        *sum += i64s(counts, name).first().copied().flatten().unwrap_or(0);
    }
}

/// A table's rows gathered from the sessions of several buckets or parts:
/// written to the scratch folder, or (on a cluster, which has none) held.
#[derive(Default)]
struct Gathered {
    /// The schema of the first session's rows, which the others' are cast to.
    schema: Option<Schema>,
    folders: Vec<PathBuf>,
    rows: Vec<RecordBatch>,
}

impl Gathered {
    /// Add the rows of `table` in `session` (those that meet `filter`).
    async fn add(
        &mut self,
        session: &SessionContext,
        table: &str,
        filter: Option<Expr>,
    ) -> Result<(), PipelineError> {
        let err = EngineError::query(format!("gathering {table}"));
        let whole = filter.is_none();
        let mut frame = session.table(table).await.map_err(&err)?;
        if let Some(filter) = filter {
            frame = frame.filter(filter).map_err(&err)?;
        }
        let schema = self
            .schema
            .get_or_insert_with(|| frame.schema().as_arrow().clone());
        if whole {
            if let Some(folders) = kept_folders(session, table, schema).await {
                self.folders.extend(folders);
                return Ok(());
            }
        }
        // A session over string views and one over plain strings give the same rows.
        let columns = schema
            .fields()
            .iter()
            .map(|f| cast(ident(f.name()), f.data_type().clone()).alias(f.name()))
            .collect::<Vec<_>>();
        let frame = frame.select(columns).map_err(&err)?;
        match scratch::scratch_of(session) {
            Some(scratch) => {
                let folder = scratch.folder(table).await.map_err(&err)?;
                scratch::write(frame, &folder).await.map_err(&err)?;
                self.folders.push(folder);
            }
            None => self.rows.extend(frame.collect().await.map_err(&err)?),
        }
        Ok(())
    }

    /// Register what was gathered as `name` in `ctx`, every field nullable.
    fn register(self, ctx: &SessionContext, name: &str) -> Result<(), PipelineError> {
        let err = EngineError::query(format!("gathering {name}"));
        let schema = self
            .schema
            .expect("rows gathered from at least one session");
        if self.folders.is_empty() {
            let schema = scratch::nullable(&schema);
            let rows = self.rows.into_iter().map(|b| b.with_schema(schema.clone()));
            let rows = rows.collect::<Result<Vec<_>, _>>();
            return register(ctx, name, schema, rows.map_err(|e| err(e.into()))?);
        }
        let table = scratch::table_over(&self.folders, &schema).map_err(&err)?;
        let _ = ctx.deregister_table(name);
        ctx.register_table(name, table).map_err(&err)?;
        Ok(())
    }
}

/// The scratch folders that already hold all of `table` in `session`, in
/// `schema`'s types: those rows need no second write.
async fn kept_folders(
    session: &SessionContext,
    table: &str,
    schema: &Schema,
) -> Option<Vec<PathBuf>> {
    let provider = session.table_provider(table).await.ok()?;
    let listing = provider.downcast_ref::<ListingTable>()?;
    let same_types = listing.schema().fields().len() == schema.fields().len()
        && listing
            .schema()
            .fields()
            .iter()
            .zip(schema.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    let folder = |u: &datafusion::datasource::listing::ListingTableUrl| {
        url::Url::parse(u.as_str()).ok()?.to_file_path().ok()
    };
    let folders = listing.table_paths().iter().map(folder);
    same_types.then(|| folders.collect::<Option<Vec<_>>>())?
}
