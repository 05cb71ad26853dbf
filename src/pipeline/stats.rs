//! The credit report: `sql/stats_cells.sql` counted over each bucket of
//! sides, then `sql/stats.sql` over those counts and the lake, read into a
//! plain struct that the CLI renders as a table, markdown, JSON or plots.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::buckets::{bucket_sessions, BUCKET_SIDES};
use super::reproduction::Reproduction;
use super::sqlstep::run_script;
use super::PipelineError;
use crate::columns::{f64s, i64s, scalar_i64, strings};
use crate::engine::{self, EngineError};
use crate::lake::Lake;

pub const SQL_FILE: &str = "sql/stats.sql";
pub const SQL: &str = include_str!("../../sql/stats.sql");
pub const CELLS_FILE: &str = "sql/stats_cells.sql";
pub const CELLS_SQL: &str = include_str!("../../sql/stats_cells.sql");

/// Each count view of `sql/stats_cells.sql` and the table that holds its
/// rows from every bucket, which `sql/stats.sql` reads.
const COUNTS: [(&str, &str); 3] = [
    ("bucket_cells", "stats_cells"),
    ("bucket_citing", "stats_citing"),
    ("bucket_judged_turns", "stats_judged_turns"),
];

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
    /// Share of scored turns whose own observation failed (of those an observation follows).
    pub share_failed_own: f64,
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

/// A program heading commands classified `other`, per source.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OtherHead {
    pub source: String,
    pub head: String,
    pub turns: i64,
    pub share_of_other: f64,
    /// Share of all the source's turns that are `other`.
    pub other_share_of_source: f64,
}

/// The judged Albedo sides one model played.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelStat {
    pub model: String,
    pub sides: i64,
    pub runs: i64,
    /// Sides it played as the king.
    pub king_sides: i64,
    pub mean_score: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Corpus {
    pub samples: i64,
    pub sides: i64,
    pub albedo_turns: i64,
    pub mini_coder_trajectories: i64,
    pub mini_coder_mean_turns: Option<f64>,
    /// Share of mini-coder runs whose last turn submits (any signal).
    pub mini_coder_submit_share: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub corpus: Corpus,
    /// Who played the judged sides, most sides first.
    pub by_model: Vec<ModelStat>,
    pub scored_turns: i64,
    pub by_kind: Vec<KindStat>,
    pub by_turn: Vec<TurnStat>,
    pub exposure: Exposure,
    pub by_tag: Vec<TagStat>,
    /// Share of explanations that cite at least one output.
    pub share_citing: f64,
    /// Share of yes-answers that cite nothing: credit no turn can claim.
    pub share_yes_uncited: f64,
    /// The most common programs inside `other`, per source (top 10 each).
    pub other_heads: Vec<OtherHead>,
    /// Every figure the reference publishes for this step, beside the lake's.
    pub reproduction: Reproduction,
}

