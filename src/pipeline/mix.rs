//! Mixture composition: `sft_mix` from the four products, each mix sampled
//! to its share (or all rows) by a seeded hash, and the composition report.

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::reproduction::Reproduction;
use super::select::{MixConfig, MixUnit, Quality, Selection, PRODUCTS};
use super::sqlstep::run_script;
use super::PipelineError;
use crate::columns::{f64s, i64s, strings};
use crate::engine::{self, scratch, EngineError};
use crate::lake::Lake;

pub const TRAIN_TURNS_SQL_FILE: &str = "sql/train_turns.sql";
pub const TRAIN_TURNS_SQL: &str = include_str!("../../sql/train_turns.sql");
pub const SQL_FILE: &str = "sql/mix.sql";
pub const SQL: &str = include_str!("../../sql/mix.sql");
pub const REPORT_INPUT_SQL_FILE: &str = "sql/mix_report_input.sql";
pub const REPORT_INPUT_SQL: &str = include_str!("../../sql/mix_report_input.sql");
pub const REPORT_SQL_FILE: &str = "sql/mix_report.sql";
pub const REPORT_SQL: &str = include_str!("../../sql/mix_report.sql");
pub const QUALITY_SQL_FILE: &str = "sql/row_quality.sql";
pub const QUALITY_SQL: &str = include_str!("../../sql/row_quality.sql");

/// How many rows each mix contributes, from what is available.
pub fn quotas(config: &MixConfig, available: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    if config.mode == "all" {
        return available.clone();
    }
    let total: f64 = config.shares.values().sum();
    let wanted: Vec<(&String, f64)> = config
        .shares
        .iter()
        .filter(|(_, s)| **s > 0.0)
        .map(|(m, s)| (m, s / total))
        .collect();
    // The largest mixture in which every mix can fill its share.
    let n = wanted
        .iter()
        .map(|(m, s)| available.get(*m).copied().unwrap_or(0) as f64 / s)
        .fold(f64::INFINITY, f64::min);
    let n = if n.is_finite() { n.floor() } else { 0.0 };
    wanted
        .into_iter()
        .map(|(m, s)| {
            (
                m.clone(),
                ((n * s).round() as i64).min(available.get(m).copied().unwrap_or(0)),
            )
        })
        .collect()
}

/// Each candidate row's trainable tokens (mix, row_id, tokens), when the
/// shares are token quotas, and the digest of the tokenizer and template
/// that counted them (the step's parameters record it).
#[derive(Debug, Clone, Default)]
pub struct TokenCounts {
    pub rows: Vec<(String, String, i64)>,
    pub tokenizer: String,
}

