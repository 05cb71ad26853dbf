//! Buckets of judged sides, for a step whose every output row belongs to one
//! side (credit) or whose figures are sums over sides (stats): the step runs
//! once per bucket, each run reading only its bucket's rows, so its joins and
//! sorts hold one bucket, not the lake, and its memory stays flat as the lake
//! grows.
//!
//! A bucket is a contiguous `traj_id` range of whole eval runs (an Albedo
//! `traj_id` starts with its eval run). Outputs ordered by `traj_id` first
//! are therefore in order when the buckets' outputs follow one another.
//! Tables keyed by eval run (questions) are filtered to the range of eval
//! runs a bucket's judgments name: an Albedo `traj_id` starts with its eval
//! run, so that range is a bucket's own runs (were it not, a bucket would
//! read more questions, with the same result).
//!
//! A bucket's tables that have a `source` also hold only the sources that
//! have judged sides. That is a partition filter, so the files of other
//! sources (mini-coder's, most of the lake) are never opened: a `traj_id`
//! range alone prunes their row groups, but only after reading every
//! file's footer, once per bucket and scan, which made `credit` grow with
//! the square of the lake (7× the time at 4×).

use datafusion::dataframe::DataFrame;
use datafusion::functions_aggregate::expr_fn::{max, min};
use datafusion::prelude::{col, lit, Expr, SessionContext};

use crate::engine::EngineError;
use crate::lake::Lake;

/// Judged sides per bucket: at the reference scale (40,000 sides) two
/// buckets, each holding a few hundred MB at most.
pub const BUCKET_SIDES: usize = 20_000;

/// One bucket: `traj_id` in `[from, to)` (unbounded where `None`), of the
/// sources that have judged sides (every source where none has).
#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    from: Option<String>,
    to: Option<String>,
    sources: Vec<String>,
}

/// A session per bucket of at most `sides` judged sides (see
/// [`Bucket::session`]), each with the words that name its bucket in
/// errors; on a cluster, `ctx` itself as the one bucket.
pub async fn bucket_sessions(
    lake: &Lake,
    ctx: &SessionContext,
    sides: usize,
    by_side: &[&str],
    by_run: &[&str],
) -> Result<Vec<(SessionContext, String)>, EngineError> {
    if lake.cluster().is_some() {
        return Ok(vec![(ctx.clone(), String::new())]);
    }
    let mut sessions = Vec::new();
    for bucket in side_buckets(ctx, sides).await? {
        let session = bucket.session(ctx, by_side, by_run).await?;
        sessions.push((session, format!(" over {bucket}")));
    }
    Ok(sessions)
}

/// Buckets of whole eval runs, each of at most `sides` judged sides unless
/// one eval run has more, covering every `traj_id`. A bucket never splits
/// an eval run, so never a sample: the selection keeps one side per sample.
/// (Where an eval run's id holds a `/`, another run's `traj_id`s could sort
/// among its own, so there is one bucket.)
pub async fn side_buckets(ctx: &SessionContext, sides: usize) -> Result<Vec<Bucket>, EngineError> {
    let err = EngineError::query("bucketing the judged sides");
    // Each eval run's first traj_id, in order, with its judged sides.
    let runs = ctx
        .sql("SELECT eval_run_id, min(traj_id) AS first, count(*) AS sides FROM trajectories WHERE judged GROUP BY eval_run_id")
        .await
        .map_err(&err)?
        .sort(vec![col("first").sort(true, false)])
        .map_err(&err)?
        .collect()
        .await
        .map_err(&err)?;
    let ids = crate::columns::strings(&runs, "eval_run_id");
    let firsts = crate::columns::strings(&runs, "first");
    let counts = crate::columns::i64s(&runs, "sides");
    let one_bucket = ids.iter().flatten().any(|id| id.contains('/'));
    // An eval run starts a bucket when the bucket so far would pass `sides`.
    let mut bounds: Vec<Option<String>> = vec![None];
    let mut filled = 0usize;
    for (first, n) in firsts.into_iter().zip(counts) {
        let n = n.unwrap_or(0).max(0) as usize;
        if filled > 0 && filled + n > sides.max(1) && !one_bucket {
            bounds.push(first);
            filled = 0;
        }
        filled += n;
    }
    bounds.push(None);
    let judged = ctx
        .sql("SELECT DISTINCT source FROM trajectories WHERE judged ORDER BY source")
        .await
        .map_err(&err)?
        .collect()
        .await
        .map_err(&err)?;
    let sources: Vec<String> = crate::columns::strings(&judged, "source")
        .into_iter()
        .flatten()
        .collect();
    Ok(bounds
        .windows(2)
        .map(|pair| Bucket {
            from: pair[0].clone(),
            to: pair[1].clone(),
            sources: sources.clone(),
        })
        .collect())
}