/// How many programs inside `other` the report lists per source.
/// A report section: its title, header and rows in display form.
pub type Section = (String, Vec<&'static str>, Vec<Vec<String>>);

impl Report {
    /// The report's sections in display form (the terminal, markdown and
    /// the web app draw them).
    pub fn sections(&self) -> Vec<Section> {
        let r = self;
        let f2 = |x: f64| format!("{x:.3}");
        let f1 = |x: f64| format!("{x:.1}");
        let e = &r.exposure;
        vec![
            (
                format!("Credit by command kind ({} scored turns)", r.scored_turns),
                vec!["cmd_kind", "turns", "share %", "mean credit", "% earning"],
                r.by_kind
                    .iter()
                    .map(|k| {
                        vec![
                            k.cmd_kind.clone(),
                            k.turns.to_string(),
                            f1(100.0 * k.share),
                            f2(k.mean_credit),
                            f1(k.pct_earning),
                        ]
                    })
                    .collect(),
            ),
            (
                "Credit by turn index".into(),
                vec!["t", "turns", "mean credit", "% earning"],
                r.by_turn
                    .iter()
                    .map(|t| {
                        vec![
                            t.t.to_string(),
                            t.turns.to_string(),
                            f2(t.mean_credit),
                            f1(t.pct_earning),
                        ]
                    })
                    .collect(),
            ),
            (
                "Exposure bias".into(),
                vec!["measure", "value"],
                vec![
                    vec![
                        "scored turns whose own observation failed (%)".into(),
                        f1(100.0 * e.share_failed_own),
                    ],
                    vec![
                        "turns after a failed observation (%)".into(),
                        f1(100.0 * e.share_after_failure),
                    ],
                    vec![
                        "% earning after a failure".into(),
                        f1(e.pct_earning_after_failure),
                    ],
                    vec!["% earning otherwise".into(), f1(e.pct_earning_otherwise)],
                    vec![
                        "% earning, all scored turns (baseline)".into(),
                        f1(e.pct_earning_baseline),
                    ],
                    vec![
                        "relative cost of one bad command (%)".into(),
                        f1(100.0 * e.relative_cost),
                    ],
                ],
            ),
            (
                "Who played: judged sides by model".into(),
                vec!["model", "sides", "runs", "as king", "mean score"],
                r.by_model
                    .iter()
                    .map(|m| {
                        vec![
                            m.model.clone(),
                            m.sides.to_string(),
                            m.runs.to_string(),
                            m.king_sides.to_string(),
                            m.mean_score.map(f2).unwrap_or_default(),
                        ]
                    })
                    .collect(),
            ),
            (
                "Credit by tag".into(),
                vec!["tag", "credit", "share %"],
                r.by_tag
                    .iter()
                    .map(|t| vec![t.tag.clone(), f1(t.credit), f1(100.0 * t.share)])
                    .collect(),
            ),
            (
                "Citations".into(),
                vec!["measure", "value"],
                vec![
                    vec![
                        "explanations that cite an output (%)".into(),
                        f1(100.0 * r.share_citing),
                    ],
                    vec![
                        "yes-answers citing nothing (%)".into(),
                        f1(100.0 * r.share_yes_uncited),
                    ],
                ],
            ),
            (
                "What `other` holds: the commonest programs, per source".into(),
                vec![
                    "source",
                    "program",
                    "turns",
                    "% of other",
                    "other % of source",
                ],
                r.other_heads
                    .iter()
                    .map(|h| {
                        vec![
                            h.source.clone(),
                            h.head.clone(),
                            h.turns.to_string(),
                            f1(100.0 * h.share_of_other),
                            f1(100.0 * h.other_share_of_source),
                        ]
                    })
                    .collect(),
            ),
        ]
    }
}

const OTHER_HEADS: usize = 10;

async fn view(
    ctx: &datafusion::prelude::SessionContext,
    name: &'static str,
    order: &str,
) -> Result<Vec<RecordBatch>, PipelineError> {
    Ok(engine::run_sql(
        ctx,
        &format!("SELECT * FROM {name} {order}"),
        &format!("{SQL_FILE}, {name}"),
    )
    .await?)
}

/// Count `sql/stats_cells.sql` over each bucket of at most `bucket_sides`
/// judged sides (one bucket on a cluster), and register each count view's
/// rows from every bucket in `ctx` as one table: the joins of scored turns
/// with their credit hold one bucket at a time.
async fn count_in_buckets(
    ctx: &SessionContext,
    lake: &Lake,
    bucket_sides: usize,
) -> Result<(), PipelineError> {
    let sessions = bucket_sessions(
        lake,
        ctx,
        bucket_sides,
        &["judgments", "trajectories", "turns", "turn_credit"],
        &[],
    )
    .await?;
    // Each count view's schema (the same in every bucket) and rows.
    let mut counts: Vec<(Option<SchemaRef>, Vec<RecordBatch>)> =
        vec![(None, Vec::new()); COUNTS.len()];
    for (session, bucket) in &sessions {
        run_script(session, CELLS_FILE, CELLS_SQL).await?;
        for ((view, _), (schema, rows)) in COUNTS.iter().zip(counts.iter_mut()) {
            let err = EngineError::query(format!("{CELLS_FILE}, {view}{bucket}"));
            let frame = session.table(*view).await.map_err(&err)?;
            schema.get_or_insert_with(|| Arc::new(frame.schema().as_arrow().clone()));
            rows.extend(frame.collect().await.map_err(&err)?);
        }
    }
    for ((_, table), (schema, rows)) in COUNTS.iter().zip(counts) {
        let err = EngineError::query(format!("{CELLS_FILE}, collecting {table}"));
        let schema = schema.expect("bucket_sessions gives one bucket at least");
        let counts = MemTable::try_new(schema, vec![rows]).map_err(&err)?;
        ctx.register_table(*table, Arc::new(counts)).map_err(&err)?;
    }
    Ok(())
}

/// Compute the report from the lake's credit tables.
pub async fn report(lake: &Lake) -> Result<Report, PipelineError> {
    report_in_buckets(lake, BUCKET_SIDES).await
}

/// [`report`], counting at most `bucket_sides` judged sides at a time.
pub async fn report_in_buckets(lake: &Lake, bucket_sides: usize) -> Result<Report, PipelineError> {
    if lake.table("turn_credit").await?.is_none() {
        return Err(PipelineError::Missing(
            "turn_credit",
            "run `turnlake credit` first",
        ));
    }
    let ctx = engine::step_session(lake).await?;
    count_in_buckets(&ctx, lake, bucket_sides).await?;
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
        share_failed_own: one("share_failed_own"),
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

    let b = view(&ctx, "stats_citing_shares", "").await?;
    let one = |name: &str| first(&b, name);
    let (share_citing, share_yes_uncited) = (one("share_citing"), one("share_yes_uncited"));
    let scored = view(&ctx, "stats_scored", "").await?;

    let b = view(&ctx, "stats_by_model", "ORDER BY sides DESC, model").await?;
    let (models, sides, runs, king_sides, mean_score) = (
        strings(&b, "model"),
        i64s(&b, "sides"),
        i64s(&b, "runs"),
        i64s(&b, "king_sides"),
        f64s(&b, "mean_score"),
    );
    let by_model = (0..models.len())
        .map(|i| ModelStat {
            model: models[i].clone().unwrap_or_default(),
            sides: sides[i].unwrap_or(0),
            runs: runs[i].unwrap_or(0),
            king_sides: king_sides[i].unwrap_or(0),
            mean_score: mean_score[i],
        })
        .collect();

    let b = view(&ctx, "stats_corpus", "").await?;
    let count = |name: &str| i64s(&b, name).first().copied().flatten().unwrap_or(0);
    let share = |name: &str| f64s(&b, name).first().copied().flatten();
    let corpus = Corpus {
        samples: count("samples"),
        sides: count("sides"),
        albedo_turns: count("albedo_turns"),
        mini_coder_trajectories: count("mini_coder_trajectories"),
        mini_coder_mean_turns: share("mini_coder_mean_turns"),
        mini_coder_submit_share: share("mini_coder_submit_share"),
    };

    let b = view(
        &ctx,
        "stats_other_heads",
        "ORDER BY source, turns DESC, head",
    )
    .await?;
    let (src, head, turns, share, of_source) = (
        strings(&b, "source"),
        strings(&b, "head"),
        i64s(&b, "turns"),
        f64s(&b, "share_of_other"),
        f64s(&b, "other_share_of_source"),
    );
    let mut other_heads: Vec<OtherHead> = Vec::new();
    for i in 0..src.len() {
        let source = src[i].clone().unwrap_or_default();
        if other_heads.iter().filter(|h| h.source == source).count() < OTHER_HEADS {
            other_heads.push(OtherHead {
                source,
                head: head[i].clone().unwrap_or_default(),
                turns: turns[i].unwrap_or(0),
                share_of_other: num(share[i]),
                other_share_of_source: num(of_source[i]),
            });
        }
    }

    let mut report = Report {
        corpus,
        by_model,
        scored_turns: scalar_i64(&scored),
        by_kind,
        by_turn,
        exposure,
        by_tag,
        share_citing,
        share_yes_uncited,
        other_heads,
        reproduction: Reproduction::default(),
    };
    report.reproduction = reproduction(&report);
    Ok(report)
}

/// The reference's credit figures beside the lake's.
fn reproduction(r: &Report) -> Reproduction {
    let mut t = Reproduction::new("Reproduction: credit (turnlake stats)");
    let kind = |k: &str| r.by_kind.iter().find(|s| s.cmd_kind == k);
    let turn = |n: i64| r.by_turn.iter().find(|s| s.t == n);
    t.add("corpus.samples", Some(r.corpus.samples as f64));
    t.add("corpus.sides", Some(r.corpus.sides as f64));
    t.add("corpus.albedo_turns", Some(r.corpus.albedo_turns as f64));
    t.add(
        "corpus.mini_coder.trajectories",
        Some(r.corpus.mini_coder_trajectories as f64),
    );
    t.add(
        "corpus.mini_coder.mean_turns",
        r.corpus.mini_coder_mean_turns,
    );
    t.add(
        "corpus.mini_coder.submit_share",
        r.corpus.mini_coder_submit_share.map(|v| 100.0 * v),
    );
    for (label, key) in [("cat -n", "cat_n"), ("find/ls", "find_ls")] {
        t.add(
            &format!("stats.{key}.mean_credit"),
            kind(label).map(|k| k.mean_credit),
        );
        t.add(
            &format!("stats.{key}.pct_earning"),
            kind(label).map(|k| k.pct_earning),
        );
    }
    t.add("stats.turn1.mean_credit", turn(1).map(|s| s.mean_credit));
    t.add("stats.turn15.mean_credit", turn(15).map(|s| s.mean_credit));
    let e = &r.exposure;
    t.add("stats.failed_own", Some(100.0 * e.share_failed_own));
    t.add(
        "stats.earning_after_failure",
        Some(e.pct_earning_after_failure),
    );
    t.add("stats.earning_all", Some(e.pct_earning_baseline));
    t.add("stats.citing", Some(100.0 * r.share_citing));
    t.note("the failure share counts each scored turn's own observation, over the scored turns an observation follows");
    t
}

/// The first value of a one-row result's column.
fn first(batches: &[RecordBatch], name: &str) -> f64 {
    num(f64s(batches, name).first().copied().flatten())
}

/// A figure SQL left null (no turns to average) reads as NaN.
fn num(v: Option<f64>) -> f64 {
    v.unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::credit::{self, tests::two_eval_runs, CreditConfig};

    #[tokio::test]
    async fn the_report_over_buckets_of_one_side_equals_the_report_over_one_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let lake = two_eval_runs(dir.path()).await;
        credit::build(&lake, &CreditConfig::default_config())
            .await
            .unwrap();
        let whole = report_in_buckets(&lake, 1000).await.unwrap();
        let bucketed = report_in_buckets(&lake, 1).await.unwrap();
        assert_eq!(bucketed, whole);

        // Eight sides of three turns; turns 2 and 3 are scored, turn 2's
        // own observation failed, turn 3 follows a failure.
        let c = &whole.corpus;
        assert_eq!((c.samples, c.sides, c.albedo_turns), (4, 8, 24));
        assert_eq!(whole.scored_turns, 16);
        let kinds: Vec<(&str, i64)> = whole
            .by_kind
            .iter()
            .map(|k| (k.cmd_kind.as_str(), k.turns))
            .collect();
        for kind in [("find/ls", 7), ("other", 6), ("grep", 3)] {
            assert!(kinds.contains(&kind), "{kinds:?}");
        }
        assert_eq!(whole.exposure.share_failed_own, 1.0);
        assert_eq!(whole.exposure.share_after_failure, 0.5);
        assert!(whole.share_citing > 0.0 && whole.share_citing <= 1.0);

        // The sums of counts give what averages over the scored turns give,
        // to the last bit.
        let ctx = engine::step_session(&lake).await.unwrap();
        let direct = engine::run_sql(
            &ctx,
            "SELECT s.cmd_kind, avg(c.credit) AS mean_credit, \
                    100.0 * avg(CAST(c.credit > 0 AS DOUBLE)) AS pct_earning \
             FROM turns s JOIN turn_credit c ON c.traj_id = s.traj_id AND c.t = s.t \
             WHERE s.source = 'albedo' GROUP BY s.cmd_kind ORDER BY s.cmd_kind",
            "averages over the scored turns",
        )
        .await
        .unwrap();
        let mut by_kind: Vec<(String, f64, f64)> = whole
            .by_kind
            .iter()
            .map(|k| (k.cmd_kind.clone(), k.mean_credit, k.pct_earning))
            .collect();
        by_kind.sort_by(|a, b| a.0.cmp(&b.0));
        let (kinds, mean, pct) = (
            strings(&direct, "cmd_kind"),
            f64s(&direct, "mean_credit"),
            f64s(&direct, "pct_earning"),
        );
        let direct: Vec<(String, f64, f64)> = (0..kinds.len())
            .map(|i| (kinds[i].clone().unwrap(), num(mean[i]), num(pct[i])))
            .collect();
        assert_eq!(by_kind, direct);
        // One of three: 100 x (1 / 3) and (100 x 1) / 3 differ in the last bit.
        assert!(
            direct
                .iter()
                .any(|(kind, _, pct)| kind == "grep" && *pct == 100.0 * (1.0 / 3.0)),
            "{direct:?}"
        );
    }
}