/// The mix step's parameters: the config, and the tokenizer that counted
/// the tokens when the shares are token quotas.
pub fn params(config: &MixConfig, tokenizer: Option<&str>) -> serde_json::Value {
    let mut v = serde_json::to_value(config).expect("the mix config serializes");
    if let (MixUnit::Tokens, Some(t)) = (config.unit, tokenizer) {
        v["tokenizer"] = t.into();
    }
    v
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MixRow {
    pub mix: String,
    pub rows: i64,
    pub train_turns: i64,
    pub share_rows: f64,
    pub share_train: f64,
    /// Trainable tokens and their share, when the shares are token quotas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_tokens: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_tokens: Option<f64>,
    pub recovery_turns: i64,
    pub avg_source_score: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MixReport {
    /// What `available` and the quotas count.
    pub unit: MixUnit,
    pub available: BTreeMap<String, i64>,
    pub mixes: Vec<MixRow>,
    /// cmd_kind -> share of train turns
    pub commands: Vec<(String, i64, f64)>,
    /// tag -> (turn, tag) pairs and their share of all earned tags
    pub tags: Vec<(String, i64, f64)>,
    /// The credit set's command mix, earned tags and earned question categories.
    pub credit_cmd: Vec<(String, i64, f64)>,
    pub credit_tags: Vec<(String, i64, f64)>,
    pub credit_categories: Vec<(String, i64, f64)>,
    /// Every figure the reference publishes for the mix, beside the lake's.
    pub reproduction: Reproduction,
}

/// Bytes each of the mix's sorts (one per partition) holds before it
/// spills: mix_cut's, and, when the products are not in row_id order, the
/// sort of every row sft_mix keeps. That sort gets two partitions' worth,
/// about three batches of rows (8,192 rows of sft_mix take about 2.5 MB),
/// which it must hold whole.
/// Small, so that the mix spills at every scale alike and its memory is the
/// budget's, not the mix's (a larger budget held a small mix whole and
/// spilled a large one, with more heap reading the spills back).
const SORT_BUDGET: usize = 4 << 20;

/// Rows of sft_mix per chunk of the report, about: a chunk's joins hold its
/// rows and their train turns (about 0.7 kB a row), so they stay near 7 MB
/// however large the mix. Small, so that a chunk's size hardly depends on
/// how the mix divides into chunks.
const REPORT_CHUNK_ROWS: usize = 10_000;

/// The tables sql/mix_report_input.sql reads besides `rows_in`.
const REPORT_READS: [&str; 4] = ["sft_mix", "turns", "turn_credit", "credit_citations"];

/// The views of sql/mix_report_input.sql written in chunks, each with the
/// name a chunk's session reads it by.
const REPORT_CHUNKED: [(&str, &str); 4] = [
    ("report_rows", "report_rows"),
    ("report_lake_turns", "turns"),
    ("report_credit", "turn_credit"),
    ("report_citations", "report_citations"),
];

/// Register `rows_in` as `table` and define the train-turn views over it.
pub async fn describe_rows(ctx: &SessionContext, table: &str) -> Result<(), PipelineError> {
    register_rows(ctx, table).await?;
    run_script(ctx, TRAIN_TURNS_SQL_FILE, TRAIN_TURNS_SQL).await?;
    Ok(())
}

/// Register `rows_in` as `table` (the rows a query describes or streams).
pub async fn register_rows(ctx: &SessionContext, table: &str) -> Result<(), PipelineError> {
    let err = EngineError::query("rows_in");
    let rows = ctx
        .table_provider(datafusion::common::TableReference::bare(table))
        .await
        .map_err(&err)?;
    let _ = ctx.deregister_table("rows_in");
    ctx.register_table("rows_in", rows).map_err(err)?;
    Ok(())
}

/// Counts of one key (a command kind, a tag, a category): they add up over
/// chunks of the mix, and make shares of their total at the end.
#[derive(Debug, Default)]
struct KeyCounts(BTreeMap<Option<String>, i64>);

impl KeyCounts {
    fn add(&mut self, batches: &[RecordBatch], key: &str) {
        for (k, n) in strings(batches, key)
            .into_iter()
            .zip(i64s(batches, "turns"))
        {
            *self.0.entry(k).or_default() += n.unwrap_or(0);
        }
    }

    /// (key, count, share of the total), most counted first, then by key (none last).
    fn shares(self) -> Vec<(String, i64, f64)> {
        let total: i64 = self.0.values().sum();
        let mut list: Vec<(Option<String>, i64)> = self.0.into_iter().collect();
        list.sort_by(|(ka, a), (kb, b)| {
            b.cmp(a)
                .then(ka.is_none().cmp(&kb.is_none()))
                .then(ka.cmp(kb))
        });
        list.into_iter()
            .map(|(k, n)| (k.unwrap_or_default(), n, n as f64 / total as f64))
            .collect()
    }
}

/// A mix's counts in sql/mix_report.sql's `mix_counts`.
#[derive(Debug, Default)]
struct MixCounts {
    rows: i64,
    train_turns: i64,
    recovery_turns: i64,
    score_sum: f64,
    scored_rows: i64,
}

impl MixCounts {
    fn avg_score(&self) -> Option<f64> {
        (self.scored_rows > 0).then(|| self.score_sum / self.scored_rows as f64)
    }
}

/// The report's figures as counts, added up over the chunks of the mix.
#[derive(Debug, Default)]
struct ReportCounts {
    mixes: BTreeMap<String, MixCounts>,
    commands: KeyCounts,
    tags: KeyCounts,
    credit_cmd: KeyCounts,
    credit_tags: KeyCounts,
    credit_categories: KeyCounts,
    credit_rows_with_train_turns: i64,
    credit_rows_with_recovery: i64,
}

impl ReportCounts {
    /// Add the per-mix row counts of sql/mix_report_input.sql.
    fn add_rows(&mut self, b: &[RecordBatch]) {
        let (mix, rows, train, score_sum, scored) = (
            strings(b, "mix"),
            i64s(b, "rows"),
            i64s(b, "train_turns"),
            f64s(b, "score_sum"),
            i64s(b, "scored_rows"),
        );
        for i in 0..mix.len() {
            let m = self.counts_of(&mix[i]);
            m.rows += rows[i].unwrap_or(0);
            m.train_turns += train[i].unwrap_or(0);
            m.score_sum += score_sum[i].unwrap_or(0.0);
            m.scored_rows += scored[i].unwrap_or(0);
        }
    }

    fn counts_of(&mut self, mix: &Option<String>) -> &mut MixCounts {
        self.mixes
            .entry(mix.clone().unwrap_or_default())
            .or_default()
    }

    /// Add the counts of sql/mix_report.sql, run over one chunk in `ctx`.
    async fn add_chunk(&mut self, ctx: &SessionContext) -> Result<(), PipelineError> {
        let q = |sql: &'static str| engine::run_sql(ctx, sql, REPORT_SQL_FILE);
        let b = q("SELECT * FROM mix_recovery").await?;
        for (mix, n) in strings(&b, "mix").iter().zip(i64s(&b, "recovery_turns")) {
            self.counts_of(mix).recovery_turns += n.unwrap_or(0);
        }
        self.commands
            .add(&q("SELECT * FROM mix_cmd").await?, "cmd_kind");
        self.tags.add(&q("SELECT * FROM mix_tags").await?, "tag");
        self.credit_cmd
            .add(&q("SELECT * FROM credit_set_cmd").await?, "cmd_kind");
        self.credit_tags
            .add(&q("SELECT * FROM credit_set_tags").await?, "tag");
        self.credit_categories
            .add(&q("SELECT * FROM credit_set_categories").await?, "category");
        let figures = q("SELECT * FROM credit_set_figures").await?;
        let figure = |name| i64s(&figures, name).first().copied().flatten().unwrap_or(0);
        self.credit_rows_with_train_turns += figure("rows_with_train_turns");
        self.credit_rows_with_recovery += figure("rows_with_recovery");
        Ok(())
    }

    fn report(
        self,
        unit: MixUnit,
        available: BTreeMap<String, i64>,
        kept_tokens: Option<BTreeMap<String, i64>>,
    ) -> MixReport {
        let tokens: i64 = kept_tokens.iter().flat_map(|k| k.values()).sum();
        let rows: i64 = self.mixes.values().map(|m| m.rows).sum();
        let train: i64 = self.mixes.values().map(|m| m.train_turns).sum();
        let share = |n: i64, total: i64| n as f64 / total as f64;
        let mixes = self
            .mixes
            .iter()
            .map(|(mix, m)| MixRow {
                mix: mix.clone(),
                rows: m.rows,
                train_turns: m.train_turns,
                share_rows: share(m.rows, rows),
                share_train: share(m.train_turns, train),
                train_tokens: kept_tokens
                    .as_ref()
                    .map(|k| k.get(mix).copied().unwrap_or(0)),
                share_tokens: kept_tokens
                    .as_ref()
                    .map(|k| share(k.get(mix).copied().unwrap_or(0), tokens)),
                recovery_turns: m.recovery_turns,
                avg_source_score: m.avg_score(),
            })
            .collect();
        let credit = self.mixes.get("credit");
        let figures = CreditFigures {
            recovery_turns: credit.map_or(0, |m| m.recovery_turns),
            rows_with_recovery: self.credit_rows_with_recovery as f64
                / self.credit_rows_with_train_turns.max(1) as f64,
            source_score: credit.and_then(MixCounts::avg_score),
        };
        let mut report = MixReport {
            unit,
            available,
            mixes,
            commands: self.commands.shares(),
            tags: self.tags.shares(),
            credit_cmd: self.credit_cmd.shares(),
            credit_tags: self.credit_tags.shares(),
            credit_categories: self.credit_categories.shares(),
            reproduction: Reproduction::default(),
        };
        report.reproduction = reproduction(&report, &figures);
        report
    }
}

/// What the reproduction table compares of the credit set beyond its shares.
struct CreditFigures {
    recovery_turns: i64,
    /// Of the credit rows with a train turn, the share with a recovery turn.
    rows_with_recovery: f64,
    source_score: Option<f64>,
}

/// The composition report of `sft_mix` (of `rows` rows), counted over
/// chunks of about `chunk_rows` rows (the rows of a share of its
/// trajectories, by a hash of `traj_id`). One pass over the lake writes
/// the rows and the turns and credit of their trajectories
/// (sql/mix_report_input.sql) into a scratch folder, split by chunk; each
/// chunk is then counted in a session of its own over its files. (A loop
/// that read `turns` per chunk took chunks x turns.)
async fn report(
    ctx: &SessionContext,
    (unit, available, kept_tokens): (
        MixUnit,
        BTreeMap<String, i64>,
        Option<BTreeMap<String, i64>>,
    ),
    rows: usize,
    chunk_rows: usize,
) -> Result<MixReport, PipelineError> {
    let chunks = rows.div_ceil(chunk_rows.max(1)).max(1);
    let scratch = tempfile::tempdir().map_err(PipelineError::Scratch)?;
    let err = EngineError::query(format!(
        "{REPORT_INPUT_SQL_FILE}: splitting the mix into chunks"
    ));
    let session = engine::sub_session(ctx);
    joins_as_written(&session, true);
    for table in REPORT_READS {
        let provider = ctx.table_provider(table).await.map_err(&err)?;
        session.register_table(table, provider).map_err(&err)?;
    }
    describe_rows(&session, "sft_mix").await?;
    run_script(&session, REPORT_INPUT_SQL_FILE, REPORT_INPUT_SQL).await?;
    let mut counts = ReportCounts::default();
    counts.add_rows(
        &engine::run_sql(
            &session,
            "SELECT * FROM mix_row_counts",
            REPORT_INPUT_SQL_FILE,
        )
        .await?,
    );
    let mut splits = Vec::new();
    for (view, _) in REPORT_CHUNKED {
        let folder = scratch.path().join(view);
        let split = scratch::write_parts(&session, view, chunks, &folder)
            .await
            .map_err(&err)?;
        splits.push(split);
    }
    // Every view was split alike (`chunks` rounded up alike).
    let chunks = splits.first().map_or(chunks, |s| s.parts());
    for chunk in 0..chunks {
        let err = EngineError::query(format!(
            "{REPORT_SQL_FILE}: counting chunk {chunk} of the mix"
        ));
        let session = engine::sub_session(ctx);
        for ((_, name), split) in REPORT_CHUNKED.iter().zip(&splits) {
            let rows = split.part(&session, chunk).await.map_err(&err)?;
            session.register_table(*name, rows).map_err(&err)?;
        }
        // Its joins build on the chunk's rows: its files have no statistics.
        joins_as_written(&session, false);
        describe_rows(&session, "report_rows").await?;
        run_script(&session, REPORT_SQL_FILE, REPORT_SQL).await?;
        counts.add_chunk(&session).await?;
    }
    Ok(counts.report(unit, available, kept_tokens))
}

/// Plan `session`'s joins as the report's SQL writes them: with join
/// reordering off, each builds on its left side; with `collect_left`, that
/// side is collected once and the other side's partitions stream past it
/// (the pass builds on the mix's keys, a few MB: repartitioning every turn
/// of the lake by key cost more than the join).
fn joins_as_written(session: &SessionContext, collect_left: bool) {
    let state = session.state_ref();
    let mut state = state.write();
    let optimizer = &mut state.config_mut().options_mut().optimizer;
    optimizer.join_reordering = false;
    if collect_left {
        optimizer.repartition_joins = false;
    }
}

/// The mix's reproduction table.
fn reproduction(r: &MixReport, figures: &CreditFigures) -> Reproduction {
    let share = |list: &[(String, i64, f64)], key: &str| {
        Some(100.0 * list.iter().find(|(k, _, _)| k == key).map_or(0.0, |x| x.2))
    };
    let mut t = Reproduction::new("Reproduction: mixture (turnlake mix)");
    let rows: i64 = r.mixes.iter().map(|m| m.rows).sum();
    t.add("mix.rows", Some(rows as f64));
    t.add(
        "mix.train_turns",
        Some(r.mixes.iter().map(|m| m.train_turns).sum::<i64>() as f64),
    );
    for (mix, _) in PRODUCTS {
        let m = r.mixes.iter().find(|m| m.mix == mix);
        t.add(
            &format!("mix.share.{mix}"),
            Some(100.0 * m.map_or(0.0, |m| m.share_rows)),
        );
    }
    let credit = r.mixes.iter().find(|m| m.mix == "credit");
    t.add("select.credit.rows", credit.map(|m| m.rows as f64));
    t.add(
        "select.credit.train_turns",
        credit.map(|m| m.train_turns as f64),
    );
    t.add(
        "mix.credit.recovery_turns",
        Some(figures.recovery_turns as f64),
    );
    t.add(
        "mix.credit.rows_with_recovery",
        Some(100.0 * figures.rows_with_recovery),
    );
    t.add("mix.credit.source_score", figures.source_score);
    for kind in ["cat -n", "sed -n", "cat", "find/ls"] {
        t.add(
            &format!("mix.credit.cmd.{kind}"),
            share(&r.credit_cmd, kind),
        );
    }
    t.add(
        "mix.credit.category.grounding",
        share(&r.credit_categories, "grounding"),
    );
    for tag in ["explore", "claims"] {
        t.add(&format!("mix.credit.tag.{tag}"), share(&r.credit_tags, tag));
    }
    t.note("tag and category shares are over (train turn, tag) pairs earned by valid yes-citations, each summing to 100%");
    t.note("the reference's `grounding` is a question category in the real scoring files, so it is compared with the category share");
    t
}

/// Register `mix_candidates`, the rows of the four products, which
/// sql/mix.sql samples. select writes each product in row_id order, the
/// order of sft_mix, and the products' row_ids (prefixed by their mix) do
/// not overlap: one table over their files, read one after another in
/// row_id order, gives the mix its rows in order, with neither a sort (one
/// that filled its budget and spilled at every scale) nor a merge (which
/// kept batches of every product waiting while it read the first). Products
/// not in order (an older lake) are read as they are, and sorted.
///
/// The session then plans no round-robin repartition: the candidates flow
/// in one stream through the joins with the quota and cut (a few rows) to
/// the writer. Dealt to two threads, they had to be merged again, and the
/// repartition's queues, over the step's memory budget, spilled.
pub async fn register_candidates(
    ctx: &SessionContext,
    config: &MixConfig,
) -> Result<(), PipelineError> {
    ctx.state_ref()
        .write()
        .config_mut()
        .options_mut()
        .optimizer
        .enable_round_robin_repartition = false;
    let tables: Vec<&str> = PRODUCTS.iter().map(|(_, table)| *table).collect();
    let err = EngineError::query("the union of the products");
    if !engine::register_sorted(ctx, "mix_products", &tables, "row_id").await? {
        let mut union = ctx.table(tables[0]).await.map_err(&err)?;
        for table in &tables[1..] {
            union = union
                .union(ctx.table(*table).await.map_err(&err)?)
                .map_err(&err)?;
        }
        ctx.register_table("mix_products", union.into_view())
            .map_err(&err)?;
    }
    // Each row's quality: what `select = "ranked"` takes best first (the
    // join with it gives up the products' order: the ranked mix sorts).
    let candidates = match config.select {
        Selection::Random => "SELECT *, CAST(0 AS DOUBLE) AS quality FROM mix_products",
        Selection::Ranked => {
            register_row_quality(ctx, "mix_products", &config.quality).await?;
            "SELECT p.*, coalesce(q.quality, 0) AS quality FROM mix_products p \
             LEFT JOIN row_quality q ON q.row_id = p.row_id"
        }
    };
    let view = ctx.sql(candidates).await.map_err(&err)?;
    let _ = ctx.deregister_table("mix_candidates");
    ctx.register_table("mix_candidates", view.into_view())
        .map_err(&err)?;
    Ok(())
}

/// Register `row_quality` (row_id, quality) over the rows of `table`
/// (sql/row_quality.sql), weighted by `quality`.
pub async fn register_row_quality(
    ctx: &SessionContext,
    table: &str,
    quality: &Quality,
) -> Result<(), PipelineError> {
    register_rows(ctx, table).await?;
    let weights = RecordBatch::try_from_iter(vec![
        (
            "credit",
            Arc::new(arrow::array::Float64Array::from(vec![quality.credit])) as ArrayRef,
        ),
        (
            "score",
            Arc::new(arrow::array::Float64Array::from(vec![quality.score])) as ArrayRef,
        ),
        (
            "scorer",
            Arc::new(arrow::array::Float64Array::from(vec![quality.scorer])) as ArrayRef,
        ),
    ])
    .map_err(|e| PipelineError::Params(e.into()))?;
    let _ = ctx.deregister_table("quality_weights");
    ctx.register_batch("quality_weights", weights)
        .map_err(PipelineError::Params)?;
    for t in ["turn_credit", "turn_labels"] {
        engine::register_empty_if_missing(ctx, t)?;
    }
    run_script(ctx, QUALITY_SQL_FILE, QUALITY_SQL).await?;
    Ok(())
}

/// Each row of `table` with its quality score under `quality`, by row_id.
pub async fn row_qualities(
    ctx: &SessionContext,
    table: &str,
    quality: &Quality,
) -> Result<BTreeMap<String, f64>, PipelineError> {
    register_row_quality(ctx, table, quality).await?;
    let b = engine::run_sql(
        ctx,
        "SELECT row_id, quality FROM row_quality",
        QUALITY_SQL_FILE,
    )
    .await?;
    Ok(strings(&b, "row_id")
        .into_iter()
        .zip(f64s(&b, "quality"))
        .filter_map(|(r, q)| Some((r?, q.unwrap_or(0.0))))
        .collect())
}

/// Count what each product offers, in the config's unit, and register
/// `mix_cost` (row_id, cost: 1 a row, or its trainable tokens) and
/// `mix_quota` (mix, take, available, seed), which sql/mix.sql samples by.
/// Returns what is available per mix.
pub async fn register_quota(
    ctx: &SessionContext,
    config: &MixConfig,
    tokens: Option<&TokenCounts>,
) -> Result<BTreeMap<String, i64>, PipelineError> {
    let mut available = BTreeMap::new();
    for (mix, table) in PRODUCTS {
        if !ctx.table_exist(table).map_err(PipelineError::Params)? {
            return Err(PipelineError::Missing(table, "run `turnlake select` first"));
        }
        let n = ctx
            .table(table)
            .await
            .map_err(PipelineError::Params)?
            .count()
            .await
            .map_err(PipelineError::Params)?;
        available.insert(mix.to_string(), n as i64);
    }
    let _ = ctx.deregister_table("mix_cost");
    match (config.unit, tokens) {
        (MixUnit::Tokens, Some(t)) => {
            available = available.keys().map(|m| (m.clone(), 0)).collect();
            for (mix, _, n) in &t.rows {
                *available.entry(mix.clone()).or_default() += n;
            }
            let batch = RecordBatch::try_from_iter(vec![
                (
                    "row_id",
                    Arc::new(StringArray::from_iter_values(t.rows.iter().map(|r| &r.1)))
                        as ArrayRef,
                ),
                (
                    "cost",
                    Arc::new(Int64Array::from_iter_values(t.rows.iter().map(|r| r.2))) as ArrayRef,
                ),
            ])
            .map_err(|e| PipelineError::Params(e.into()))?;
            ctx.register_table(
                "mix_cost",
                Arc::new(
                    MemTable::try_new(batch.schema(), vec![vec![batch]])
                        .map_err(PipelineError::Params)?,
                ),
            )
            .map_err(PipelineError::Params)?;
        }
        (MixUnit::Tokens, None) => return Err(PipelineError::Reader(
            "mix.unit = \"tokens\" needs each row's trainable tokens (turnlake mix counts them)"
                .into(),
        )),
        (MixUnit::Rows, _) => {
            let view = ctx
                .sql("SELECT row_id, CAST(1 AS BIGINT) AS cost FROM mix_candidates")
                .await
                .map_err(PipelineError::Params)?;
            ctx.register_table("mix_cost", view.into_view())
                .map_err(PipelineError::Params)?;
        }
    }
    let quota = quotas(config, &available);
    let batch = RecordBatch::try_from_iter(vec![
        (
            "mix",
            Arc::new(StringArray::from_iter_values(quota.keys())) as ArrayRef,
        ),
        (
            "take",
            Arc::new(Int64Array::from_iter_values(quota.values().copied())) as ArrayRef,
        ),
        (
            "available",
            Arc::new(Int64Array::from_iter_values(
                quota.keys().map(|m| available.get(m).copied().unwrap_or(0)),
            )) as ArrayRef,
        ),
        (
            "seed",
            Arc::new(Int64Array::from_iter_values(
                quota.keys().map(|_| config.seed),
            )) as ArrayRef,
        ),
    ])
    .map_err(|e| PipelineError::Params(e.into()))?;
    let _ = ctx.deregister_table("mix_quota");
    ctx.register_table(
        "mix_quota",
        Arc::new(
            MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(PipelineError::Params)?,
        ),
    )
    .map_err(PipelineError::Params)?;
    Ok(available)
}

/// The composition report of the lake's `sft_mix` as it stands, counted as
/// `mix` counts it (in `ctx`, a session over the lake; the web app's mix page).
pub async fn report_of_lake(ctx: &SessionContext) -> Result<MixReport, PipelineError> {
    let rows = ctx
        .table("sft_mix")
        .await
        .map_err(EngineError::query("reading sft_mix"))?
        .count()
        .await
        .map_err(EngineError::query("counting sft_mix"))?;
    report(
        ctx,
        (MixUnit::Rows, BTreeMap::new(), None),
        rows,
        REPORT_CHUNK_ROWS,
    )
    .await
}

/// Compose `sft_mix` in `lake` (sql/mix.sql), as one step, and report its composition.
/// With `unit = "tokens"`, `tokens` holds each candidate row's trainable tokens.
pub async fn build(
    lake: &Lake,
    config: &MixConfig,
    tokens: Option<&TokenCounts>,
) -> Result<MixReport, PipelineError> {
    build_with_report_chunks(lake, config, tokens, REPORT_CHUNK_ROWS).await
}

/// [`build`], the report counted in chunks of about `chunk_rows` rows.
pub async fn build_with_report_chunks(
    lake: &Lake,
    config: &MixConfig,
    tokens: Option<&TokenCounts>,
    chunk_rows: usize,
) -> Result<MixReport, PipelineError> {
    let step = super::step::Step::begin_with(
        Some(SORT_BUDGET),
        lake,
        &super::steps::MIX,
        params(config, tokens.map(|t| t.tokenizer.as_str())),
    )
    .await?;
    // A lake of one's own runs alone has no credit (no Albedo side was judged).
    if !lake.view().await?.tables.contains_key("judgments") {
        for table in ["turn_credit", "credit_citations"] {
            engine::register_empty_if_missing(&step.ctx, table)?;
        }
    }
    // The report counts the question categories credit_citations carries
    // since this release; checked before sft_mix is written.
    let citations = step
        .ctx
        .table("credit_citations")
        .await
        .map_err(EngineError::query("reading credit_citations"))?;
    if citations
        .schema()
        .field_with_unqualified_name("category")
        .is_err()
    {
        return Err(PipelineError::MissingColumn(
            "credit_citations",
            "category",
            "run `turnlake credit` again",
        ));
    }
    register_candidates(&step.ctx, config).await?;
    let available = register_quota(&step.ctx, config, tokens).await?;
    step.run_sql().await?;
    let rows = step
        .write_query(
            "sft_mix",
            "SELECT * FROM mix_rows ORDER BY row_id",
            "mix_rows",
        )
        .await?;
    let ctx = step.ctx.clone();
    step.finish().await?;
    engine::register(&ctx, lake, "sft_mix").await?;
    let kept_tokens = match config.unit {
        MixUnit::Rows => None,
        MixUnit::Tokens => {
            let b = engine::run_sql(
                &ctx,
                "SELECT m.mix, sum(c.cost) AS tokens FROM sft_mix m JOIN mix_cost c ON c.row_id = m.row_id GROUP BY m.mix",
                "the mix's trainable tokens",
            )
            .await?;
            Some(
                strings(&b, "mix")
                    .into_iter()
                    .zip(i64s(&b, "tokens"))
                    .map(|(m, n)| (m.unwrap_or_default(), n.unwrap_or(0)))
                    .collect(),
            )
        }
    };
    report(
        &ctx,
        (config.unit, available, kept_tokens),
        rows,
        chunk_rows,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: &str, shares: &[(&str, f64)]) -> MixConfig {
        MixConfig {
            mode: mode.into(),
            seed: 1,
            unit: MixUnit::Rows,
            select: Default::default(),
            quality: Default::default(),
            shares: shares.iter().map(|(m, s)| (m.to_string(), *s)).collect(),
        }
    }

    #[test]
    fn quotas_fill_shares_as_far_as_the_scarcest_mix_allows() {
        let available: BTreeMap<String, i64> = [
            ("credit", 100),
            ("escape_duel", 1000),
            ("escape_mini", 50),
            ("finish_mini", 5000),
        ]
        .iter()
        .map(|(m, n)| (m.to_string(), *n))
        .collect();
        let q = quotas(
            &config(
                "shares",
                &[
                    ("credit", 0.2),
                    ("escape_duel", 0.3),
                    ("escape_mini", 0.1),
                    ("finish_mini", 0.4),
                ],
            ),
            &available,
        );
        // escape_mini limits the total to 500 rows.
        assert_eq!(
            q.values().copied().collect::<Vec<_>>(),
            vec![100, 150, 50, 200]
        );
        let q = quotas(
            &config("shares", &[("credit", 1.0), ("finish_mini", 0.0)]),
            &available,
        );
        assert_eq!(
            q.into_iter().collect::<Vec<_>>(),
            vec![("credit".to_string(), 100)]
        );
        assert_eq!(quotas(&config("all", &[]), &available), available);
    }
}
