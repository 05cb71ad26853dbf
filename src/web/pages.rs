//! The pages: what each asks of the lake (DataFrame expressions, never SQL
//! text built from a request) and the context its template renders.

use axum::extract::{Query, State};
use axum::response::Html;
use datafusion::logical_expr::JoinType;
use datafusion::prelude::{col, lit, DataFrame, Expr, SessionContext};
use minijinja::context;
use minijinja::value::{Serde, Value};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::render::{fold, segments, Folded, Segment};
use super::{App, WebError};
use crate::columns::{i64s, strings};
use crate::pipeline::show::{show_in, TurnView, Which};

/// Trajectories a list page shows.
const PAGE: usize = 50;
/// Lines of an observation shown before it is expanded.
const OBS_LINES: usize = 6;
/// Lake commits the lake page lists, newest first.
const COMMITS: usize = 30;

type Page = Result<Html<String>, WebError>;

fn page(app: &App, name: &str, ctx: Value) -> Page {
    Ok(Html(app.templates.get_template(name)?.render(ctx)?))
}

fn lake_error(e: crate::lake::LakeError) -> WebError {
    WebError::Query(super::chain(&e))
}

#[derive(Serialize)]
struct TableRow {
    name: String,
    rows: usize,
    version: u64,
    partition_by: String,
}

#[derive(Serialize)]
struct CommitRow {
    version: u64,
    timestamp: String,
    command: String,
    tables: usize,
}

/// Two lake commits to compare (snapshot names or lake versions).
#[derive(Debug, Default, Deserialize)]
pub struct LakeQuery {
    #[serde(default)]
    a: String,
    #[serde(default)]
    b: String,
}

/// The lake: tables with rows and versions, its commits and snapshots, and
/// what changed between two of them.
pub async fn lake(State(app): State<Arc<App>>, Query(q): Query<LakeQuery>) -> Page {
    let mut tables = Vec::new();
    for info in app.lake.tables().await.map_err(lake_error)? {
        let rows = app.ctx.table(info.name.as_str()).await?.count().await?;
        tables.push(TableRow {
            rows,
            version: info.version,
            partition_by: info.partition_by.join(", "),
            name: info.name,
        });
    }
    let log = app.lake.log().map_err(lake_error)?;
    let mut commits = Vec::new();
    for v in log
        .versions()
        .await
        .map_err(lake_error)?
        .iter()
        .rev()
        .take(COMMITS)
    {
        let c = log.read(*v).await.map_err(lake_error)?;
        commits.push(CommitRow {
            version: c.version,
            timestamp: c.timestamp,
            command: c.command,
            tables: c.tables.len(),
        });
    }
    let snapshots = crate::lake::snapshot::list(&app.lake)
        .await
        .map_err(lake_error)?;
    let diff = match (set(&q.a), set(&q.b)) {
        (Some(a), Some(b)) => {
            use crate::pipeline::lake_state::{diff, state};
            let root = app.lake.root().to_string();
            let bad = |e: crate::pipeline::PipelineError| WebError::BadRequest(super::chain(&e));
            let (ca, ta) = state(&root, a).await.map_err(bad)?;
            let (cb, tb) = state(&root, b).await.map_err(bad)?;
            Some((ca.version, cb.version, diff(&ta, &tb)))
        }
        (None, None) => None,
        _ => return Err(WebError::BadRequest("compare needs both A and B".into())),
    };
    page(
        &app,
        "lake.html",
        context! {
            root => app.lake.root().to_string(),
            pinned => app.lake.is_pinned(),
            a => &q.a,
            b => &q.b,
            diff => Value::from(Serde(&diff)),
            tables => Value::from(Serde(&tables)),
            commits => Value::from(Serde(&commits)),
            snapshots => Value::from(Serde(&snapshots)),
        },
    )
}

/// The list page's filters, as the form sends them (empty = unset).
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct ListQuery {
    #[serde(default)]
    source: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    eval_run: String,
    #[serde(default)]
    score_min: String,
    #[serde(default)]
    score_max: String,
    /// "yes", "no" or empty.
    #[serde(default)]
    looped: String,
    /// A mix of sft_mix whose rows the trajectory trains.
    #[serde(default)]
    product: String,
    /// Text any of its commands holds (case-insensitive).
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: usize,
}

fn set(v: &str) -> Option<&str> {
    Some(v.trim()).filter(|v| !v.is_empty())
}

