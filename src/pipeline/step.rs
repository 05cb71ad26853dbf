//! The one step type every SQL step (credit, select, mix) and `build` use:
//! the lake's writer lock, inputs pinned at the lake commit the step starts
//! from (their versions recorded), parameters, one SQL file run in a session
//! over those versions, outputs written with that provenance, and one lake
//! commit for all of them.

use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::prelude::SessionContext;

use super::sqlstep::run_script;
use crate::engine::{self, EngineError};
use crate::lake::{Lake, LakeError, Writer};

#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error("the lake has no {0} table: {1}")]
    Missing(&'static str, &'static str),
    #[error("the lake's {0} has no {1} column (an earlier turnlake wrote it): {2}")]
    MissingColumn(&'static str, &'static str, &'static str),
}

/// A running step; `finish` makes its outputs visible together.
pub struct Step {
    lake: Lake,
    writer: Writer,
    /// A session over the lake with every table at the pinned versions.
    pub ctx: SessionContext,
    sql_file: &'static str,
    sql: &'static str,
    provenance: serde_json::Value,
}

impl Step {
    /// Take the writer lock and pin `inputs` (each with a hint for when it is
    /// missing) at the lake commit the step starts from.
    pub async fn begin(
        lake: &Lake,
        name: &'static str,
        inputs: &[(&'static str, &'static str)],
        params: serde_json::Value,
        sql: (&'static str, &'static str),
    ) -> Result<Step, StepError> {
        Self::begin_with(None, lake, name, inputs, params, sql).await
    }

    /// [`Step::begin`]; with a `sort_budget`, in a session whose sorts hold
    /// at most that many bytes each and spill the rest
    /// ([`engine::sorting_step_session`]).
    pub async fn begin_with(
        sort_budget: Option<usize>,
        lake: &Lake,
        name: &'static str,
        inputs: &[(&'static str, &'static str)],
        params: serde_json::Value,
        (sql_file, sql): (&'static str, &'static str),
    ) -> Result<Step, StepError> {
        let writer = lake
            .begin(name, serde_json::json!({"params": params}))
            .await?;
        let view = lake.view().await?;
        let mut pinned = serde_json::Map::new();
        for (table, hint) in inputs {
            let version = view
                .tables
                .get(*table)
                .ok_or(StepError::Missing(table, hint))?;
            pinned.insert(table.to_string(), serde_json::json!(version));
        }
        // The session's tables are pinned now, under the writer lock.
        let ctx = match sort_budget {
            None => engine::step_session(lake).await?,
            Some(budget) => engine::sorting_step_session(lake, budget).await?,
        };
        let provenance = serde_json::json!({
            "step": name,
            "inputs": pinned,
            "params": params,
            "sql": sql_file,
            "sql_sha256": crate::digest::sha256_hex(sql.as_bytes()),
        });
        Ok(Step {
            lake: lake.clone(),
            writer,
            ctx,
            sql_file,
            sql,
            provenance,
        })
    }

    /// Run the step's SQL file (after the caller registered its parameter tables).
    pub async fn run_sql(&self) -> Result<(), StepError> {
        Ok(run_script(&self.ctx, self.sql_file, self.sql).await?)
    }

    /// Collect a query's rows, naming the SQL file and `what` in errors.
    pub async fn query(&self, sql: &str, what: &str) -> Result<Vec<RecordBatch>, StepError> {
        Ok(engine::run_sql(&self.ctx, sql, &format!("{}, {what}", self.sql_file)).await?)
    }

    /// Replace `table`'s rows, recording the step's provenance.
    pub async fn write(&self, table: &str, rows: Vec<RecordBatch>) -> Result<(), StepError> {
        Ok(self
            .lake
            .overwrite(table, rows, self.provenance.clone())
            .await?)
    }

    /// Replace `table`'s rows with the result of `sql`, written as it is
    /// computed (never collected whole); returns how many rows were written.
    pub async fn write_query(
        &self,
        table: &str,
        sql: &str,
        what: &str,
    ) -> Result<usize, StepError> {
        let context = format!("{}, {what}", self.sql_file);
        let rows = engine::stream_sql(&self.ctx, sql, &context).await?;
        self.write_stream(table, rows).await
    }

    /// Like [`Step::write_query`], for a query built as a DataFrame.
    pub async fn write_frame(
        &self,
        table: &str,
        frame: DataFrame,
        what: &str,
    ) -> Result<usize, StepError> {
        self.write_stream(table, engine::stream(frame, what).await?)
            .await
    }

    /// Replace `table`'s rows with those `rows` yields, as they come;
    /// returns how many rows were written.
    pub async fn write_stream(
        &self,
        table: &str,
        rows: impl futures::Stream<Item = datafusion::error::Result<RecordBatch>> + Send + 'static,
    ) -> Result<usize, StepError> {
        Ok(self
            .lake
            .overwrite_stream(table, rows, self.provenance.clone())
            .await?)
    }

    /// One lake commit for every output, then release the lock.
    pub async fn finish(mut self) -> Result<(), StepError> {
        self.writer.set_params(self.provenance.clone());
        self.writer.finish().await?;
        Ok(())
    }
}
