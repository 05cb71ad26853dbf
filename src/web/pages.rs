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

/// The lake: tables with rows and versions, its commits and snapshots.
pub async fn lake(State(app): State<Arc<App>>) -> Page {
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
    page(
        &app,
        "lake.html",
        context! {
            root => app.lake.root().to_string(),
            pinned => app.lake.is_pinned(),
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
        use datafusion::functions::expr_fn::{lower, strpos};
        let hits = ctx
            .table("turns")
            .await?
            .filter(strpos(lower(col("command")), lit(q.to_lowercase())).gt(lit(0)))?;
        df = semi(df, hits)?;
    }
    Ok(df)
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

#[derive(Serialize)]
struct TurnPage {
    turn: TurnView,
    message: Vec<Segment>,
    observation: Option<Folded>,
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
        turns.push(TurnPage {
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
