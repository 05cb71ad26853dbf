//! The credit report: `sql/stats.sql` over the credit tables, read into a
//! plain struct that the CLI renders as a table, markdown, JSON or plots.

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use arrow::record_batch::RecordBatch;
use serde::Serialize;

use super::sqlstep::run_script;
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
    #[error("{0}: unexpected result shape: {1}")]
    Shape(&'static str, String),
}

/// Column `name` of `batches`, as f64 / i64 / String values.
struct Cols<'a>(&'a [RecordBatch], &'static str);

impl Cols<'_> {
    fn col(&self, name: &str, ty: &DataType) -> Result<Vec<arrow::array::ArrayRef>, StatsError> {
        self.0
            .iter()
            .map(|b| {
                let c = b
                    .column_by_name(name)
                    .ok_or_else(|| StatsError::Shape(self.1, format!("no column {name}")))?;
                cast(c, ty).map_err(|e| StatsError::Shape(self.1, e.to_string()))
            })
            .collect()
    }
    fn f64s(&self, name: &str) -> Result<Vec<f64>, StatsError> {
        Ok(self
            .col(name, &DataType::Float64)?
            .iter()
            .flat_map(|a| {
                let p = a.as_primitive::<Float64Type>().clone();
                (0..p.len())
                    .map(move |i| if p.is_null(i) { f64::NAN } else { p.value(i) })
                    .collect::<Vec<_>>()
            })
            .collect())
    }
    fn i64s(&self, name: &str) -> Result<Vec<i64>, StatsError> {
        Ok(self
            .col(name, &DataType::Int64)?
            .iter()
            .flat_map(|a| a.as_primitive::<Int64Type>().values().to_vec())
            .collect())
    }
    fn strs(&self, name: &str) -> Result<Vec<String>, StatsError> {
        Ok(self
            .col(name, &DataType::Utf8)?
            .iter()
            .flat_map(|a| {
                let s = a.as_string::<i32>().clone();
                (0..s.len())
                    .map(move |i| s.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect())
    }
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
    let c = Cols(&b, "stats_by_kind");
    let by_kind = zip5(
        c.strs("cmd_kind")?,
        c.i64s("turns")?,
        c.f64s("share")?,
        c.f64s("mean_credit")?,
        c.f64s("pct_earning")?,
    )
    .map(
        |(cmd_kind, turns, share, mean_credit, pct_earning)| KindStat {
            cmd_kind,
            turns,
            share,
            mean_credit,
            pct_earning,
        },
    )
    .collect();

    let b = view(&ctx, "stats_by_turn", "ORDER BY t").await?;
    let c = Cols(&b, "stats_by_turn");
    let by_turn = c
        .i64s("t")?
        .into_iter()
        .zip(c.i64s("turns")?)
        .zip(
            c.f64s("mean_credit")?
                .into_iter()
                .zip(c.f64s("pct_earning")?),
        )
        .map(|((t, turns), (mean_credit, pct_earning))| TurnStat {
            t,
            turns,
            mean_credit,
            pct_earning,
        })
        .collect();

    let b = view(&ctx, "stats_exposure", "").await?;
    let c = Cols(&b, "stats_exposure");
    let one = |v: Vec<f64>| v.first().copied().unwrap_or(f64::NAN);
    let exposure = Exposure {
        share_after_failure: one(c.f64s("share_after_failure")?),
        pct_earning_after_failure: one(c.f64s("pct_earning_after_failure")?),
        pct_earning_otherwise: one(c.f64s("pct_earning_otherwise")?),
        pct_earning_baseline: one(c.f64s("pct_earning_baseline")?),
        relative_cost: one(c.f64s("relative_cost")?),
    };

    let b = view(&ctx, "stats_by_tag", "ORDER BY credit DESC, tag").await?;
    let c = Cols(&b, "stats_by_tag");
    let by_tag = c
        .strs("tag")?
        .into_iter()
        .zip(c.f64s("credit")?.into_iter().zip(c.f64s("share")?))
        .map(|(tag, (credit, share))| TagStat { tag, credit, share })
        .collect();

    let b = view(&ctx, "stats_citing", "").await?;
    let c = Cols(&b, "stats_citing");
    let scored = engine::run_sql(&ctx, "SELECT count(*) FROM stats_scored", SQL_FILE).await?;
    Ok(Report {
        scored_turns: Cols(&scored, "stats_scored")
            .i64s("count(*)")?
            .first()
            .copied()
            .unwrap_or(0),
        by_kind,
        by_turn,
        exposure,
        by_tag,
        share_citing: one(c.f64s("share_citing")?),
        share_yes_uncited: one(c.f64s("share_yes_uncited")?),
    })
}

fn zip5<A, B, C, D, E>(
    a: Vec<A>,
    b: Vec<B>,
    c: Vec<C>,
    d: Vec<D>,
    e: Vec<E>,
) -> impl Iterator<Item = (A, B, C, D, E)> {
    a.into_iter()
        .zip(b)
        .zip(c)
        .zip(d)
        .zip(e)
        .map(|((((a, b), c), d), e)| (a, b, c, d, e))
}
