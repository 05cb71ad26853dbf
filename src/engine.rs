//! A DataFusion session over the lake: every table registered under its
//! name, and every turnlake UDF.

use arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;

use crate::lake::{Lake, LakeError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Lake(#[from] LakeError),
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

/// A session with every lake table and UDF registered.
pub async fn session(lake: &Lake) -> Result<SessionContext, EngineError> {
    let ctx = SessionContext::new();
    crate::udf::register_all(&ctx);
    for info in lake.tables().await? {
        register(&ctx, lake, &info.name).await?;
    }
    Ok(ctx)
}

/// (Re-)register one table at its latest version.
pub async fn register(ctx: &SessionContext, lake: &Lake, name: &str) -> Result<(), EngineError> {
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
    let provider = table.table_provider().await.map_err(err)?;
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
    ctx.sql(sql)
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)
}