fn number(name: &str, v: &str) -> Result<Option<f64>, WebError> {
    set(v)
        .map(|v| {
            v.parse::<f64>()
                .map_err(|_| WebError::BadRequest(format!("{name}: {v:?} is not a number")))
        })
        .transpose()
}

/// `df`'s rows whose traj_id is among `ids`'.
fn semi(df: DataFrame, ids: DataFrame) -> Result<DataFrame, WebError> {
    Ok(df.join(
        ids.select(vec![col("traj_id").alias("hit_id")])?,
        JoinType::LeftSemi,
        &["traj_id"],
        &["hit_id"],
        None,
    )?)
}

async fn filtered(ctx: &SessionContext, f: &ListQuery) -> Result<DataFrame, WebError> {
    let mut df = ctx.table("trajectories").await?;
    for (column, value) in [
        ("source", &f.source),
        ("model", &f.model),
        ("eval_run_id", &f.eval_run),
    ] {
        if let Some(v) = set(value) {
            df = df.filter(col(column).eq(lit(v)))?;
        }
    }
    if let Some(x) = number("score_min", &f.score_min)? {
        df = df.filter(col("score").gt_eq(lit(x)))?;
    }
    if let Some(x) = number("score_max", &f.score_max)? {
        df = df.filter(col("score").lt_eq(lit(x)))?;
    }
    match set(&f.looped) {
        None => {}
        Some("yes") => df = df.filter(col("looped"))?,
        Some("no") => df = df.filter(!col("looped"))?,
        Some(other) => {
            return Err(WebError::BadRequest(format!(
                "looped: {other:?} is not yes or no"
            )))
        }
    }
    if let Some(mix) = set(&f.product) {
        let rows = match ctx.table_exist("sft_mix")? {
            true => ctx.table("sft_mix").await?,
            false => {
                return Err(WebError::BadRequest(
                    "the lake has no sft_mix yet (turnlake mix)".into(),
                ))
            }
        };
        df = semi(df, rows.filter(col("mix").eq(lit(mix)))?)?;
    }
    if let Some(q) = set(&f.q) {
        let hits = ctx.table("turns").await?.filter(holds(col("command"), q))?;
        df = semi(df, hits)?;
    }
    Ok(df)
}

/// `text` holds `piece`, case-insensitively: an `ILIKE '%piece%'` with the
/// piece's own `%`, `_` and `\` escaped (Arrow scans it as a substring
/// search, without lowering every command first).
fn holds(text: Expr, piece: &str) -> Expr {
    let mut pattern = String::from("%");
    for c in piece.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    Expr::Like(datafusion::logical_expr::Like::new(
        false,
        Box::new(text),
        Box::new(lit(pattern)),
        Some('\\'),
        true,
    ))
}

/// The distinct values of `column` in trajectories, for a filter's choices.
async fn choices(ctx: &SessionContext, column: &str) -> Result<Vec<String>, WebError> {
    let b = ctx
        .table("trajectories")
        .await?
        .aggregate(vec![col(column)], vec![])?
        .sort(vec![col(column).sort(true, false)])?
        .collect()
        .await?;
    Ok(strings(&b, column).into_iter().flatten().collect())
}

/// The link to a trajectory's page.
fn trajectory_link(traj_id: &str) -> String {
    let q = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("id", traj_id)
        .finish();
    format!("/trajectory?{q}")
}

/// The link to a product row on the mix page.
fn mix_row_link(row_id: &str) -> String {
    let q = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("row", row_id)
        .finish();
    format!("/mix?{q}")
}

/// The list page's link to its page `n`, with the same filters.
fn page_link(f: &ListQuery, n: usize) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in [
        ("source", &f.source),
        ("model", &f.model),
        ("eval_run", &f.eval_run),
        ("score_min", &f.score_min),
        ("score_max", &f.score_max),
        ("looped", &f.looped),
        ("product", &f.product),
        ("q", &f.q),
    ] {
        if set(v).is_some() {
            q.append_pair(k, v);
        }
    }
    q.append_pair("page", &n.to_string());
    format!("/trajectories?{}", q.finish())
}

const LIST_COLUMNS: [&str; 8] = [
    "traj_id",
    "source",
    "model",
    "eval_run_id",
    "side",
    "score",
    "n_turns",
    "looped",
];