impl Bucket {
    /// `traj_id` within this bucket, of its sources where `has_source`
    /// (`None`: every row).
    fn sides(&self, has_source: bool) -> Option<Expr> {
        let sources = (has_source && !self.sources.is_empty()).then(|| {
            let names = self.sources.iter().map(|s| lit(s.as_str())).collect();
            col("source").in_list(names, false)
        });
        match (sources, self.traj_ids()) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        }
    }

    /// `traj_id` within this bucket (`None`: every row).
    fn traj_ids(&self) -> Option<Expr> {
        let from = self
            .from
            .as_ref()
            .map(|f| col("traj_id").gt_eq(lit(f.as_str())));
        let to = self.to.as_ref().map(|t| col("traj_id").lt(lit(t.as_str())));
        match (from, to) {
            (Some(a), Some(b)) => Some(a.and(b)),
            (a, b) => a.or(b),
        }
    }

    /// `eval_run_id` within `runs` (see [`Bucket::eval_runs`]).
    fn eval_run_ids(runs: &Option<(String, String)>) -> Expr {
        match runs {
            Some((first, last)) => {
                col("eval_run_id").between(lit(first.as_str()), lit(last.as_str()))
            }
            None => lit(false),
        }
    }

    /// The first and last eval run the bucket's judgments name.
    async fn eval_runs(
        &self,
        ctx: &SessionContext,
    ) -> Result<Option<(String, String)>, EngineError> {
        let err = EngineError::query("finding a bucket's eval runs");
        let judgments = only(ctx.table("judgments").await.map_err(&err)?, self.traj_ids())?;
        let range = judgments
            .aggregate(
                vec![],
                vec![
                    min(col("eval_run_id")).alias("first"),
                    max(col("eval_run_id")).alias("last"),
                ],
            )
            .map_err(&err)?
            .collect()
            .await
            .map_err(&err)?;
        let first = crate::columns::strings(&range, "first");
        let last = crate::columns::strings(&range, "last");
        Ok(match (first.first(), last.first()) {
            (Some(Some(f)), Some(Some(l))) => Some((f.clone(), l.clone())),
            _ => None,
        })
    }

    /// A session on `ctx`'s runtime and settings where each table of
    /// `by_side` holds only this bucket's sides, and each of `by_run` only
    /// the eval runs its judgments name.
    pub async fn session(
        &self,
        ctx: &SessionContext,
        by_side: &[&str],
        by_run: &[&str],
    ) -> Result<SessionContext, EngineError> {
        let runs = match by_run.is_empty() {
            true => None,
            false => Some(Self::eval_run_ids(&self.eval_runs(ctx).await?)),
        };
        let err = EngineError::query(format!("opening a session over {self}"));
        let bucket = crate::engine::sub_session(ctx);
        for name in by_side.iter().chain(by_run) {
            let table = ctx.table(*name).await.map_err(&err)?;
            let filter = match by_side.contains(name) {
                true => self.sides(table.schema().has_column_with_unqualified_name("source")),
                false => runs.clone(),
            };
            let rows = only(table, filter)?;
            bucket
                .register_table(*name, rows.into_view())
                .map_err(&err)?;
        }
        Ok(bucket)
    }
}

