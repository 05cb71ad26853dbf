//! The credit step: `sql/credit.sql` over judgments, questions, turns and
//! trajectories, with tag weights from the credit config, writing
//! `credit_citations`, `turn_credit` and `side_credit`.

use arrow::array::{ArrayRef, BooleanArray, Float64Array, StringArray};
use arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::buckets::{bucket_sessions, BUCKET_SIDES};
use super::sqlstep::run_script;
use super::PipelineError;
use crate::engine;
use crate::lake::Lake;

pub const SQL_FILE: &str = "sql/credit.sql";
pub const SQL: &str = include_str!("../../sql/credit.sql");
pub const DEFAULT_CONFIG: &str = include_str!("../../data/credit.toml");
/// The step's outputs: (table, view, order).
const OUTPUTS: [(&str, &str, &str); 3] = [
    (
        "credit_citations",
        "credit_citations_v",
        "traj_id, question_id, candidate_n",
    ),
    ("turn_credit", "turn_credit_v", "traj_id, t"),
    ("side_credit", "side_credit_v", "traj_id"),
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CreditConfig {
    #[serde(default)]
    pub split_multi: bool,
    #[serde(default)]
    pub tag_weights: BTreeMap<String, f64>,
}

impl CreditConfig {
    pub fn from_toml(text: &str) -> Result<CreditConfig, String> {
        let c: CreditConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if let Some((tag, w)) = c
            .tag_weights
            .iter()
            .find(|(_, w)| !w.is_finite() || **w < 0.0)
        {
            return Err(format!(
                "tag_weights.{tag} = {w}: a weight must be a finite number >= 0"
            ));
        }
        Ok(c)
    }

    pub fn default_config() -> CreditConfig {
        CreditConfig::from_toml(DEFAULT_CONFIG).expect("data/credit.toml is valid")
    }

    /// The weight of tags not listed.
    pub fn default_weight(&self) -> f64 {
        self.tag_weights.get("default").copied().unwrap_or(1.0)
    }
}

/// What one credit build wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreditSummary {
    pub citations: usize,
    pub invalid_citations: usize,
    pub turns: usize,
    pub sides: usize,
}

/// Register the config as the tables the SQL reads.
pub fn register_config(ctx: &SessionContext, config: &CreditConfig) -> Result<(), PipelineError> {
    let tags: Vec<&String> = config
        .tag_weights
        .keys()
        .filter(|t| *t != "default")
        .collect();
    let weights = RecordBatch::try_from_iter(vec![
        (
            "tag",
            Arc::new(StringArray::from_iter_values(
                tags.iter().map(|t| t.as_str()),
            )) as ArrayRef,
        ),
        (
            "weight",
            Arc::new(Float64Array::from_iter_values(
                tags.iter().map(|t| config.tag_weights[*t]),
            )) as ArrayRef,
        ),
    ])
    .map_err(|e| PipelineError::Params(e.into()))?;
    let params = RecordBatch::try_from_iter(vec![
        (
            "split_multi",
            Arc::new(BooleanArray::from(vec![config.split_multi])) as ArrayRef,
        ),
        (
            "default_weight",
            Arc::new(Float64Array::from(vec![config.default_weight()])) as ArrayRef,
        ),
    ])
    .map_err(|e| PipelineError::Params(e.into()))?;
    for (name, batch) in [("tag_weights", weights), ("credit_params", params)] {
        let table =
            MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(PipelineError::Params)?;
        let _ = ctx.deregister_table(name);
        ctx.register_table(name, Arc::new(table))
            .map_err(PipelineError::Params)?;
    }
    Ok(())
}

/// Run the credit SQL in `ctx` (inputs registered) and return each output's rows.
#[cfg(test)]
async fn compute(
    ctx: &SessionContext,
    config: &CreditConfig,
) -> Result<Vec<(&'static str, Vec<RecordBatch>)>, PipelineError> {
    prepare(ctx, config).await?;
    let mut out = Vec::new();
    for (table, view, order) in OUTPUTS {
        let sql = output_sql(view, order);
        out.push((
            table,
            engine::run_sql(ctx, &sql, &format!("{SQL_FILE}, {view}")).await?,
        ));
    }
    Ok(out)
}

