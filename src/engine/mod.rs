//! A DataFusion session over the lake: every table registered under its
//! name, and every turnlake UDF.

mod budget;

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::{MemTable, TableProvider};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{CreateMemoryTable, DdlStatement, LogicalPlan};
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::cluster::pinned::PinnedTable;
use crate::cluster::ClusterError;
use crate::lake::{Lake, LakeError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("registering table {table}")]
    Register {
        table: String,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
    #[error("{context}")]
    Query {
        context: String,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
}

/// A session with every lake table and UDF registered; on the lake's
/// cluster when it has one.
pub async fn session(lake: &Lake) -> Result<SessionContext, EngineError> {
    let ctx = match lake.cluster() {
        Some(url) => crate::cluster::remote_session(url).await?,
        None => SessionContext::new(),
    };
    let as_files = lake.cluster().is_some();
    with_tables(lake, ctx, as_files).await
}

/// Like [`session`], but DataFusion's sorts here hold at most `limit` bytes
/// (beyond it they spill to the temporary folder), in batches of `batch_rows`
/// rows, so a streaming step's memory does not grow with its input.
pub async fn bounded_session(
    lake: &Lake,
    limit: usize,
    batch_rows: usize,
) -> Result<SessionContext, EngineError> {
    if lake.cluster().is_some() {
        return session(lake).await;
    }
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(budget::SpillingBudget::new(limit)))
        .build_arc()
        .map_err(|e| EngineError::Query {
            context: "creating a memory-bounded session".into(),
            source: Box::new(e),
        })?;
    // One partition: one sorter gets the whole budget (the consumer of the
    // stream is what runs on every core), and it keeps a share of it aside
    // to merge what it spilled. Tables are scanned as their pinned Parquet
    // files (as on a cluster), which honours the batch size: the Delta scan
    // yields whole row groups, far beyond a small budget.
    let config = SessionConfig::new()
        .with_target_partitions(1)
        .with_batch_size(batch_rows)
        .with_sort_spill_reservation_bytes(limit / 8);
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    with_tables(lake, ctx, true).await
}

/// Register every table of the lake, as its Delta provider or (`as_files`)
/// as the Parquet files of its pinned version.
async fn with_tables(
    lake: &Lake,
    ctx: SessionContext,
    as_files: bool,
) -> Result<SessionContext, EngineError> {
    crate::udf::register_all(&ctx);
    for info in lake.tables().await? {
        register_table(&ctx, lake, &info.name, as_files).await?;
    }
    Ok(ctx)
}

/// (Re-)register one table at its latest version.
pub async fn register(ctx: &SessionContext, lake: &Lake, name: &str) -> Result<(), EngineError> {
    register_table(ctx, lake, name, lake.cluster().is_some()).await
}

async fn register_table(
    ctx: &SessionContext,
    lake: &Lake,
    name: &str,
    as_files: bool,
) -> Result<(), EngineError> {
    let err = |source| EngineError::Register {
        table: name.to_string(),
        source: Box::new(source),
    };
    let Some(table) = lake.table(name).await? else {
        return Ok(());
    };
    table
        .update_datafusion_session(&ctx.state())
        .map_err(|e| err(datafusion::error::DataFusionError::External(Box::new(e))))?;
    let mut provider: Arc<dyn TableProvider> = table.table_provider().await.map_err(err)?;
    if as_files {
        // A cluster's executors get the pinned version's file list, not the
        // Delta log; and plain strings, not views (see `without_views`).
        let schema = match lake.cluster() {
            Some(_) => crate::cluster::pinned::without_views(&provider.schema()),
            None => provider.schema(),
        };
        let pinned = PinnedTable::from_delta(&table, &lake.table_url(name), schema).map_err(err)?;
        provider = Arc::new(pinned);
    }
    let _ = ctx.deregister_table(name);
    ctx.register_table(name, provider).map_err(err)?;
    Ok(())
}

/// Run one SQL statement and collect its result; `context` names it in errors.
pub async fn run_sql(
    ctx: &SessionContext,
    sql: &str,
    context: &str,
) -> Result<Vec<RecordBatch>, EngineError> {
    let err = |source| EngineError::Query {
        context: context.to_string(),
        source: Box::new(source),
    };
    let plan = ctx.state().create_logical_plan(sql).await.map_err(err)?;
    if let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(table)) = &plan {
        let plain = table.constraints.is_empty() && table.column_defaults.is_empty();
        if plain && !table.if_not_exists && !table.temporary {
            create_table(ctx, table).await.map_err(err)?;
            return Ok(Vec::new());
        }
    }
    ctx.execute_logical_plan(plan)
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)
}

/// `CREATE [OR REPLACE] TABLE t AS SELECT …` as DataFusion runs it, except
/// that each result batch takes the plan's own types and nullability: results
/// that come back from a Ballista cluster can differ in those, which
/// DataFusion's in-memory table refuses.
async fn create_table(
    ctx: &SessionContext,
    table: &CreateMemoryTable,
) -> datafusion::error::Result<()> {
    let state = ctx.state();
    let input = state.optimize(&table.input)?;
    let schema = Arc::clone(input.schema().inner());
    // Each batch is reshaped and compacted as it arrives: a cluster's result
    // batches can point into far larger buffers than their rows use.
    let mut partitions = Vec::new();
    for mut stream in DataFrame::new(state, input)
        .execute_stream_partitioned()
        .await?
    {
        let mut batches = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = crate::columns::conform(&schema, &batch?).map_err(|reason| {
                datafusion::error::DataFusionError::Execution(format!(
                    "CREATE TABLE {}: {reason}",
                    table.name
                ))
            })?;
            batches.push(crate::columns::compact_views(&batch));
        }
        partitions.push(batches);
    }
    if table.or_replace {
        ctx.deregister_table(table.name.clone())?;
    } else if ctx.table_exist(table.name.clone())? {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "Table '{}' already exists",
            table.name
        )));
    }
    ctx.register_table(
        table.name.clone(),
        Arc::new(MemTable::try_new(schema, partitions)?),
    )?;
    Ok(())
}