/// `frame`'s rows that pass `filter` (all of them for `None`).
fn only(frame: DataFrame, filter: Option<Expr>) -> Result<DataFrame, EngineError> {
    match filter {
        Some(f) => frame
            .filter(f)
            .map_err(EngineError::query("filtering a bucket")),
        None => Ok(frame),
    }
}

impl std::fmt::Display for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = |b: &Option<String>, open: &str| b.clone().unwrap_or_else(|| open.to_string());
        write!(
            f,
            "traj_id [{}, {})",
            bound(&self.from, "start"),
            bound(&self.to, "end")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::credit::{self, tests::two_eval_runs, CreditConfig};
    use crate::source::rows::{trajectories_batch, turns_batch, TrajectoryRow, TurnRow};

    /// A step that only looks: no inputs pinned, nothing written.
    const LOOK: crate::pipeline::steps::StepSpec = crate::pipeline::steps::StepSpec {
        name: "look",
        inputs: &[],
        records: "none",
        sql: Some((credit::SQL_FILE, credit::SQL)),
    };

    /// Two eval runs of judged Albedo sides, then a mini-coder run whose
    /// `traj_id` sorts after every side's, so the last bucket's range holds it.
    async fn lake_with_a_mini_coder_run(dir: &std::path::Path) -> Lake {
        let lake = two_eval_runs(dir).await;
        let traj = "mini_coder/0/run";
        let trajectory = TrajectoryRow {
            traj_id: traj.into(),
            source: "mini_coder".into(),
            ..Default::default()
        };
        let turns: Vec<TurnRow> = (1..=2)
            .map(|t| TurnRow {
                traj_id: traj.into(),
                source: "mini_coder".into(),
                t,
                turn_sha: format!("{traj}{t}"),
                cmd_kind: "other".into(),
                ..Default::default()
            })
            .collect();
        let mut writer = lake.begin("ingest", serde_json::json!({})).await.unwrap();
        let tables = [
            ("trajectories", trajectories_batch(&[trajectory]).unwrap()),
            ("turns", turns_batch(&turns).unwrap()),
        ];
        for (name, batch) in tables {
            lake.append(name, vec![batch]).await.unwrap();
        }
        writer.commit().await.unwrap();
        writer.release().await.unwrap();
        lake
    }

    async fn count(ctx: &SessionContext, sql: &str) -> i64 {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        crate::columns::i64s(&batches, "n")[0].unwrap()
    }

    #[tokio::test]
    async fn a_buckets_tables_hold_only_the_sources_of_judged_sides() {
        let dir = tempfile::tempdir().unwrap();
        let lake = lake_with_a_mini_coder_run(dir.path()).await;
        let step = crate::pipeline::step::Step::begin(&lake, &LOOK, serde_json::json!({}))
            .await
            .unwrap();
        let other = "SELECT count(*) AS n FROM turns WHERE source <> 'albedo'";
        assert_eq!(count(&step.ctx, other).await, 2, "the lake holds the run");
        let tables = ["judgments", "trajectories", "turns"];
        let sessions = bucket_sessions(&lake, &step.ctx, 1, &tables, &["questions"])
            .await
            .unwrap();
        assert_eq!(sessions.len(), 2, "one bucket per eval run");
        let mut albedo_turns = 0;
        for (session, bucket) in &sessions {
            assert_eq!(count(session, other).await, 0, "{bucket}");
            let trajectories = "SELECT count(*) AS n FROM trajectories WHERE source <> 'albedo'";
            assert_eq!(count(session, trajectories).await, 0, "{bucket}");
            albedo_turns += count(session, "SELECT count(*) AS n FROM turns").await;
        }
        let all = "SELECT count(*) AS n FROM turns WHERE source = 'albedo'";
        assert_eq!(
            albedo_turns,
            count(&step.ctx, all).await,
            "every side's turns"
        );
        step.finish().await.unwrap();
        // Credit is what it is over the judged sides alone.
        let config = CreditConfig::default_config();
        let with_run = credit::build_in_buckets(&lake, &config, 1).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let without = credit::build_in_buckets(&two_eval_runs(dir.path()).await, &config, 1)
            .await
            .unwrap();
        assert_eq!(with_run, without);
    }
}
