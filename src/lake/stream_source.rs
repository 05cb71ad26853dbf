//! A stream of rows as the input plan of a Delta write, so a table is
//! written as its rows arrive instead of from batches collected first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::datasource::provider_as_source;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::{Stream, StreamExt};

use super::{conform, TableSchema};

/// What a [`ConformedStream`] saw: how many rows it gave, and the first
/// error of its input, kept whole (the Delta writer keeps only its text).
#[derive(Debug, Default)]
pub(super) struct StreamOutcome {
    written: AtomicUsize,
    failure: Mutex<Option<DataFusionError>>,
}

impl StreamOutcome {
    pub(super) fn written(&self) -> usize {
        self.written.load(Ordering::Relaxed)
    }

    pub(super) fn take_failure(&self) -> Option<DataFusionError> {
        self.failure.lock().expect("the outcome's lock").take()
    }
}

/// One stream, each batch conformed to its table's schema, readable once
/// (a write executes its input plan once).
pub(super) struct ConformedStream {
    schema: SchemaRef,
    rows: Mutex<Option<SendableRecordBatchStream>>,
}

impl ConformedStream {
    pub(super) fn new(
        table: TableSchema,
        rows: impl Stream<Item = datafusion::error::Result<RecordBatch>> + Send + 'static,
        outcome: Arc<StreamOutcome>,
    ) -> ConformedStream {
        let schema = Arc::clone(&table.schema);
        let conformed = rows.map(move |batch| {
            let batch = batch
                .and_then(|b| conform(&table, &b).map_err(|e| DataFusionError::External(e.into())));
            match batch {
                Ok(batch) => {
                    outcome
                        .written
                        .fetch_add(batch.num_rows(), Ordering::Relaxed);
                    Ok(batch)
                }
                Err(e) => {
                    let text = e.to_string();
                    outcome
                        .failure
                        .lock()
                        .expect("the outcome's lock")
                        .get_or_insert(e);
                    Err(DataFusionError::Execution(text))
                }
            }
        });
        ConformedStream {
            rows: Mutex::new(Some(Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&schema),
                conformed,
            )))),
            schema,
        }
    }

    /// A plan that scans this stream, as one partition.
    pub(super) fn into_plan(self) -> datafusion::error::Result<LogicalPlan> {
        let schema = Arc::clone(&self.schema);
        let table = StreamingTable::try_new(schema, vec![Arc::new(self)])?;
        LogicalPlanBuilder::scan("rows", provider_as_source(Arc::new(table)), None)?.build()
    }
}

impl std::fmt::Debug for ConformedStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConformedStream")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for ConformedStream {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let taken = self.rows.lock().expect("the stream's lock").take();
        taken.unwrap_or_else(|| {
            let error = DataFusionError::Internal("a write's row stream read twice".into());
            Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&self.schema),
                futures::stream::once(async move { Err(error) }),
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, BooleanArray, Int64Array, StringArray};
    use arrow::record_batch::RecordBatch;
    use datafusion::prelude::SessionContext;

    use crate::lake::Lake;

    /// Rows shaped like gate_demotions but not exactly: `t` as int64 and
    /// the columns in another order, so each batch must be conformed.
    fn demotions(from: i64, n: i64) -> RecordBatch {
        let ids: Vec<String> = (from..from + n).map(|i| format!("credit/{i:04}")).collect();
        RecordBatch::try_from_iter(vec![
            (
                "t",
                std::sync::Arc::new(Int64Array::from_iter_values(from..from + n)) as _,
            ),
            (
                "row_id",
                std::sync::Arc::new(StringArray::from(ids.clone())) as _,
            ),
            ("traj_id", std::sync::Arc::new(StringArray::from(ids)) as _),
            (
                "mix",
                std::sync::Arc::new(StringArray::from(vec!["credit"; n as usize])) as _,
            ),
            (
                "reason",
                std::sync::Arc::new(StringArray::from(vec!["unclosed <think>"; n as usize])) as _,
            ),
            (
                "row_dropped",
                std::sync::Arc::new(BooleanArray::from(vec![false; n as usize])) as _,
            ),
        ])
        .unwrap()
    }

    /// A stream of `batches`, then an error if `fail` is set.
    fn stream(
        batches: Vec<RecordBatch>,
        fail: bool,
    ) -> datafusion::execution::SendableRecordBatchStream {
        let schema = batches[0].schema();
        let mut items: Vec<datafusion::error::Result<RecordBatch>> =
            batches.into_iter().map(Ok).collect();
        if fail {
            items.push(Err(datafusion::error::DataFusionError::Execution(
                "the query failed".into(),
            )));
        }
        Box::pin(super::RecordBatchStreamAdapter::new(
            schema,
            futures::stream::iter(items),
        ))
    }

    /// The table's `t` column in file order (one partition reads the files in turn).
    async fn read_ts(lake: &Lake) -> Vec<i32> {
        let ctx = SessionContext::new_with_config(
            datafusion::prelude::SessionConfig::new().with_target_partitions(1),
        );
        let table = lake.newest("gate_demotions").await.unwrap().unwrap();
        ctx.register_table("d", table.table_provider().await.unwrap())
            .unwrap();
        let batches = ctx
            .sql("SELECT t FROM d")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_primitive::<arrow::datatypes::Int32Type>()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    #[tokio::test]
    async fn a_streamed_overwrite_writes_every_row_in_order_and_a_failed_one_commits_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path().to_str().unwrap()).unwrap();
        let written = lake
            .overwrite_stream(
                "gate_demotions",
                stream(vec![demotions(0, 3), demotions(3, 2000)], false),
                serde_json::json!({"step": "test"}),
            )
            .await
            .unwrap();
        assert_eq!(written, 2003);
        assert_eq!(read_ts(&lake).await, (0..2003).collect::<Vec<i32>>());

        let failed = lake
            .overwrite_stream(
                "gate_demotions",
                stream(vec![demotions(5000, 10)], true),
                serde_json::json!({"step": "test"}),
            )
            .await;
        match failed {
            Err(crate::lake::LakeError::Rows { table, source }) => {
                assert_eq!(table, "gate_demotions");
                assert!(source.to_string().contains("the query failed"), "{source}");
            }
            other => panic!("the stream's own error, not {other:?}"),
        }
        assert_eq!(
            read_ts(&lake).await,
            (0..2003).collect::<Vec<i32>>(),
            "a stream that fails leaves the table as it was"
        );

        let empty = futures::stream::empty::<datafusion::error::Result<RecordBatch>>();
        let written = lake
            .overwrite_stream("gate_demotions", empty, serde_json::json!({"step": "test"}))
            .await
            .unwrap();
        assert_eq!(written, 0);
        assert!(read_ts(&lake).await.is_empty(), "no rows replace every row");
    }
}