/// Trajectories filtered by the structured fields and free text, paged.
pub async fn trajectories(State(app): State<Arc<App>>, Query(f): Query<ListQuery>) -> Page {
    if !app.ctx.table_exist("trajectories")? {
        return Err(WebError::NotFound(
            "the lake has no trajectories yet (turnlake ingest; what an ingest rejected is in `rejects`)".into(),
        ));
    }
    let df = filtered(&app.ctx, &f)
        .await?
        .select_columns(&LIST_COLUMNS)?
        .sort(vec![col("traj_id").sort(true, false)])?
        .limit(f.page * PAGE, Some(PAGE + 1))?;
    let batches = df.collect().await?;
    let columns: Vec<Vec<Option<String>>> =
        LIST_COLUMNS.iter().map(|c| strings(&batches, c)).collect();
    let n = columns[0].len();
    let rows: Vec<(String, Vec<String>)> = (0..n.min(PAGE))
        .map(|i| {
            let cells: Vec<String> = columns
                .iter()
                .map(|c| c[i].clone().unwrap_or_default())
                .collect();
            (trajectory_link(&cells[0]), cells)
        })
        .collect();
    let products = match app.ctx.table_exist("sft_mix")? {
        true => {
            let b = app
                .ctx
                .table("sft_mix")
                .await?
                .aggregate(vec![col("mix")], vec![])?
                .sort(vec![col("mix").sort(true, false)])?
                .collect()
                .await?;
            strings(&b, "mix").into_iter().flatten().collect()
        }
        false => Vec::new(),
    };
    page(
        &app,
        "trajectories.html",
        context! {
            f => Value::from(Serde(&f)),
            columns => LIST_COLUMNS,
            rows,
            sources => choices(&app.ctx, "source").await?,
            models => choices(&app.ctx, "model").await?,
            products,
            first => f.page * PAGE + 1,
            prev => (f.page > 0).then(|| page_link(&f, f.page - 1)),
            next => (n > PAGE).then(|| page_link(&f, f.page + 1)),
        },
    )
}

#[derive(Debug, Deserialize)]
pub struct TrajectoryQuery {
    id: String,
}

/// A question that cites a turn, with the judge's words about this side.
#[derive(Serialize, Clone, Default)]
struct Citing {
    id: String,
    text: String,
    answer: String,
    explanation: String,
}

/// A product row that trains a turn, and its place on the mix page.
#[derive(Serialize)]
struct Trains {
    label: String,
    link: String,
}

#[derive(Serialize)]
struct TurnPage {
    turn: TurnView,
    message: Vec<Segment>,
    observation: Option<Folded>,
    cited: Vec<Citing>,
    blamed: Vec<Citing>,
    /// The local scorer's predicted credit and call, where it labelled the turn.
    scorer: Option<(String, bool)>,
    trains: Vec<Trains>,
}

/// The rows of `table` for this trajectory (none when the lake lacks it).
async fn rows_for(
    ctx: &SessionContext,
    table: &str,
    filter: Expr,
    columns: &[&str],
) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>, WebError> {
    if !ctx.table_exist(table)? {
        return Ok(Vec::new());
    }
    Ok(ctx
        .table(table)
        .await?
        .filter(filter)?
        .select_columns(columns)?
        .collect()
        .await?)
}

