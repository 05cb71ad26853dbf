//! The selection step: `sql/select.sql` builds the four products and the
//! format gate's demotions from the lake, with thresholds from the select
//! config (`data/select.toml`). Its candidates come from
//! `sql/select_sides.sql` per bucket of eval runs (the Albedo products) and
//! `sql/select_runs.sql` per part of the mini-coder runs (the mini-coder
//! products); see [`super::select_parts`].

use arrow::array::{ArrayRef, Float64Array, Int64Array};
use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::reproduction::{Reproduction, Unit};
use super::select_parts::{self, PartSizes};
use super::sqlstep::run_script;
use super::PipelineError;
use crate::columns::{f64s, i64s, strings};
use crate::engine::{self, EngineError};
use crate::lake::Lake;

pub const SQL_FILE: &str = "sql/select.sql";
pub const SQL: &str = include_str!("../../sql/select.sql");
/// Every SQL file the step runs, as its provenance records them (a change
/// to any of them makes `build` select again).
pub const STEP_SQL: &str = concat!(
    include_str!("../../sql/side_gates.sql"),
    include_str!("../../sql/credit_keep.sql"),
    include_str!("../../sql/select_sides.sql"),
    include_str!("../../sql/select_runs_input.sql"),
    include_str!("../../sql/select_runs.sql"),
    include_str!("../../sql/finish_keep.sql"),
    include_str!("../../sql/select.sql"),
);
pub const DEFAULT_CONFIG: &str = include_str!("../../data/select.toml");
/// Product mixes and the tables that hold them.
pub const PRODUCTS: [(&str, &str); 4] = [
    ("credit", "sft_credit"),
    ("escape_duel", "escape_duel"),
    ("escape_mini", "escape_mini"),
    ("finish_mini", "finish_mini"),
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CreditGates {
    pub min_score: f64,
    pub max_dup_cmd_ratio: f64,
    pub max_cmd_run: i64,
    pub loop_dup_ratio: f64,
    pub loop_max_run: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EscapeMini {
    pub t_min: i64,
    pub t_max: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FinishMini {
    pub t_min: i64,
    pub t_max: i64,
    pub cap: i64,
    pub seed: i64,
}

/// Which sources' runs feed the run products (escape_mini, finish_mini).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSources {
    pub sources: Vec<String>,
}

impl Default for RunSources {
    fn default() -> Self {
        RunSources {
            sources: vec!["mini_coder".into()],
        }
    }
}

/// Sources whose runs the run products can take.
pub const RUN_SOURCES: [&str; 2] = ["mini_coder", "mswea"];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MixConfig {
    /// "shares" or "all".
    pub mode: String,
    pub seed: i64,
    /// What the shares count (rows unless said).
    #[serde(default, skip_serializing_if = "MixUnit::is_rows")]
    pub unit: MixUnit,
    /// How each mix takes its quota (a seeded draw unless said).
    #[serde(default, skip_serializing_if = "Selection::is_random")]
    pub select: Selection,
    /// The quality score `select = "ranked"` ranks rows by.
    #[serde(default, skip_serializing_if = "Quality::is_default")]
    pub quality: Quality,
    pub shares: BTreeMap<String, f64>,
}

/// How a mix takes its quota: rows in a seeded draw, or best first by
/// their quality score (ties in the seeded draw).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Selection {
    #[default]
    Random,
    Ranked,
}

impl Selection {
    pub fn is_random(&self) -> bool {
        *self == Selection::Random
    }
}

/// The weights of a row's quality score (sql/row_quality.sql): the credit
/// its train turns earned, its source side's judge score, and the local
/// scorer's predicted credit of its train turns.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Quality {
    #[serde(default)]
    pub credit: f64,
    #[serde(default)]
    pub score: f64,
    #[serde(default)]
    pub scorer: f64,
}

impl Default for Quality {
    fn default() -> Self {
        Quality {
            credit: 1.0,
            score: 0.0,
            scorer: 0.0,
        }
    }
}

impl Quality {
    pub fn is_default(&self) -> bool {
        *self == Quality::default()
    }

