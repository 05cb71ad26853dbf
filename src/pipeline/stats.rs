//! The credit report: `sql/stats.sql` over the credit tables, read into a
//! plain struct that the CLI renders as a table, markdown, JSON or plots.

use arrow::record_batch::RecordBatch;
use serde::Serialize;

use super::sqlstep::run_script;
use crate::columns::{f64s, i64s, scalar_i64, strings};
use crate::engine::{self, EngineError};
use crate::lake::{Lake, LakeError};

pub const SQL_FILE: &str = "sql/stats.sql";
pub const SQL: &str = include_str!("../../sql/stats.sql");

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KindStat {
    pub cmd_kind: String,
    pub turns: i64,
    pub share: f64,
    pub mean_credit: f64,
    pub pct_earning: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnStat {
    pub t: i64,
    pub turns: i64,
    pub mean_credit: f64,
    pub pct_earning: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Exposure {
    /// Share of scored turns whose previous observation failed.
    pub share_after_failure: f64,
    pub pct_earning_after_failure: f64,
    pub pct_earning_otherwise: f64,
    pub pct_earning_baseline: f64,
    /// 1 - (earning after a failure / baseline): what one bad command costs the next turn.
    pub relative_cost: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TagStat {
    pub tag: String,
    pub credit: f64,
    pub share: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub scored_turns: i64,
    pub by_kind: Vec<KindStat>,
    pub by_turn: Vec<TurnStat>,
    pub exposure: Exposure,
    pub by_tag: Vec<TagStat>,
    /// Share of explanations that cite at least one output.
    pub share_citing: f64,
    /// Share of yes-answers that cite nothing: credit no turn can claim.
    pub share_yes_uncited: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("the lake has no turn_credit table: run `turnlake credit` first")]
    NoCredit,
}

async fn view(
    ctx: &datafusion::prelude::SessionContext,
    name: &'static str,
    order: &str,
) -> Result<Vec<RecordBatch>, StatsError> {
    Ok(engine::run_sql(
        ctx,
        &format!("SELECT * FROM {name} {order}"),
        &format!("{SQL_FILE}, {name}"),
    )
    .await?)
}

/// Compute the report from the lake's credit tables.
pub async fn report(lake: &Lake) -> Result<Report, StatsError> {
    if lake.table("turn_credit").await?.is_none() {
        return Err(StatsError::NoCredit);
    }
    let ctx = engine::session(lake).await?;
    run_script(&ctx, SQL_FILE, SQL).await?;

    let b = view(&ctx, "stats_by_kind", "ORDER BY mean_credit DESC, cmd_kind").await?;
    let (kinds, turns, share, mean, pct) = (
        strings(&b, "cmd_kind"),
        i64s(&b, "turns"),
        f64s(&b, "share"),
        f64s(&b, "mean_credit"),
        f64s(&b, "pct_earning"),
    );
    let by_kind = (0..kinds.len())
        .map(|i| KindStat {
            cmd_kind: kinds[i].clone().unwrap_or_default(),
            turns: turns[i].unwrap_or(0),
            share: num(share[i]),
            mean_credit: num(mean[i]),
            pct_earning: num(pct[i]),
        })
        .collect();

    let b = view(&ctx, "stats_by_turn", "ORDER BY t").await?;
    let (t, turns, mean, pct) = (
        i64s(&b, "t"),
        i64s(&b, "turns"),
        f64s(&b, "mean_credit"),
        f64s(&b, "pct_earning"),
    );
    let by_turn = (0..t.len())
        .map(|i| TurnStat {
            t: t[i].unwrap_or(0),
            turns: turns[i].unwrap_or(0),
            mean_credit: num(mean[i]),
            pct_earning: num(pct[i]),
        })
        .collect();

    let b = view(&ctx, "stats_exposure", "").await?;
    let one = |name: &str| first(&b, name);
    let exposure = Exposure {
        share_after_failure: one("share_after_failure"),
        pct_earning_after_failure: one("pct_earning_after_failure"),
        pct_earning_otherwise: one("pct_earning_otherwise"),
        pct_earning_baseline: one("pct_earning_baseline"),
        relative_cost: one("relative_cost"),
    };

    let b = view(&ctx, "stats_by_tag", "ORDER BY credit DESC, tag").await?;
    let (tags, credit, share) = (strings(&b, "tag"), f64s(&b, "credit"), f64s(&b, "share"));
    let by_tag = (0..tags.len())
        .map(|i| TagStat {
            tag: tags[i].clone().unwrap_or_default(),
            credit: num(credit[i]),
            share: num(share[i]),
        })
        .collect();

    let b = view(&ctx, "stats_citing", "").await?;
    let one = |name: &str| first(&b, name);
    let scored = engine::run_sql(&ctx, "SELECT count(*) AS n FROM stats_scored", SQL_FILE).await?;
    Ok(Report {
        scored_turns: scalar_i64(&scored),
        by_kind,
        by_turn,
        exposure,
        by_tag,
        share_citing: one("share_citing"),
        share_yes_uncited: one("share_yes_uncited"),
    })
}

/// The first value of a one-row result's column.
fn first(batches: &[RecordBatch], name: &str) -> f64 {
    num(f64s(batches, name).first().copied().flatten())
}

/// A figure SQL left null (no turns to average) reads as NaN.
fn num(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}
