//! The one step type every SQL step (credit, select, mix, the scorer's) runs
//! as: the lake's writer lock, the inputs its [`StepSpec`] declares pinned
//! at the lake commit the step starts from, parameters, one SQL file run in
//! a session over those versions, outputs written with that
//! [`Provenance`], and one lake commit for all of them.

use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::prelude::SessionContext;

use super::provenance::Provenance;
use super::sqlstep::run_script;
use super::steps::StepSpec;
use super::PipelineError;
use crate::engine;
use crate::lake::{Lake, Writer};

/// A running step; `finish` makes its outputs visible together.
pub struct Step {
    lake: Lake,
    writer: Writer,
    /// A session over the lake with every table at the pinned versions.
    pub ctx: SessionContext,
    sql_file: &'static str,
    sql: &'static str,
    provenance: Provenance,
}

impl Step {
    /// Take the writer lock and pin `spec`'s inputs at the lake commit the
    /// step starts from.
    pub async fn begin(
        lake: &Lake,
        spec: &'static StepSpec,
        params: serde_json::Value,
    ) -> Result<Step, PipelineError> {
        Self::begin_with(None, lake, spec, params).await
    }

    /// [`Step::begin`]; with a `sort_budget`, in a session whose sorts hold
    /// at most that many bytes each and spill the rest
    /// ([`engine::sorting_step_session`]).
    pub async fn begin_with(
        sort_budget: Option<usize>,
        lake: &Lake,
        spec: &'static StepSpec,
        params: serde_json::Value,
    ) -> Result<Step, PipelineError> {
        let (sql_file, sql) = spec.sql.expect("a SQL step declares its SQL file");
        let writer = lake
            .begin(spec.name, serde_json::json!({"params": params}))
            .await?;
        let provenance = spec.provenance(&lake.view().await?, params)?;
        // The session's tables are pinned now, under the writer lock.
        let ctx = match sort_budget {
            None => engine::step_session(lake).await?,
            Some(budget) => engine::sorting_step_session(lake, budget).await?,
        };
        Ok(Step {
            lake: lake.clone(),
            writer,
            ctx,
            sql_file,
            sql,
            provenance,
        })
    }

    /// The input versions the step pinned (absent: an optional input the lake lacks).
    pub fn inputs(&self) -> &std::collections::BTreeMap<String, Option<u64>> {
        &self.provenance.inputs
    }

    /// Run the step's SQL file (after the caller registered its parameter tables).
    pub async fn run_sql(&self) -> Result<(), PipelineError> {
        Ok(run_script(&self.ctx, self.sql_file, self.sql).await?)
    }

    /// Collect a query's rows, naming the SQL file and `what` in errors.
    pub async fn query(&self, sql: &str, what: &str) -> Result<Vec<RecordBatch>, PipelineError> {
        Ok(engine::run_sql(&self.ctx, sql, &format!("{}, {what}", self.sql_file)).await?)
    }

    /// Replace `table`'s rows, recording the step's provenance.
    pub async fn write(&self, table: &str, rows: Vec<RecordBatch>) -> Result<(), PipelineError> {
        Ok(self
            .lake
            .overwrite(table, rows, self.provenance.to_value())
            .await?)
    }

    /// Replace `table`'s rows with the result of `sql`, written as it is
    /// computed (never collected whole); returns how many rows were written.
    pub async fn write_query(
        &self,
        table: &str,
        sql: &str,
        what: &str,
    ) -> Result<usize, PipelineError> {
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
    ) -> Result<usize, PipelineError> {
        self.write_stream(table, engine::stream(frame, what).await?)
            .await
    }

    /// Replace `table`'s rows with those `rows` yields, as they come;
    /// returns how many rows were written.
    pub async fn write_stream(
        &self,
        table: &str,
        rows: impl futures::Stream<Item = datafusion::error::Result<RecordBatch>> + Send + 'static,
    ) -> Result<usize, PipelineError> {
        Ok(self
            .lake
            .overwrite_stream(table, rows, self.provenance.to_value())
            .await?)
    }

    /// One lake commit for every output, then release the lock.
    pub async fn finish(mut self) -> Result<(), PipelineError> {
        self.writer.set_params(self.provenance.to_value());
        self.writer.finish().await?;
        Ok(())
    }
}
