//! Runs SQL statement by statement, each result streamed to its output as
//! it is computed.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::engine;
use crate::output::{Format, ResultWriter, TableCap, Written};
use crate::pipeline::sqlstep::statements;

/// Where a statement's rows go.
#[derive(Debug, Clone, Copy)]
pub enum Output<'a> {
    Stdout,
    /// A file, made anew.
    File(&'a Path),
    /// Nowhere: the statement runs for what it leaves in the session.
    Discard,
}

/// Where and how results are written.
pub struct Runner {
    pub ctx: SessionContext,
    pub format: Format,
    /// What the table format shows of each result.
    pub cap: TableCap,
    /// Say each statement's row count and elapsed time on standard error.
    pub timing: bool,
    /// Whether statements may write (see [`engine::access`]).
    pub access: engine::Access,
}

impl Runner {
    /// Run one statement, its rows written to `out`. A statement that
    /// returns no rows (DDL) prints nothing.
    pub async fn run_statement(
        &self,
        sql: &str,
        context: &str,
        out: Output<'_>,
    ) -> anyhow::Result<Written> {
        let started = Instant::now();
        let rows = engine::stream_statement(&self.ctx, sql, context, self.access).await?;
        let has_columns = !rows.schema().fields().is_empty();
        // A table is drawn whole at its end: it keeps only the rows it shows.
        let cap = self.cap;
        let written = match out {
            Output::File(path) => {
                let file = std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?;
                let sink = Box::new(std::io::BufWriter::new(file));
                let written = write_stream(rows, sink, self.format, cap).await;
                if written.is_err() {
                    let _ = std::fs::remove_file(path);
                }
                written.with_context(|| format!("writing {}", path.display()))?
            }
            Output::Stdout if has_columns => {
                let sink = Box::new(std::io::BufWriter::new(std::io::stdout()));
                write_stream(rows, sink, self.format, cap).await?
            }
            Output::Stdout | Output::Discard => drain(rows).await?,
        };
        if self.timing {
            let secs = started.elapsed().as_secs_f64();
            match has_columns {
                true => {
                    let rows = match written.rows {
                        1 => "1 row".to_string(),
                        n => format!("{n} rows"),
                    };
                    eprintln!("{rows} in {secs:.3} s")
                }
                false => eprintln!("done in {secs:.3} s"),
            }
        }
        Ok(written)
    }
}

/// The statements of `text`, each with the context its errors name:
/// `origin`, its number and its first line.
pub fn split(text: &str, origin: &str) -> anyhow::Result<Vec<(String, String)>> {
    let stmts = statements(text).with_context(|| format!("{origin}: splitting statements"))?;
    Ok(stmts
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let first = s.lines().next().unwrap_or("");
            (format!("{origin}, statement {} ({first})", i + 1), s)
        })
        .collect())
}

/// Run `rows` to their end, counting them (nothing is formatted).
async fn drain(mut rows: SendableRecordBatchStream) -> anyhow::Result<Written> {
    let mut n = 0;
    while let Some(batch) = rows.next().await {
        n += batch?.num_rows();
    }
    Ok(Written {
        rows: n,
        not_shown: 0,
        cells_cut: 0,
    })
}

/// Write `rows` to `sink` in `format` on a blocking thread, fed a batch at
/// a time, so the result need not fit in memory.
async fn write_stream(
    mut rows: SendableRecordBatchStream,
    sink: Box<dyn Write + Send>,
    format: Format,
    cap: TableCap,
) -> anyhow::Result<Written> {
    let schema = rows.schema();
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let writer = tokio::task::spawn_blocking(move || {
        let mut w = ResultWriter::new(sink, format, &schema, cap)?;
        // `None` ends the result. A channel closed before it means the query
        // failed or was cancelled, and a partial result is not drawn.
        while let Some(batch) = rx.blocking_recv() {
            match batch {
                Some(batch) => w.write(&batch)?,
                None => return w.finish().map(Some),
            }
        }
        Ok(None)
    });
    while let Some(batch) = rows.next().await {
        // A closed channel: the writer failed, and says why below.
        if tx.send(Some(batch?)).await.is_err() {
            break;
        }
    }
    let _ = tx.send(None).await;
    drop(tx);
    let written = writer.await.context("the result writer stopped")?;
    Ok(written?.expect("the writer was told the result ended"))
}