    /// `credit=1,scorer=0.5` (the weights not named are 0).
    pub fn parse(text: &str) -> Result<Quality, String> {
        let mut q = Quality {
            credit: 0.0,
            score: 0.0,
            scorer: 0.0,
        };
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, weight) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected credit=W, score=W or scorer=W"))?;
            let weight: f64 = weight
                .trim()
                .parse()
                .map_err(|_| format!("{part:?}: the weight is not a number"))?;
            match name.trim() {
                "credit" => q.credit = weight,
                "score" => q.score = weight,
                "scorer" => q.scorer = weight,
                other => {
                    return Err(format!(
                        "{other:?}: the quality's parts are credit, score and scorer"
                    ))
                }
            }
        }
        Ok(q)
    }
}

/// What a mix's shares count: rows, or trainable tokens (the train turns'
/// tokens under the tokenizer `mix --model` names), which `mix sweep`
/// compares candidates by.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MixUnit {
    #[default]
    Rows,
    Tokens,
}

impl MixUnit {
    pub fn is_rows(&self) -> bool {
        *self == MixUnit::Rows
    }
}

impl MixConfig {
    /// The `[mix]` table of a select config: a whole one, or a file holding
    /// only `[mix]` (as `mix sweep` writes its winner).
    pub fn from_toml(text: &str) -> Result<MixConfig, String> {
        #[derive(Deserialize)]
        struct MixOnly {
            mix: MixConfig,
        }
        let c = toml::from_str::<MixOnly>(text)
            .map_err(|e| e.to_string())?
            .mix;
        c.check()?;
        Ok(c)
    }