/// Register the config's tables and the credit SQL's views in `ctx`.
async fn prepare(ctx: &SessionContext, config: &CreditConfig) -> Result<(), PipelineError> {
    register_config(ctx, config)?;
    run_script(ctx, SQL_FILE, SQL).await?;
    Ok(())
}

/// The query of one output: its view, in the output's order.
fn output_sql(view: &str, order: &str) -> String {
    format!("SELECT * FROM {view} ORDER BY {order}")
}

/// How many rows of `batch`'s boolean column `name` are false.
fn count_false(batch: &RecordBatch, name: &str) -> usize {
    batch
        .column_by_name(name)
        .map_or(0, |c| arrow::array::AsArray::as_boolean(c).false_count())
}

/// Build the credit tables in `lake`, as one step.
pub async fn build(lake: &Lake, config: &CreditConfig) -> Result<CreditSummary, PipelineError> {
    build_in_buckets(lake, config, BUCKET_SIDES).await
}

/// [`build`], with at most `bucket_sides` judged sides per bucket.
pub async fn build_in_buckets(
    lake: &Lake,
    config: &CreditConfig,
    bucket_sides: usize,
) -> Result<CreditSummary, PipelineError> {
    let step = super::step::Step::begin(
        lake,
        &super::steps::CREDIT,
        serde_json::to_value(config).expect("the credit config serializes"),
    )
    .await?;
    // Credit belongs to one side: each bucket of sides is computed in its
    // own session over that bucket's rows, and each output streams into its
    // table bucket after bucket (each is ordered by traj_id first).
    let sessions = bucket_sessions(
        lake,
        &step.ctx,
        bucket_sides,
        &["judgments", "trajectories", "turns"],
        &["questions"],
    )
    .await?;
    for (session, _) in &sessions {
        prepare(session, config).await?;
    }
    let invalid = Arc::new(AtomicUsize::new(0));
    let mut rows = BTreeMap::new();
    for (table, view, order) in OUTPUTS {
        let invalid = Arc::clone(&invalid);
        let per_bucket = futures::stream::iter(sessions.clone())
            .then(move |(session, bucket)| async move {
                let context = format!("{SQL_FILE}, {view}{bucket}");
                engine::stream_sql(&session, &output_sql(view, order), &context).await
            })
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
            .try_flatten()
            .inspect_ok(move |batch| {
                if table == "credit_citations" {
                    invalid.fetch_add(count_false(batch, "valid"), Ordering::Relaxed);
                }
            });
        rows.insert(table, step.write_stream(table, per_bucket).await?);
    }
    let summary = CreditSummary {
        citations: rows["credit_citations"],
        invalid_citations: invalid.load(Ordering::Relaxed),
        turns: rows["turn_credit"],
        sides: rows["side_credit"],
    };
    step.finish().await?;
    Ok(summary)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::source::rows::{
        judgments_batch, questions_batch, trajectories_batch, turns_batch, JudgmentRow,
        QuestionRow, TrajectoryRow, TurnRow,
    };
    use crate::turn::parse_citations;
    use arrow::array::AsArray;
    use arrow::datatypes::{Float64Type, Int32Type};

    /// A step that only looks: no inputs pinned, nothing written.
    const LOOK: crate::pipeline::steps::StepSpec = crate::pipeline::steps::StepSpec {
        name: "look",
        inputs: &[],
        records: "none",
        sql: Some((SQL_FILE, SQL)),
    };

    const TRAJ: &str = "albedo/r/s/challenger";
    const LOOPED: &str = "albedo/r/s/previous_king";

    fn judgment(traj: &str, q: &str, answer: i32, text: &str) -> JudgmentRow {
        JudgmentRow {
            eval_run_id: "r".into(),
            sample_id: "s".into(),
            side: traj.rsplit('/').next().unwrap().into(),
            traj_id: traj.into(),
            question_id: q.into(),
            answer: Some(answer),
            cited_outputs: parse_citations(text)
                .into_iter()
                .map(|n| n as i32)
                .collect(),
            explanation: Some(text.into()),
            judge_model: None,
            looped: traj == LOOPED,
        }
    }

    /// A side's `n` turns: a context turn, then scored outputs 1..n-1.
    fn side_turns(traj: &str, n: i32) -> Vec<TurnRow> {
        (1..=n)
            .map(|t| TurnRow {
                traj_id: traj.into(),
                source: "albedo".into(),
                t,
                candidate_n: (t > 1).then_some(t - 1),
                turn_sha: format!("{traj}{t}"),
                cmd_kind: "other".into(),
                ..Default::default()
            })
            .collect()
    }

    /// One sample: a side with a context turn and three scored outputs, and a looped side.
    async fn context(judgments: Vec<JudgmentRow>) -> SessionContext {
        let ctx = SessionContext::new();
        let mut trajectories = Vec::new();
        let mut turns = Vec::new();
        for (traj, looped) in [(TRAJ, false), (LOOPED, true)] {
            trajectories.push(TrajectoryRow {
                traj_id: traj.into(),
                source: "albedo".into(),
                judged: true,
                n_scored: 3,
                looped,
                ..Default::default()
            });
            turns.extend(side_turns(traj, 4));
        }
        let questions: Vec<QuestionRow> = [
            ("q1", "explore"),
            ("q2", "verification"),
            ("q3", "economy"),
            ("q4", "claims"),
        ]
        .iter()
        .map(|(q, tag)| QuestionRow {
            eval_run_id: "r".into(),
            sample_id: "s".into(),
            question_id: q.to_string(),
            tag: Some(tag.to_string()),
            ..Default::default()
        })
        .collect();
        for (name, batch) in [
            ("trajectories", trajectories_batch(&trajectories).unwrap()),
            ("turns", turns_batch(&turns).unwrap()),
            ("questions", questions_batch(&questions).unwrap()),
            ("judgments", judgments_batch(&judgments).unwrap()),
        ] {
            ctx.register_table(
                name,
                Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap()),
            )
            .unwrap();
        }
        ctx
    }

    /// (t, credit, blame, tags) per scored turn of TRAJ, and the invalid citations' reasons.
    async fn run(
        judgments: Vec<JudgmentRow>,
        config: &CreditConfig,
    ) -> (Vec<(i32, f64, f64, String)>, Vec<String>, Vec<i64>) {
        let ctx = context(judgments).await;
        let out = compute(&ctx, config).await.unwrap();
        let turn_credit = &out.iter().find(|(t, _)| *t == "turn_credit").unwrap().1;
        let mut turns = Vec::new();
        for b in turn_credit {
            let ids = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8).unwrap();
            let tags = b.column_by_name("tags").unwrap().as_list::<i32>().clone();
            for i in 0..b.num_rows() {
                if ids.as_string::<i32>().value(i) != TRAJ {
                    assert_eq!(
                        b.column_by_name("credit")
                            .unwrap()
                            .as_primitive::<Float64Type>()
                            .value(i),
                        0.0,
                        "a looped side earns nothing"
                    );
                    continue;
                }
                let tag_list = tags.value(i);
                let tag_text =
                    arrow::compute::cast(&tag_list, &arrow::datatypes::DataType::Utf8).unwrap();
                let tag_text: Vec<String> = tag_text
                    .as_string::<i32>()
                    .iter()
                    .map(|s| s.unwrap_or("").to_string())
                    .collect();
                turns.push((
                    b.column_by_name("t")
                        .unwrap()
                        .as_primitive::<Int32Type>()
                        .value(i),
                    b.column_by_name("credit")
                        .unwrap()
                        .as_primitive::<Float64Type>()
                        .value(i),
                    b.column_by_name("blame")
                        .unwrap()
                        .as_primitive::<Float64Type>()
                        .value(i),
                    tag_text.join(","),
                ));
            }
        }
        let invalid = engine::run_sql(
            &ctx,
            "SELECT reason FROM credit_citations_v WHERE NOT valid ORDER BY reason",
            "t",
        )
        .await
        .unwrap();
        let reasons = invalid
            .iter()
            .flat_map(|b| {
                let c =
                    arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8).unwrap();
                c.as_string::<i32>()
                    .iter()
                    .map(|s| s.unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        let uncited = engine::run_sql(
            &ctx,
            &format!("SELECT yes_uncited FROM side_credit_v WHERE traj_id = '{TRAJ}'"),
            "t",
        )
        .await
        .unwrap();
        let uncited = uncited
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        (turns, reasons, uncited)
    }

    /// Every output of a lake-built credit step, each as its rows in file
    /// order (one partition reads the files in turn).
    async fn lake_outputs(lake: &Lake) -> Vec<String> {
        let ctx = SessionContext::new_with_config(
            datafusion::prelude::SessionConfig::new().with_target_partitions(1),
        );
        let mut out = Vec::new();
        for (table, _, _) in OUTPUTS {
            let delta = lake.table(table).await.unwrap().unwrap();
            ctx.register_table(table, delta.table_provider().await.unwrap())
                .unwrap();
            let rows = engine::run_sql(&ctx, &format!("SELECT * FROM {table}"), table)
                .await
                .unwrap();
            out.push(
                arrow::util::pretty::pretty_format_batches(&rows)
                    .unwrap()
                    .to_string(),
            );
        }
        out
    }

    /// A lake of two eval runs of two samples, two sides each, ingested:
    /// judgments citing valid and missing outputs, and a judged side with no
    /// trajectory.
    pub(crate) async fn two_eval_runs(dir: &std::path::Path) -> Lake {
        let lake = Lake::open(dir.to_str().unwrap()).unwrap();
        let (mut trajectories, mut turns, mut questions, mut judgments) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for run in ["r1", "r2"] {
            for sample in ["s1", "s2"] {
                for (q, tag) in [("q1", "explore"), ("q2", "verification")] {
                    questions.push(QuestionRow {
                        eval_run_id: run.into(),
                        sample_id: sample.into(),
                        question_id: q.into(),
                        tag: Some(tag.into()),
                        ..Default::default()
                    });
                }
                for (k, side) in ["challenger", "previous_king", "missing"]
                    .iter()
                    .enumerate()
                {
                    let traj = format!("albedo/{run}/{sample}/{side}");
                    if *side != "missing" {
                        trajectories.push(TrajectoryRow {
                            traj_id: traj.clone(),
                            source: "albedo".into(),
                            eval_run_id: Some(run.into()),
                            sample_id: Some(sample.into()),
                            side: Some(side.to_string()),
                            judged: true,
                            n_scored: 2,
                            ..Default::default()
                        });
                        turns.extend(side_turns(&traj, 3).into_iter().map(|mut u| {
                            // Kinds and failures vary, for the report's counts;
                            // `grep` has three scored turns, one earning.
                            u.cmd_kind = ["cat -n", "find/ls", "other"][(u.t - 1) as usize].into();
                            if u.t > 1 && traj == "albedo/r1/s1/challenger"
                                || u.t == 3 && traj == "albedo/r2/s2/challenger"
                            {
                                u.cmd_kind = "grep".into();
                            }
                            u.obs_failed = (u.t < 3).then_some(u.t == 2);
                            u.prev_failed = u.t == 3;
                            u
                        }));
                    }
                    for (q, answer, text) in [
                        ("q1", 1, format!("CANDIDATE OUTPUT {} explores.", k + 1)),
                        (
                            "q2",
                            k as i32 % 2,
                            "CANDIDATE OUTPUTS 1 and 3 check.".to_string(),
                        ),
                    ] {
                        let mut j = judgment(&traj, q, answer, &text);
                        (j.eval_run_id, j.sample_id) = (run.into(), sample.into());
                        judgments.push(j);
                    }
                }
            }
        }
        let mut writer = lake.begin("ingest", serde_json::json!({})).await.unwrap();
        for (name, batch) in [
            ("trajectories", trajectories_batch(&trajectories).unwrap()),
            ("turns", turns_batch(&turns).unwrap()),
            ("questions", questions_batch(&questions).unwrap()),
            ("judgments", judgments_batch(&judgments).unwrap()),
        ] {
            lake.append(name, vec![batch]).await.unwrap();
        }
        writer.commit().await.unwrap();
        writer.release().await.unwrap();

        lake
    }

    #[tokio::test]
    async fn credit_over_buckets_of_one_side_equals_credit_over_one_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let lake = two_eval_runs(dir.path()).await;
        let config = CreditConfig::default_config();
        let whole = build_in_buckets(&lake, &config, 1000).await.unwrap();
        let whole_rows = lake_outputs(&lake).await;
        let step = super::super::step::Step::begin(&lake, &LOOK, serde_json::json!({}))
            .await
            .unwrap();
        let buckets = super::super::buckets::side_buckets(&step.ctx, 1)
            .await
            .unwrap();
        step.finish().await.unwrap();
        // Buckets hold whole eval runs: at one side a bucket, one per eval run.
        assert_eq!(buckets.len(), 2, "one bucket per eval run");
        let bucketed = build_in_buckets(&lake, &config, 1).await.unwrap();
        assert_eq!(bucketed, whole);
        assert_eq!(lake_outputs(&lake).await, whole_rows);
        assert_eq!(
            (whole.sides, whole.turns),
            (8, 16),
            "sides with a trajectory"
        );
        assert!(
            whole.invalid_citations > 0,
            "the missing sides' citations are kept as invalid"
        );
    }

    #[tokio::test]
    async fn multi_citations_give_each_turn_the_full_weight_by_default() {
        let (turns, reasons, uncited) = run(
            vec![
                judgment(TRAJ, "q1", 1, "CANDIDATE OUTPUTS 1-2 narrow the search."),
                judgment(TRAJ, "q2", 1, "CANDIDATE OUTPUTS 1 and 3 verify."),
                judgment(TRAJ, "q3", 1, "The outputs are short."),
                judgment(
                    TRAJ,
                    "q4",
                    0,
                    "CANDIDATE OUTPUT 3 claims what it never saw.",
                ),
                judgment(LOOPED, "q1", 0, "Trajectory is looped: ls repeats."),
            ],
            &CreditConfig::default_config(),
        )
        .await;
        assert_eq!(
            turns,
            vec![
                (2, 2.0, 0.0, "explore,verification".to_string()),
                (3, 1.0, 0.0, "explore".to_string()),
                (4, 1.0, 1.0, "verification".to_string()),
            ]
        );
        assert!(reasons.is_empty());
        assert_eq!(
            uncited,
            vec![1],
            "the yes without a citation is credit no turn can claim"
        );
    }

    #[tokio::test]
    async fn split_and_tag_weights_come_from_the_config() {
        let config = CreditConfig::from_toml(
            "split_multi = true\n[tag_weights]\nexplore = 3.0\ndefault = 0.5\n",
        )
        .unwrap();
        let (turns, _, _) = run(
            vec![
                judgment(TRAJ, "q1", 1, "CANDIDATE OUTPUTS 1,2,3 all explore."),
                judgment(TRAJ, "q2", 1, "CANDIDATE OUTPUT 2 verifies."),
            ],
            &config,
        )
        .await;
        let credit: Vec<f64> = turns.iter().map(|t| t.1).collect();
        assert_eq!(credit, vec![1.0, 1.5, 1.0]);
    }

    #[tokio::test]
    async fn citations_beyond_the_side_are_rejected_with_a_reason() {
        let (turns, reasons, _) = run(
            vec![judgment(
                TRAJ,
                "q1",
                1,
                "CANDIDATE OUTPUTS 3, 7-8 and CANDIDATE OUTPUT 0 read files.",
            )],
            &CreditConfig::default_config(),
        )
        .await;
        assert_eq!(
            turns.iter().map(|t| t.1).collect::<Vec<_>>(),
            vec![0.0, 0.0, 1.0]
        );
        assert_eq!(
            reasons,
            vec![
                "cites CANDIDATE OUTPUT 0 but the side has 3 scored outputs",
                "cites CANDIDATE OUTPUT 7 but the side has 3 scored outputs",
                "cites CANDIDATE OUTPUT 8 but the side has 3 scored outputs",
            ]
        );
    }

    #[test]
    fn bad_weights_are_refused() {
        assert!(CreditConfig::from_toml("[tag_weights]\nexplore = -1.0\n").is_err());
        assert!(CreditConfig::from_toml("split_multi = \"yes\"\n").is_err());
    }
}
