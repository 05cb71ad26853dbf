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
use super::select::{MixConfig, SelectError, PRODUCTS};
use super::sqlstep::run_script;
use crate::columns::{f64s, i64s, strings};
use crate::engine;
use crate::lake::Lake;

pub const TRAIN_TURNS_SQL: &str = include_str!("../../sql/train_turns.sql");
pub const SQL_FILE: &str = "sql/mix.sql";
pub const SQL: &str = include_str!("../../sql/mix.sql");
pub const REPORT_SQL_FILE: &str = "sql/mix_report.sql";
pub const REPORT_SQL: &str = include_str!("../../sql/mix_report.sql");

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

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MixRow {
    pub mix: String,
    pub rows: i64,
    pub train_turns: i64,
    pub share_rows: f64,
    pub share_train: f64,
    pub recovery_turns: i64,
    pub avg_source_score: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MixReport {
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

/// Register `rows_in` as `table` and define the train-turn views over it.
pub async fn describe_rows(ctx: &SessionContext, table: &str) -> Result<(), SelectError> {
    let _ = ctx.deregister_table("rows_in");
    engine::run_sql(
        ctx,
        &format!("CREATE VIEW rows_in AS SELECT * FROM \"{table}\""),
        "rows_in",
    )
    .await?;
    run_script(ctx, "sql/train_turns.sql", TRAIN_TURNS_SQL).await?;
    Ok(())
}

async fn report(
    ctx: &SessionContext,
    available: BTreeMap<String, i64>,
) -> Result<MixReport, SelectError> {
    describe_rows(ctx, "sft_mix").await?;
    run_script(ctx, REPORT_SQL_FILE, REPORT_SQL).await?;
    let q = |sql: &'static str| engine::run_sql(ctx, sql, REPORT_SQL_FILE);
    let b = q("SELECT * FROM mix_summary ORDER BY mix").await?;
    let (mix, rows, train, share_rows, share_train, recovery, score) = (
        strings(&b, "mix"),
        i64s(&b, "rows"),
        i64s(&b, "train_turns"),
        f64s(&b, "share_rows"),
        f64s(&b, "share_train"),
        i64s(&b, "recovery_turns"),
        f64s(&b, "avg_source_score"),
    );
    let mixes = (0..mix.len())
        .map(|i| MixRow {
            mix: mix[i].clone().unwrap_or_default(),
            rows: rows[i].unwrap_or(0),
            train_turns: train[i].unwrap_or(0),
            share_rows: share_rows[i].unwrap_or(0.0),
            share_train: share_train[i].unwrap_or(0.0),
            recovery_turns: recovery[i].unwrap_or(0),
            avg_source_score: score[i],
        })
        .collect();
    let shares = |b: Vec<RecordBatch>, key: &str, share: &str| -> Vec<(String, i64, f64)> {
        let (k, n, s) = (strings(&b, key), i64s(&b, "turns"), f64s(&b, share));
        (0..k.len())
            .map(|i| {
                (
                    k[i].clone().unwrap_or_default(),
                    n[i].unwrap_or(0),
                    s[i].unwrap_or(0.0),
                )
            })
            .collect()
    };
    let figures = q("SELECT * FROM credit_set_figures").await?;
    let mut report = MixReport {
        available,
        mixes,
        commands: shares(
            q("SELECT * FROM mix_cmd ORDER BY turns DESC, cmd_kind").await?,
            "cmd_kind",
            "share",
        ),
        tags: shares(
            q("SELECT * FROM mix_tags ORDER BY turns DESC, tag").await?,
            "tag",
            "share",
        ),
        credit_cmd: shares(
            q("SELECT * FROM credit_set_cmd ORDER BY turns DESC, cmd_kind").await?,
            "cmd_kind",
            "share",
        ),
        credit_tags: shares(
            q("SELECT * FROM credit_set_tags ORDER BY turns DESC, tag").await?,
            "tag",
            "share",
        ),
        credit_categories: shares(
            q("SELECT * FROM credit_set_categories ORDER BY turns DESC, category").await?,
            "category",
            "share",
        ),
        reproduction: Reproduction::default(),
    };
    report.reproduction = reproduction(&report, &figures);
    Ok(report)
}

/// The mix's reproduction table.
fn reproduction(r: &MixReport, figures: &[RecordBatch]) -> Reproduction {
    let one = |name: &str| f64s(figures, name).first().copied().flatten();
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
    t.add("mix.credit.recovery_turns", one("recovery_turns"));
    t.add(
        "mix.credit.rows_with_recovery",
        one("rows_with_recovery").map(|v| 100.0 * v),
    );
    t.add("mix.credit.source_score", one("source_score"));
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

/// Count what each product offers and register `mix_quota` (mix, take, seed),
/// the table sql/mix.sql samples by. Returns the rows available per mix.
pub async fn register_quota(
    ctx: &SessionContext,
    config: &MixConfig,
) -> Result<BTreeMap<String, i64>, SelectError> {
    let mut available = BTreeMap::new();
    for (mix, table) in PRODUCTS {
        if !ctx.table_exist(table).map_err(SelectError::Config)? {
            return Err(
                super::step::StepError::Missing(table, "run `turnlake select` first").into(),
            );
        }
        let n = ctx
            .table(table)
            .await
            .map_err(SelectError::Config)?
            .count()
            .await
            .map_err(SelectError::Config)?;
        available.insert(mix.to_string(), n as i64);
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
            "seed",
            Arc::new(Int64Array::from_iter_values(
                quota.keys().map(|_| config.seed),
            )) as ArrayRef,
        ),
    ])
    .map_err(|e| SelectError::Config(e.into()))?;
    let _ = ctx.deregister_table("mix_quota");
    ctx.register_table(
        "mix_quota",
        Arc::new(
            MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(SelectError::Config)?,
        ),
    )
    .map_err(SelectError::Config)?;
    Ok(available)
}

/// Compose `sft_mix` in `lake` (sql/mix.sql), as one step, and report its composition.
pub async fn build(lake: &Lake, config: &MixConfig) -> Result<MixReport, SelectError> {
    const HINT: &str = "run `turnlake select` first";
    let inputs: Vec<(&'static str, &'static str)> =
        PRODUCTS.iter().map(|(_, table)| (*table, HINT)).collect();
    let step = super::step::Step::begin(
        lake,
        "mix",
        &inputs,
        serde_json::to_value(config).expect("the mix config serializes"),
        (SQL_FILE, SQL),
    )
    .await?;
    let available = register_quota(&step.ctx, config).await?;
    step.run_sql().await?;
    step.write_query(
        "sft_mix",
        "SELECT * FROM mix_rows ORDER BY row_id",
        "mix_rows",
    )
    .await?;
    let ctx = step.ctx.clone();
    step.finish().await?;
    engine::register(&ctx, lake, "sft_mix").await?;
    report(&ctx, available).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: &str, shares: &[(&str, f64)]) -> MixConfig {
        MixConfig {
            mode: mode.into(),
            seed: 1,
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