    fn check(&self) -> Result<(), String> {
        if self.mode != "shares" && self.mode != "all" {
            return Err(format!(
                "mix.mode = {:?}: use \"shares\" or \"all\"",
                self.mode
            ));
        }
        for (mix, share) in &self.shares {
            if !PRODUCTS.iter().any(|(m, _)| m == mix) {
                return Err(format!("mix.shares.{mix}: not a product (credit, escape_duel, escape_mini, finish_mini)"));
            }
            if !share.is_finite() || *share < 0.0 {
                return Err(format!("mix.shares.{mix} = {share}: a share must be >= 0"));
            }
        }
        if self.mode == "shares" && self.shares.values().sum::<f64>() <= 0.0 {
            return Err("mix.shares: at least one share must be positive".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SelectConfig {
    pub credit: CreditGates,
    #[serde(default)]
    pub runs: RunSources,
    pub escape_mini: EscapeMini,
    pub finish_mini: FinishMini,
    pub mix: MixConfig,
}

impl SelectConfig {
    pub fn from_toml(text: &str) -> Result<SelectConfig, String> {
        let c: SelectConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.mix.check()?;
        for source in &c.runs.sources {
            if !RUN_SOURCES.contains(&source.as_str()) {
                return Err(format!(
                    "runs.sources: {source:?} is not a source of runs (mini_coder, mswea)"
                ));
            }
        }
        Ok(c)
    }

    pub fn default_config() -> SelectConfig {
        SelectConfig::from_toml(DEFAULT_CONFIG).expect("data/select.toml is valid")
    }
}

/// What a selection built: rows per product, and where every candidate turn went.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct SelectSummary {
    /// mix -> (rows with a train turn before any cap, rows kept, train turns kept)
    pub products: BTreeMap<String, (i64, i64, i64)>,
    /// mix -> rows dropped because the gate left them no train turn
    pub dropped_rows: BTreeMap<String, i64>,
    /// (mix, outcome) -> candidate turns
    pub accounting: BTreeMap<(String, String), i64>,
    /// Share of escape_duel rows whose side the credit gates rejected.
    pub escape_duel_from_rejected: f64,
    /// Distinct instances the finish_mini rows were mined from.
    pub finish_instances: i64,
    /// Samples whose passing sides recur across eval runs, with the one side
    /// credit kept (most runs first, as `credit_recurring_listed` lists them).
    pub credit_recurring: Vec<RecurringSample>,
    /// Every figure the reference publishes for the selection, beside the lake's.
    pub reproduction: Reproduction,
}

/// A sample credit found passing in several eval runs, and the side it kept.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RecurringSample {
    pub sample_id: String,
    pub runs: i64,
    pub kept: String,
    pub kept_score: Option<f64>,
}

fn params_batch(c: &SelectConfig) -> Result<RecordBatch, arrow::error::ArrowError> {
    let f = |v: f64| Arc::new(Float64Array::from(vec![v])) as ArrayRef;
    let i = |v: i64| Arc::new(Int64Array::from(vec![v])) as ArrayRef;
    RecordBatch::try_from_iter(vec![
        ("min_score", f(c.credit.min_score)),
        ("max_dup_cmd_ratio", f(c.credit.max_dup_cmd_ratio)),
        ("max_cmd_run", i(c.credit.max_cmd_run)),
        ("loop_dup_ratio", f(c.credit.loop_dup_ratio)),
        ("loop_max_run", i(c.credit.loop_max_run)),
        ("escape_t_min", i(c.escape_mini.t_min)),
        ("escape_t_max", i(c.escape_mini.t_max)),
        ("finish_t_min", i(c.finish_mini.t_min)),
        ("finish_t_max", i(c.finish_mini.t_max)),
        ("finish_cap", i(c.finish_mini.cap)),
        ("finish_seed", i(c.finish_mini.seed)),
    ])
}

/// Register the config as the `select_params` table the SQL reads.
pub fn register_config(ctx: &SessionContext, config: &SelectConfig) -> Result<(), PipelineError> {
    let batch = params_batch(config).map_err(|e| PipelineError::Params(e.into()))?;
    let table =
        MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(PipelineError::Params)?;
    let _ = ctx.deregister_table("select_params");
    ctx.register_table("select_params", Arc::new(table))
        .map_err(PipelineError::Params)?;
    let sources = RecordBatch::try_from_iter(vec![(
        "source",
        Arc::new(arrow::array::StringArray::from(config.runs.sources.clone())) as ArrayRef,
    )])
    .map_err(|e| PipelineError::Params(e.into()))?;
    let table =
        MemTable::try_new(sources.schema(), vec![vec![sources]]).map_err(PipelineError::Params)?;
    let _ = ctx.deregister_table("select_run_sources");
    ctx.register_table("select_run_sources", Arc::new(table))
        .map_err(PipelineError::Params)?;
    Ok(())
}

/// Register the config and build what `sql/select.sql` reads of the Albedo
/// sides and the mini-coder runs, in parts of `sizes`. Over a local lake the
/// tables they build, and those `ctx` creates after, are kept in a scratch
/// folder ([`engine::scratch`]): the returned guard removes it when dropped,
/// so hold it while `ctx` reads them. (A cluster's session keeps them.)
pub async fn prepare_parts(
    ctx: &SessionContext,
    config: &SelectConfig,
    sizes: PartSizes,
    on_cluster: bool,
) -> Result<Option<tempfile::TempDir>, PipelineError> {
    let scratch = if on_cluster {
        None
    } else {
        let dir = tempfile::tempdir().map_err(PipelineError::Scratch)?;
        engine::scratch::keep_tables_in(ctx, dir.path());
        Some(dir)
    };
    register_config(ctx, config)?;
    select_parts::prepare_sides(ctx, config, sizes.bucket_sides, on_cluster).await?;
    select_parts::prepare_runs(ctx, config, sizes.part_runs, on_cluster).await?;
    Ok(scratch)
}

/// (key, count) pairs of a two-column result.
fn counts(batches: &[RecordBatch], key: &str, n: &str) -> BTreeMap<String, i64> {
    strings(batches, key)
        .into_iter()
        .zip(i64s(batches, n))
        .map(|(k, n)| (k.unwrap_or_default(), n.unwrap_or(0)))
        .collect()
}

/// The select config as the step records it: without `[mix]`, which only
/// `mix` reads (so a mix change does not rerun select under `build`).
pub fn recorded_params(config: &SelectConfig) -> serde_json::Value {
    let mut v = serde_json::to_value(config).expect("the select config serializes");
    if let Some(obj) = v.as_object_mut() {
        obj.remove("mix");
    }
    v
}

/// The rows of one product, in row_id order; `context` names them in errors.
async fn product_rows(
    ctx: &SessionContext,
    mix: &str,
    context: &str,
) -> Result<DataFrame, PipelineError> {
    use datafusion::prelude::{col, lit};
    let err = EngineError::query(context);
    let df = ctx
        .table("products")
        .await
        .map_err(&err)?
        .filter(col("mix").eq(lit(mix)))
        .map_err(&err)?
        .sort(vec![col("row_id").sort(true, false)])
        .map_err(err)?;
    Ok(df)
}

/// The selection's reproduction table from its summary and `select_figures`.
fn reproduction(s: &SelectSummary, figures: &[RecordBatch]) -> Reproduction {
    let n = |name: &str| f64s(figures, name).first().copied().flatten();
    let product = |mix: &str| s.products.get(mix).copied().unwrap_or((0, 0, 0));
    let mut t = Reproduction::new("Reproduction: selection (turnlake select)");
    t.add("corpus.sides", n("sides_judged"));
    t.add("select.sides_passing", n("sides_passing"));
    let (mined, kept, train) = product("credit");
    let dropped = *s.dropped_rows.get("credit").unwrap_or(&0);
    t.add("select.credit.rows_mined", Some((mined + dropped) as f64));
    t.add("select.credit.rows", Some(kept as f64));
    t.add("select.credit.train_turns", Some(train as f64));
    t.add("select.credit.dropped", Some(dropped as f64));
    t.add_own(
        "select.credit.samples_recurring",
        "sample_ids with passing sides in more than one eval run (credit keeps one side of each)",
        Unit::Count,
        n("credit_samples_recurring"),
    );
    t.add_own(
        "select.credit.runs_dropped",
        "eval runs whose side of a recurring sample credit left out",
        Unit::Count,
        n("credit_runs_dropped"),
    );
    t.add_own(
        "select.demotions",
        "train turns demoted by the format gate (all products)",
        Unit::Count,
        n("demotions"),
    );
    t.add(
        "select.escape_duel.rows",
        Some(product("escape_duel").1 as f64),
    );
    t.add("select.escape_duel.samples", n("escape_duel_samples"));
    t.add(
        "select.escape_duel.from_rejected",
        Some(100.0 * s.escape_duel_from_rejected),
    );
    t.add(
        "select.escape_duel.after_failure",
        n("escape_duel_after_failure").map(|v| 100.0 * v),
    );
    t.add(
        "select.escape_duel.after_repeat_run",
        n("escape_duel_after_repeat_run").map(|v| 100.0 * v),
    );
    t.add(
        "select.escape_duel.prior_failures_mean",
        n("escape_duel_prior_failures_mean"),
    );
    t.add(
        "select.escape_duel.prior_failures_max",
        n("escape_duel_prior_failures_max"),
    );
    t.add(
        "select.escape_mini.rows",
        Some(product("escape_mini").1 as f64),
    );
    t.add(
        "select.escape_mini.past_16",
        n("escape_mini_past_16").map(|v| 100.0 * v),
    );
    let (mined, kept, _) = product("finish_mini");
    t.add_own(
        "select.finish_mini.candidates_before_gate",
        "finish_mini candidates before the format gate",
        Unit::Count,
        n("finish_candidates_before_gate"),
    );
    t.add("select.finish_mini.candidates", Some(mined as f64));
    t.add(
        "select.finish_mini.instances",
        Some(s.finish_instances as f64),
    );
    t.add("select.finish_mini.rows", Some(kept as f64));
    t.add(
        "select.finish_mini.submit_candidates",
        n("finish_submit_candidates"),
    );
    t.add_own(
        "select.finish_mini.submit_rows",
        "finish_mini rows whose train turn is a submit",
        Unit::Count,
        n("finish_submit_rows"),
    );
    t.add("select.recovery.available", n("recovery_available"));
    t.add("select.recovery.passing", n("recovery_passing"));
    t.note("a repeat run: the two commands before a turn are the same normalized command; an escape's own command differs from the one before it, so a credited retry of a failed command is not an escape");
    t.note("finish_mini's \"submit turns available\" is read as candidates whose train turn is the closing submit");
    t.note("credit rows before/after the gate stand for the reference's before/after validation; 87 dropped = 4,751 - 4,664");
    t
}

/// Build the products in `lake`.
pub async fn build(lake: &Lake, config: &SelectConfig) -> Result<SelectSummary, PipelineError> {
    build_in_parts(lake, config, PartSizes::default()).await
}

/// [`build`], with the Albedo sides and the mini-coder runs in parts of
/// `sizes` (the products do not depend on them).
pub async fn build_in_parts(
    lake: &Lake,
    config: &SelectConfig,
    sizes: PartSizes,
) -> Result<SelectSummary, PipelineError> {
    let step =
        super::step::Step::begin(lake, &super::steps::SELECT, recorded_params(config)).await?;
    // Albedo products need credit when the lake holds judged sides.
    let albedo = step.inputs()["judgments"].is_some();
    if albedo && step.inputs()["turn_credit"].is_none() {
        return Err(PipelineError::Missing(
            "turn_credit",
            "run `turnlake credit` first",
        ));
    }
    if !albedo {
        for table in ["judgments", "turn_credit"] {
            engine::register_empty_if_missing(&step.ctx, table)?;
        }
    }
    let _scratch = prepare_parts(&step.ctx, config, sizes, lake.cluster().is_some()).await?;
    run_script(&step.ctx, SQL_FILE, SQL).await?;
    let ctx = step.ctx.clone();
    let q = |sql: String, what: &'static str| {
        let ctx = ctx.clone();
        async move { engine::run_sql(&ctx, &sql, &format!("{SQL_FILE}, {what}")).await }
    };
    for (mix, table) in PRODUCTS {
        let context = format!("{SQL_FILE}, products of {mix}");
        let rows = product_rows(&ctx, mix, &context).await?;
        step.write_frame(table, rows, &context).await?;
    }
    step.write_query(
        "gate_demotions",
        "SELECT * FROM demotions ORDER BY mix, row_id, t",
        "demotions",
    )
    .await?;
    step.finish().await?;

    let rows = q("SELECT * FROM select_mined".into(), "select_mined").await?;
    let mut mined = counts(&rows, "mix", "mined");
    // finish_mini's rows that train but are not kept never reached gated_rows.
    let runs = q("SELECT * FROM runs_tally".into(), "runs_tally").await?;
    let tally = |name: &str| i64s(&runs, name).first().copied().flatten().unwrap_or(0);
    mined.insert("finish_mini".into(), tally("finish_passing"));
    let kept_batches = q("SELECT * FROM select_kept".into(), "select_kept").await?;
    let (kept, train) = (
        counts(&kept_batches, "mix", "n"),
        counts(&kept_batches, "mix", "train"),
    );
    let mut summary = SelectSummary::default();
    for (mix, _) in PRODUCTS {
        let get = |m: &BTreeMap<String, i64>| m.get(mix).copied().unwrap_or(0);
        summary
            .products
            .insert(mix.to_string(), (get(&mined), get(&kept), get(&train)));
    }
    summary.dropped_rows = counts(&rows, "mix", "dropped");
    summary.dropped_rows.retain(|_, n| *n > 0);
    let acc = q(
        "SELECT mix, outcome, turns FROM candidate_accounting".into(),
        "candidate_accounting",
    )
    .await?;
    for ((mix, outcome), n) in strings(&acc, "mix")
        .into_iter()
        .zip(strings(&acc, "outcome"))
        .zip(i64s(&acc, "turns"))
    {
        summary.accounting.insert(
            (mix.unwrap_or_default(), outcome.unwrap_or_default()),
            n.unwrap_or(0),
        );
    }
    let rejected = q(
        "SELECT * FROM select_escape_duel_rejected".into(),
        "select_escape_duel_rejected",
    )
    .await?;
    summary.escape_duel_from_rejected = f64s(&rejected, "share")
        .first()
        .copied()
        .flatten()
        .unwrap_or(0.0);
    summary.finish_instances = tally("finish_instances");
    let recurring = q(
        "SELECT * FROM credit_recurring_listed".into(),
        "credit_recurring_listed",
    )
    .await?;
    let (ids, runs, kept_sides, scores) = (
        strings(&recurring, "sample_id"),
        i64s(&recurring, "runs"),
        strings(&recurring, "kept"),
        f64s(&recurring, "kept_score"),
    );
    summary.credit_recurring = (0..ids.len())
        .map(|i| RecurringSample {
            sample_id: ids[i].clone().unwrap_or_default(),
            runs: runs[i].unwrap_or(0),
            kept: kept_sides[i].clone().unwrap_or_default(),
            kept_score: scores[i],
        })
        .collect();
    let figures = q("SELECT * FROM select_figures".into(), "select_figures").await?;
    summary.reproduction = reproduction(&summary, &figures);
    Ok(summary)
}
