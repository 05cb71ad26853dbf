//! The SQL page: one query at a time over the app's session, under
//! [`Access::QueryOnly`], stopped at a time and a row limit; the result as
//! a paged table, or downloaded as CSV or Parquet.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use futures::StreamExt;
use minijinja::context;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

use super::{chain, App, WebError};
use crate::engine::{self, Access};
use crate::output::{Format, ResultWriter, TableCap};

/// Rows a query may return (shown in pages, or downloaded); it stops there.
const MAX_ROWS: usize = 10_000;
/// Bytes of result a query may return (long transcripts reach it before
/// the row limit); it stops there too.
const MAX_BYTES: usize = 64 << 20;
/// How long a query may run.
const MAX_TIME: Duration = Duration::from_secs(30);
/// Rows a page of the result shows.
const PAGE: usize = 100;
/// Characters a cell shows.
const CELL_CHARS: usize = 500;

#[derive(Debug, Default, Deserialize)]
pub struct SqlQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    page: usize,
    /// csv or parquet, for a download.
    #[serde(default)]
    format: String,
}

/// A query's rows, up to [`MAX_ROWS`], and whether it had more.
struct Result_ {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    cut: bool,
}

async fn run(app: &App, sql: &str) -> Result<Result_, WebError> {
    let statements =
        crate::pipeline::sqlstep::statements(sql).map_err(|e| WebError::BadRequest(chain(&e)))?;
    let [statement] = statements.as_slice() else {
        return Err(WebError::BadRequest(format!(
            "one statement at a time ({} given)",
            statements.len()
        )));
    };
    let work = async {
        let mut rows =
            engine::stream_statement(&app.ctx, statement, "the page's query", Access::QueryOnly)
                .await
                .map_err(|e| match e {
                    engine::EngineError::Refused { .. } => WebError::BadRequest(chain(&e)),
                    e => WebError::Query(chain(&e)),
                })?;
        let schema = rows.schema();
        let (mut batches, mut n, mut bytes) = (Vec::new(), 0, 0);
        while let Some(batch) = rows.next().await {
            let batch = batch.map_err(|e| WebError::Query(chain(&e)))?;
            bytes += batch.get_array_memory_size();
            if bytes > MAX_BYTES {
                return Ok(Result_ {
                    schema,
                    batches,
                    cut: true,
                });
            }
            if n + batch.num_rows() > MAX_ROWS {
                batches.push(batch.slice(0, MAX_ROWS - n));
                return Ok(Result_ {
                    schema,
                    batches,
                    cut: true,
                });
            }
            n += batch.num_rows();
            batches.push(batch);
        }
        Ok(Result_ {
            schema,
            batches,
            cut: false,
        })
    };
    tokio::time::timeout(MAX_TIME, work).await.map_err(|_| {
        WebError::BadRequest(format!(
            "the query ran past {} s and was stopped",
            MAX_TIME.as_secs()
        ))
    })?
}

/// Rows `from..from + n` of the result, each cell as text cut at a character boundary.
fn cells(r: &Result_, from: usize, n: usize) -> Result<Vec<Vec<String>>, WebError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    let mut start = 0;
    for b in &r.batches {
        let rows = b.num_rows();
        let (lo, hi) = (from.max(start), (from + n).min(start + rows));
        if lo < hi {
            let formatters = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| WebError::Query(e.to_string()))?;
            for i in lo - start..hi - start {
                out.push(
                    formatters
                        .iter()
                        .map(|f| {
                            let text = f.value(i).to_string();
                            match text.chars().count() > CELL_CHARS {
                                true => text.chars().take(CELL_CHARS).collect::<String>() + "…",
                                false => text,
                            }
                        })
                        .collect(),
                );
            }
        }
        start += rows;
    }
    Ok(out)
}

fn link(q: &str, extra: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("q", q);
    for (k, v) in extra {
        s.append_pair(k, v);
    }
    format!("/sql?{}", s.finish())
}

pub async fn sql(State(app): State<Arc<App>>, Query(q): Query<SqlQuery>) -> Response {
    if q.q.trim().is_empty() {
        return render(&app, &q, None, None, StatusCode::OK);
    }
    let result = match run(&app, &q.q).await {
        Ok(r) => r,
        Err(e @ WebError::BadRequest(_)) => {
            return render(&app, &q, None, Some(e.to_string()), StatusCode::BAD_REQUEST)
        }
        Err(e) => return e.into_response(),
    };
    match q.format.as_str() {
        "" => render(&app, &q, Some(&result), None, StatusCode::OK),
        "csv" => download(result, Format::Csv, "text/csv", "result.csv").await,
        "parquet" => {
            download(
                result,
                Format::Parquet,
                "application/vnd.apache.parquet",
                "result.parquet",
            )
            .await
        }
        other => WebError::BadRequest(format!("format {other:?}: csv or parquet")).into_response(),
    }
}

fn render(
    app: &App,
    q: &SqlQuery,
    result: Option<&Result_>,
    error: Option<String>,
    status: StatusCode,
) -> Response {
    let body = (|| -> Result<String, WebError> {
        let (columns, rows, total, cut) = match result {
            Some(r) => (
                r.schema.fields().iter().map(|f| f.name().clone()).collect(),
                cells(r, q.page * PAGE, PAGE)?,
                r.batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
                r.cut,
            ),
            None => (Vec::new(), Vec::new(), 0, false),
        };
        let page = q.page.to_string();
        let prev = (q.page > 0).then(|| link(&q.q, &[("page", &(q.page - 1).to_string())]));
        let next = ((q.page + 1) * PAGE < total)
            .then(|| link(&q.q, &[("page", &(q.page + 1).to_string())]));
        Ok(app.templates.get_template("sql.html")?.render(context! {
            q => &q.q,
            ran => result.is_some(),
            columns, rows, total, cut, error, prev, next, page,
            first => q.page * PAGE + 1,
            max_rows => MAX_ROWS,
            csv => link(&q.q, &[("format", "csv")]),
            parquet => link(&q.q, &[("format", "parquet")]),
        })?)
    })();
    match body {
        Ok(body) => (status, Html(body)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The result as a file, written off the runtime's threads.
async fn download(r: Result_, format: Format, mime: &'static str, name: &str) -> Response {
    let written = tokio::task::spawn_blocking(move || -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut w = ResultWriter::new(&mut out, format, &r.schema, TableCap::default())
            .map_err(|e| e.to_string())?;
        for b in &r.batches {
            w.write(b).map_err(|e| e.to_string())?;
        }
        w.finish().map_err(|e| e.to_string())?;
        Ok(out)
    })
    .await;
    match written {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, mime.to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{name}\""),
                ),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => WebError::Query(e).into_response(),
        Err(e) => WebError::Query(e.to_string()).into_response(),
    }
}