/// Each question of the sample by id: its text, and the judge's answer
/// and explanation for this side.
async fn questions(
    ctx: &SessionContext,
    traj_id: &str,
    facts: &[(String, String)],
) -> Result<std::collections::BTreeMap<String, Citing>, WebError> {
    let fact = |name: &str| {
        facts
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut out = std::collections::BTreeMap::new();
    let (Some(run), Some(sample)) = (fact("eval_run_id"), fact("sample_id")) else {
        return Ok(out);
    };
    let q = rows_for(
        ctx,
        "questions",
        col("eval_run_id")
            .eq(lit(run))
            .and(col("sample_id").eq(lit(sample))),
        &["question_id", "text"],
    )
    .await?;
    for (id, text) in strings(&q, "question_id")
        .into_iter()
        .zip(strings(&q, "text"))
    {
        let id = id.unwrap_or_default();
        out.insert(
            id.clone(),
            Citing {
                id,
                text: text.unwrap_or_default(),
                ..Citing::default()
            },
        );
    }
    let j = rows_for(
        ctx,
        "judgments",
        col("traj_id").eq(lit(traj_id)),
        &["question_id", "answer", "explanation"],
    )
    .await?;
    for ((id, answer), explanation) in strings(&j, "question_id")
        .into_iter()
        .zip(i64s(&j, "answer"))
        .zip(strings(&j, "explanation"))
    {
        let id = id.unwrap_or_default();
        let q = out.entry(id.clone()).or_insert_with(|| Citing {
            id,
            ..Citing::default()
        });
        q.answer = match answer {
            Some(1) => "yes".into(),
            Some(0) => "no".into(),
            Some(a) => a.to_string(),
            None => "-".into(),
        };
        q.explanation = explanation.unwrap_or_default();
    }
    Ok(out)
}

/// One trajectory: each turn's message and observation with what the
/// pipeline made of it.
pub async fn trajectory(State(app): State<Arc<App>>, Query(q): Query<TrajectoryQuery>) -> Page {
    let view = show_in(&app.ctx, &Which::TrajId(q.id.clone())).await?;
    let this = || col("traj_id").eq(lit(view.traj_id.as_str()));
    let messages = app
        .ctx
        .table("messages")
        .await?
        .filter(this())?
        .select_columns(&["idx", "role", "content"])?
        .sort(vec![col("idx").sort(true, false)])?
        .collect()
        .await?;
    let (idx, role, content) = (
        i64s(&messages, "idx"),
        strings(&messages, "role"),
        strings(&messages, "content"),
    );
    let at = |i: i64| idx.iter().position(|x| *x == Some(i));
    let asked = questions(&app.ctx, &view.traj_id, &view.facts).await?;
    let citing = |ids: &[String]| -> Vec<Citing> {
        ids.iter()
            .map(|id| {
                asked.get(id).cloned().unwrap_or_else(|| Citing {
                    id: id.clone(),
                    ..Citing::default()
                })
            })
            .collect()
    };
    let labels = rows_for(
        &app.ctx,
        "turn_labels",
        this(),
        &["t", "p_credit", "earns_credit"],
    )
    .await?;
    let scored: std::collections::BTreeMap<i64, (f64, bool)> = i64s(&labels, "t")
        .into_iter()
        .zip(crate::columns::f64s(&labels, "p_credit"))
        .zip(crate::columns::bools(&labels, "earns_credit"))
        .filter_map(|((t, p), e)| Some((t?, (p?, e?))))
        .collect();
    let mut turns = Vec::new();
    for turn in view.turns {
        let own = turn.msg_idx.and_then(at);
        let message = own
            .and_then(|k| content[k].as_deref())
            .map(segments)
            .unwrap_or_default();
        let observation = own
            .map(|k| k + 1)
            .filter(|k| *k < idx.len() && role[*k].as_deref() != Some("assistant"))
            .and_then(|k| content[k].as_deref())
            .map(|text| fold(text, OBS_LINES));
        let trains = turn
            .trained_in
            .iter()
            .map(|label| Trains {
                link: mix_row_link(label.split_once(": ").map_or(label.as_str(), |(_, id)| id)),
                label: label.clone(),
            })
            .collect();
        turns.push(TurnPage {
            cited: citing(&turn.cited_by),
            blamed: citing(&turn.blamed_by),
            scorer: scored.get(&turn.t).map(|(p, e)| (format!("{p:.3}"), *e)),
            trains,
            turn,
            message,
            observation,
        });
    }
    let other_side = other_side(&app.ctx, &view.facts)
        .await?
        .map(|id| trajectory_link(&id));
    page(
        &app,
        "trajectory.html",
        context! {
            traj_id => view.traj_id,
            facts => view.facts,
            turns => Value::from(Serde(&turns)),
            other_side,
        },
    )
}

/// The traj_id of the other side of an Albedo sample.
async fn other_side(
    ctx: &SessionContext,
    facts: &[(String, String)],
) -> Result<Option<String>, WebError> {
    let fact = |name: &str| {
        facts
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let (Some(run), Some(sample), Some(side)) =
        (fact("eval_run_id"), fact("sample_id"), fact("side"))
    else {
        return Ok(None);
    };
    let which: Expr = col("eval_run_id")
        .eq(lit(run))
        .and(col("sample_id").eq(lit(sample)))
        .and(col("side").not_eq(lit(side)));
    let b = ctx
        .table("trajectories")
        .await?
        .filter(which)?
        .select_columns(&["traj_id"])?
        .limit(0, Some(1))?
        .collect()
        .await?;
    Ok(strings(&b, "traj_id").into_iter().flatten().next())
}

#[derive(Debug, Default, Deserialize)]
pub struct MixQuery {
    /// A product row to show first (a trajectory page's link).
    #[serde(default)]
    row: String,
}

/// Example rows the mix page shows per mix.
const EXAMPLES: usize = 3;

#[derive(Serialize)]
struct RowView {
    row_id: String,
    mix: String,
    traj_id: String,
    link: String,
    train_turns: String,
    score: String,
}

fn row_views(batches: &[datafusion::arrow::record_batch::RecordBatch]) -> Vec<RowView> {
    let column = |name| strings(batches, name);
    let (ids, mixes, trajs, scores) = (
        column("row_id"),
        column("mix"),
        column("traj_id"),
        column("score"),
    );
    let turns = column("train_turns");
    (0..ids.len())
        .map(|i| {
            let traj_id = trajs[i].clone().unwrap_or_default();
            RowView {
                row_id: ids[i].clone().unwrap_or_default(),
                mix: mixes[i].clone().unwrap_or_default(),
                link: trajectory_link(&traj_id),
                traj_id,
                train_turns: turns[i].clone().unwrap_or_default(),
                score: scores[i].clone().unwrap_or_default(),
            }
        })
        .collect()
}

/// The mix: its composition by mix, command kind and tag as `mix` reports
/// it, a few rows of each mix, and the row a trajectory page linked to.
pub async fn mix(State(app): State<Arc<App>>, Query(q): Query<MixQuery>) -> Page {
    if !app.ctx.table_exist("sft_mix")? {
        return Err(WebError::NotFound(
            "the lake has no sft_mix yet (turnlake mix)".into(),
        ));
    }
    let report = app
        .mix_report
        .get_or_try_init(|| crate::pipeline::mix::report_of_lake(&app.ctx))
        .await?;
    const ROW_COLUMNS: [&str; 5] = ["row_id", "mix", "traj_id", "train_turns", "score"];
    let rows = || async { app.ctx.table("sft_mix").await };
    let chosen = match set(&q.row) {
        Some(id) => {
            let b = rows()
                .await?
                .filter(col("row_id").eq(lit(id)))?
                .select_columns(&ROW_COLUMNS)?
                .collect()
                .await?;
            match row_views(&b).into_iter().next() {
                Some(r) => Some(r),
                None => {
                    return Err(WebError::NotFound(format!(
                        "no row {id} in sft_mix (a product row the mix did not keep?)"
                    )))
                }
            }
        }
        None => None,
    };
    let mut examples = Vec::new();
    for m in &report.mixes {
        let b = rows()
            .await?
            .filter(col("mix").eq(lit(m.mix.as_str())))?
            .select_columns(&ROW_COLUMNS)?
            .sort(vec![col("row_id").sort(true, false)])?
            .limit(0, Some(EXAMPLES))?
            .collect()
            .await?;
        examples.extend(row_views(&b));
    }
    let validation = validation(&app).await?;
    let percent = |x: f64| format!("{:.1}", 100.0 * x);
    let mixes: Vec<Vec<String>> = report
        .mixes
        .iter()
        .map(|m| {
            vec![
                m.mix.clone(),
                m.rows.to_string(),
                percent(m.share_rows),
                m.train_turns.to_string(),
                percent(m.share_train),
                m.recovery_turns.to_string(),
                m.avg_source_score.map_or("-".into(), |s| format!("{s:.3}")),
            ]
        })
        .collect();
    let shares = |v: &[(String, i64, f64)]| -> Vec<(String, i64, String)> {
        v.iter()
            .map(|(k, n, s)| (k.clone(), *n, percent(*s)))
            .collect()
    };
    page(
        &app,
        "mix.html",
        context! {
            chosen => Value::from(Serde(&chosen)),
            mixes,
            commands => shares(&report.commands),
            tags => shares(&report.tags),
            examples => Value::from(Serde(&examples)),
            validation,
        },
    )
}

/// What the last `turnlake validate` found of the mix, as the lake records
/// it: (figure, value) rows; none when it never ran.
async fn validation(app: &App) -> Result<Vec<(String, String)>, WebError> {
    use crate::pipeline::provenance::Provenance;
    let log = app.lake.log().map_err(lake_error)?;
    let view = app.lake.view().await.map_err(lake_error)?;
    let last = view.commit.as_ref().map_or(0, |c| c.version);
    let mut found = None;
    for v in log.versions().await.map_err(lake_error)?.into_iter().rev() {
        if v > last {
            continue;
        }
        let c = log.read(v).await.map_err(lake_error)?;
        if c.command == "validate" {
            found = Some(c);
            break;
        }
    }
    let Some(commit) = found else {
        return Ok(Vec::new());
    };
    let mut out = vec![(
        "validated at".to_string(),
        format!("lake commit {} ({})", commit.version, commit.timestamp),
    )];
    if let Some(p) = Provenance::recorded(&commit.params) {
        let table = p.params["table"].as_str().unwrap_or("sft_mix").to_string();
        let read = p.inputs.get(&table).copied().flatten();
        let now = view.tables.get(&table).copied();
        out.push((
            format!("{table} version validated"),
            match (read, now) {
                (Some(r), Some(n)) if r == n => format!("{r} (the current one)"),
                (Some(r), Some(n)) => {
                    format!("{r} (stale: the lake holds {n}; run turnlake validate)")
                }
                (r, _) => r.map_or("-".into(), |r| r.to_string()),
            },
        ));
        out.push((
            "rows left out (failing or over the limit)".into(),
            p.dropped.unwrap_or(0).to_string(),
        ));
        for key in ["limit", "mode", "over_limit"] {
            if let Some(v) = p.params.get(key).filter(|v| !v.is_null()) {
                out.push((key.to_string(), v.to_string().trim_matches('"').to_string()));
            }
        }
        let tokenizer = p.params["model_sha256"]
            .as_str()
            .map(|s| format!("model folder {}", s.chars().take(12).collect::<String>()))
            .unwrap_or_else(|| "turnlake's own".into());
        out.push(("tokenizer".into(), tokenizer));
    }
    if app.ctx.table_exist("sft_validated")? {
        let rows = app.ctx.table("sft_validated").await?.count().await?;
        out.push(("rows in sft_validated".into(), rows.to_string()));
    }
    Ok(out)
}

/// The credit report: by command kind and turn index as SVG charts with the
/// reference's marks, every section `turnlake stats` prints (by kind, by
/// turn, exposure bias, ...), and the reproduction table.
pub async fn credit(State(app): State<Arc<App>>) -> Page {
    if !app.ctx.table_exist("turn_credit")? {
        return Err(WebError::NotFound(
            "the lake has no credit yet (turnlake credit)".into(),
        ));
    }
    let report = app
        .credit_report
        .get_or_try_init(|| crate::pipeline::stats::report(&app.lake))
        .await?;
    let svg = |plot: crate::plot::CreditPlot| -> Result<String, WebError> {
        use base64::Engine;
        let text = plot
            .svg(report)
            .map_err(|e| WebError::Query(format!("plotting: {e}")))?;
        Ok(format!(
            "data:image/svg+xml;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(text)
        ))
    };
    let (header, rows) = report.reproduction.rows();
    page(
        &app,
        "credit.html",
        context! {
            scored_turns => report.scored_turns,
            kind_svg => svg(crate::plot::CreditPlot::ByKind)?,
            turn_svg => svg(crate::plot::CreditPlot::ByTurn)?,
            exposure_svg => svg(crate::plot::CreditPlot::Exposure)?,
            sections => report.sections(),
            reproduction_title => report.reproduction.title.clone(),
            reproduction_header => header,
            reproduction_rows => rows,
            notes => report.reproduction.notes.clone(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    #[tokio::test]
    async fn text_search_is_literal_and_case_insensitive() {
        let schema = Arc::new(Schema::new(vec![Field::new(
            "command",
            DataType::Utf8,
            false,
        )]));
        let values = StringArray::from(vec!["a_b", "ab", "50% done", "A_B", "c:\\x"]);
        let batch =
            datafusion::arrow::record_batch::RecordBatch::try_new(schema, vec![Arc::new(values)])
                .unwrap();
        let ctx = SessionContext::new();
        ctx.register_batch("t", batch).unwrap();
        let found = |piece: &str| {
            let ctx = ctx.clone();
            let piece = piece.to_string();
            async move {
                let b = ctx
                    .table("t")
                    .await
                    .unwrap()
                    .filter(holds(col("command"), &piece))
                    .unwrap()
                    .collect()
                    .await
                    .unwrap();
                strings(&b, "command")
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(found("_").await, ["a_b", "A_B"]);
        assert_eq!(found("a_B").await, ["a_b", "A_B"]);
        assert_eq!(found("%").await, ["50% done"]);
        assert_eq!(found("\\").await, ["c:\\x"]);
    }
}
