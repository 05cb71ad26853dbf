//! A DataFusion session over the lake: every table under its name (opened
//! when a query names it, see `lake_schema`), and every turnlake UDF.

pub mod access;
mod bool_cast;
mod budget;
#[cfg(feature = "cluster")]
pub mod codec;
mod key_not_null;
mod lake_schema;
pub mod pinned;
#[cfg(feature = "cluster")]
pub mod remote;
pub mod scratch;
mod sorted;

pub use access::Access;
pub use lake_schema::Strings;
pub use sorted::register_sorted;

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::MemTable;
use datafusion::execution::memory_pool::TrackConsumersPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::{CreateMemoryTable, DdlStatement, LogicalPlan};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::lake::{Lake, LakeError};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[cfg(feature = "cluster")]
    #[error(transparent)]
    Remote(#[from] remote::RemoteError),
    #[error(transparent)]
    NotBuilt(#[from] crate::sinks::NotBuilt),
    #[error("registering table {table}")]
    Register {
        table: String,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
    #[error("{context}")]
    Refused {
        context: String,
        #[source]
        source: access::Refused,
    },
    #[error("{context}")]
    Query {
        context: String,
        #[source]
        source: Box<datafusion::error::DataFusionError>,
    },
}

impl EngineError {
    /// A mapper of DataFusion errors to a [`EngineError::Query`] naming `context`.
    pub fn query(
        context: impl Into<String>,
    ) -> impl Fn(datafusion::error::DataFusionError) -> EngineError {
        let context = context.into();
        move |source| EngineError::Query {
            context: context.clone(),
            source: Box::new(source),
        }
    }
}

/// A session with every lake table and UDF registered; on the lake's
/// cluster when it has one.
pub async fn session(lake: &Lake) -> Result<SessionContext, EngineError> {
    session_with(lake, Strings::Views).await
}

/// A [`session`] whose queries together hold at most `limit` bytes: beyond
/// it sorts, aggregates and joins spill where they can, and a query that
/// still needs more fails (the web app: what a page asks must not grow the
/// server).
pub async fn memory_bounded_session(
    lake: &Lake,
    limit: usize,
) -> Result<SessionContext, EngineError> {
    if lake.cluster().is_some() {
        return session(lake).await;
    }
    let runtime = RuntimeEnvBuilder::new()
        .with_metadata_cache_limit(metadata_cache(lake))
        .with_memory_pool(Arc::new(
            datafusion::execution::memory_pool::FairSpillPool::new(limit),
        ))
        .build_arc()
        .map_err(EngineError::query("creating a memory-bounded session"))?;
    let ctx = local(SessionContext::new_with_config_rt(
        local_config(Strings::Views),
        runtime,
    ));
    with_tables(lake, ctx, Strings::Views).await
}

/// A [`session`] for a pipeline step, whose joins and tables hold many rows:
/// its lake tables give plain strings (see [`Strings::Plain`]), and so do
/// its SQL's `VARCHAR`s when planned here (else a `UNION ALL` of a lake
/// string and a cast makes the lot views).
pub async fn step_session(lake: &Lake) -> Result<SessionContext, EngineError> {
    session_with(lake, Strings::Plain).await
}

/// A session planned here on `base`'s runtime and settings, with every
/// turnlake UDF and no tables: for queries over tables taken from `base`.
pub fn sub_session(base: &SessionContext) -> SessionContext {
    let ctx = local(SessionContext::new_with_config_rt(
        base.copied_config(),
        base.runtime_env(),
    ));
    crate::udf::register_all(&ctx);
    ctx
}

#[cfg(feature = "cluster")]
async fn remote_session(url: &str) -> Result<SessionContext, EngineError> {
    Ok(remote::remote_session(url).await?)
}

#[cfg(not(feature = "cluster"))]
async fn remote_session(_url: &str) -> Result<SessionContext, EngineError> {
    Err(crate::sinks::Sink::Cluster.missing("--cluster").into())
}

async fn session_with(lake: &Lake, strings: Strings) -> Result<SessionContext, EngineError> {
    let ctx = match lake.cluster() {
        Some(url) => remote_session(url).await?,
        None => local(SessionContext::new_with_config_rt(
            local_config(strings),
            RuntimeEnvBuilder::new()
                .with_metadata_cache_limit(metadata_cache(lake))
                .build_arc()
                .map_err(EngineError::query("creating a session"))?,
        )),
    };
    with_tables(lake, ctx, strings).await
}

/// A session for a stream of many rows: plain strings as in a
/// [`step_session`], and DataFusion's sorts here hold at most `limit` bytes
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
    // Files are read, joined and checked on every core, and the partitions
    // meet in one sort, which gets the whole budget and keeps a share of it
    // aside to merge what it spilled: a sort per partition would split the
    // budget, and a stream read on one core left the other idle while a
    // writer waited on it.
    // Plain strings, as in a step: the joins of a stream build on the rows
    // it reads, and over views each batch a join put out kept buffers of its
    // own, several times the rows' bytes.
    // Those joins build once (not by partition) and probe the lake's files
    // as they are read: joined by partition, every message went through a
    // hash repartition, whose queue for one partition filled the sorts'
    // budget at 10x the reference.
    let partitions = std::thread::available_parallelism().map_or(1, |n| n.get());
    sorting_within(
        lake,
        limit.div_ceil(partitions),
        budget::SpillingBudget::new,
        |mut config| {
            let optimizer = &mut config.options_mut().optimizer;
            optimizer.repartition_sorts = false;
            optimizer.repartition_joins = false;
            config
                .with_target_partitions(partitions)
                .with_batch_size(batch_rows)
        },
    )
    .await
}

/// A [`step_session`] whose sorts hold at most `per_sort` bytes each, one
/// per partition (beyond it they spill to the temporary folder): for a step
/// that may sort every row it writes (`mix`, when its products are not
/// declared sorted, and its sampling). An `ORDER BY` is one sort of all
/// partitions, not a sort per partition merged: a union has a partition per
/// file group of each of its inputs, whose sorts would share the budget in
/// slivers thinner than a batch of rows.
pub async fn sorting_step_session(
    lake: &Lake,
    per_sort: usize,
) -> Result<SessionContext, EngineError> {
    if lake.cluster().is_some() {
        return step_session(lake).await;
    }
    sorting_within(
        lake,
        per_sort,
        budget::SpillingBudget::for_sorts,
        |mut config| {
            config.options_mut().optimizer.repartition_sorts = false;
            config
        },
    )
    .await
}

/// A session with plain strings whose sorts spill beyond `per_sort` bytes
/// each, a budget of that much per partition ([`budget::SpillingBudget`]
/// shares it between the sorts running), its settings adjusted by `settings`.
async fn sorting_within(
    lake: &Lake,
    per_sort: usize,
    pool: fn(usize, usize) -> budget::SpillingBudget,
    settings: impl FnOnce(SessionConfig) -> SessionConfig,
) -> Result<SessionContext, EngineError> {
    // Each sort reserves an eighth of its share to merge what it spilled.
    let merge_reserve = per_sort / 8;
    let config =
        settings(local_config(Strings::Plain)).with_sort_spill_reservation_bytes(merge_reserve);
    let budget = per_sort * config.target_partitions();
    let runtime = RuntimeEnvBuilder::new()
        .with_metadata_cache_limit(metadata_cache(lake))
        // An error names the consumers holding the most, so a budget that
        // ran out says what took it.
        .with_memory_pool(Arc::new(TrackConsumersPool::new(
            pool(budget, merge_reserve),
            std::num::NonZeroUsize::new(5).expect("5 is not zero"),
        )))
        .build_arc()
        .map_err(EngineError::query("creating a memory-bounded session"))?;
    let ctx = local(SessionContext::new_with_config_rt(config, runtime));
    with_tables(lake, ctx, Strings::Plain).await
}

/// How many bytes of Parquet footers a session keeps between the scans of a
/// file. On a local lake none: reading a footer again costs a few
/// microseconds, and DataFusion's default cache (50 MB) filled with every
/// file a step read, so a step's memory grew with the lake (and it ran no
/// faster). On an object store each footer read is a request, so the
/// default stays.
fn metadata_cache(lake: &Lake) -> usize {
    match lake.root().scheme() {
        "file" => 0,
        _ => datafusion::execution::cache::cache_manager::DEFAULT_METADATA_CACHE_LIMIT,
    }
}

/// The settings of a session planned here whose lake tables give `strings`:
/// its SQL's `VARCHAR`s are the same kind. Null join keys are filtered
/// before joins: mini-coder turns have no `candidate_n`, so a join of turns
/// on it then reads Albedo's row groups only, not every turn of the lake.
fn local_config(strings: Strings) -> SessionConfig {
    // information_schema: SHOW TABLES, SHOW COLUMNS and DESCRIBE.
    let mut config = SessionConfig::new().with_information_schema(true);
    config.options_mut().optimizer.filter_null_join_keys = true;
    config.options_mut().sql_parser.map_string_types_to_utf8view = strings == Strings::Views;
    config
}

/// A session planned here, with turnlake's own optimizer rules. (A cluster
/// plans on its scheduler, which knows DataFusion's rules only.)
fn local(ctx: SessionContext) -> SessionContext {
    ctx.add_optimizer_rule(Arc::new(bool_cast::BoolCasts));
    ctx.add_optimizer_rule(Arc::new(key_not_null::KeyNotNull));
    ctx
}

/// Make the lake's tables the session's default schema, each pinned at the
/// version the lake's view gives now and opened when a query names it.
async fn with_tables(
    lake: &Lake,
    ctx: SessionContext,
    strings: Strings,
) -> Result<SessionContext, EngineError> {
    crate::udf::register_all(&ctx);
    let versions = lake.view().await?.tables;
    let schema = lake_schema::LakeSchema::new(lake, ctx.runtime_env(), strings, &versions);
    let options = ctx.state().config().options().catalog.clone();
    let catalog = ctx
        .catalog(&options.default_catalog)
        .expect("a session has its default catalog");
    catalog
        .register_schema(&options.default_schema, Arc::new(schema))
        .map_err(|source| EngineError::Register {
            table: options.default_schema.clone(),
            source: Box::new(source),
        })?;
    Ok(ctx)
}

/// Register lake table `name` with no rows where `ctx` has none of that
/// name: a step whose source was never ingested reads it as empty.
pub fn register_empty_if_missing(ctx: &SessionContext, name: &str) -> Result<(), EngineError> {
    let err = |source| EngineError::Register {
        table: name.to_string(),
        source: Box::new(source),
    };
    if !ctx.table_exist(name).map_err(err)? {
        let schema = crate::lake::table_schema(name)?.schema;
        ctx.register_batch(name, RecordBatch::new_empty(schema))
            .map_err(err)?;
    }
    Ok(())
}

/// (Re-)register one table at the version the lake's view now gives it
/// (after this process committed to it).
pub async fn register(ctx: &SessionContext, lake: &Lake, name: &str) -> Result<(), EngineError> {
    let err = |source| EngineError::Register {
        table: name.to_string(),
        source: Box::new(source),
    };
    let Some(version) = lake.view().await?.tables.get(name).copied() else {
        return Ok(());
    };
    let provider = lake_schema::open(lake, &ctx.runtime_env(), name, version, strings_of(ctx))
        .await
        .map_err(err)?;
    let _ = ctx.deregister_table(name);
    ctx.register_table(name, provider).map_err(err)?;
    Ok(())
}

/// How `ctx`'s lake tables give their strings.
fn strings_of(ctx: &SessionContext) -> Strings {
    let options = ctx.state().config().options().catalog.clone();
    ctx.catalog(&options.default_catalog)
        .and_then(|c| c.schema(&options.default_schema))
        .and_then(|s| {
            s.downcast_ref::<lake_schema::LakeSchema>()
                .map(|l| l.strings())
        })
        .unwrap_or(Strings::Views)
}

/// Run one SQL statement and collect its result; `context` names it in errors.
pub async fn run_sql(
    ctx: &SessionContext,
    sql: &str,
    context: &str,
) -> Result<Vec<RecordBatch>, EngineError> {
    match statement(ctx, sql, context, Access::Writes).await? {
        Some(frame) => frame.collect().await.map_err(EngineError::query(context)),
        None => Ok(Vec::new()),
    }
}

/// Run one SQL statement under `access`, its result as a [`stream`] (a
/// statement that returns no rows, as DDL, gives an empty one); `context`
/// names it in errors.
pub async fn stream_statement(
    ctx: &SessionContext,
    sql: &str,
    context: &str,
    access: Access,
) -> Result<SendableRecordBatchStream, EngineError> {
    match statement(ctx, sql, context, access).await? {
        Some(frame) => stream(frame, context).await,
        None => Ok(Box::pin(RecordBatchStreamAdapter::new(
            Arc::new(arrow::datatypes::Schema::empty()),
            futures::stream::empty(),
        ))),
    }
}

/// The rows of one SQL statement, still to be run; `None` for a
/// `CREATE TABLE … AS`, which is run here (see [`create_table`]).
async fn statement(
    ctx: &SessionContext,
    sql: &str,
    context: &str,
    access: Access,
) -> Result<Option<DataFrame>, EngineError> {
    let err = EngineError::query(context);
    let plan = ctx.state().create_logical_plan(sql).await.map_err(&err)?;
    access::check(&plan, access).map_err(|source| EngineError::Refused {
        context: context.to_string(),
        source,
    })?;
    if let LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(table)) = &plan {
        let plain = table.constraints.is_empty() && table.column_defaults.is_empty();
        if plain && !table.if_not_exists && !table.temporary {
            create_table(ctx, table).await.map_err(&err)?;
            return Ok(None);
        }
    }
    Ok(Some(ctx.execute_logical_plan(plan).await.map_err(&err)?))
}

/// The rows of `frame` as a stream, computed as they are read; `context`
/// names the query in its errors, including those met while streaming.
pub async fn stream(
    frame: DataFrame,
    context: &str,
) -> Result<SendableRecordBatchStream, EngineError> {
    let rows = frame
        .execute_stream()
        .await
        .map_err(EngineError::query(context))?;
    let schema = rows.schema();
    let context = context.to_string();
    let rows = rows.map(move |batch| batch.map_err(|e| e.context(context.clone())));
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, rows)))
}

/// The rows of the query `sql` as a [`stream`].
pub async fn stream_sql(
    ctx: &SessionContext,
    sql: &str,
    context: &str,
) -> Result<SendableRecordBatchStream, EngineError> {
    let frame = ctx.sql(sql).await.map_err(EngineError::query(context))?;
    stream(frame, context).await
}

/// `CREATE [OR REPLACE] TABLE t AS SELECT …` as DataFusion runs it, except
/// that a session with a scratch folder keeps the rows there as Parquet
/// ([`scratch`]), and one without keeps each result batch in the plan's own
/// types and nullability: results that come back from a Ballista cluster
/// can differ in those, which DataFusion's in-memory table refuses.
async fn create_table(
    ctx: &SessionContext,
    table: &CreateMemoryTable,
) -> datafusion::error::Result<()> {
    if !table.or_replace && ctx.table_exist(table.name.clone())? {
        return Err(datafusion::error::DataFusionError::Execution(format!(
            "Table '{}' already exists",
            table.name
        )));
    }
    let state = ctx.state();
    let input = state.optimize(&table.input)?;
    let provider: Arc<dyn datafusion::catalog::TableProvider> = match scratch::scratch_of(ctx) {
        Some(folder) => {
            let rows = DataFrame::new(state, input);
            scratch::store(&folder, table.name.table(), rows).await?
        }
        None => Arc::new(memory_table(state, input, &table.name.to_string()).await?),
    };
    ctx.deregister_table(table.name.clone())?;
    ctx.register_table(table.name.clone(), provider)?;
    Ok(())
}

/// The rows of the plan `input` in memory, `name`'s.
async fn memory_table(
    state: datafusion::execution::SessionState,
    input: LogicalPlan,
    name: &str,
) -> datafusion::error::Result<MemTable> {
    let schema = Arc::clone(input.schema().inner());
    // Each batch is reshaped and compacted as it arrives: a cluster's result
    // batches can point into far larger buffers than their rows use. Every
    // partition is drained at once, each in its own task: drained one after
    // another, a partition waits on data that the plan's repartitions hold
    // for the next one, which at best piles up there and at worst never comes.
    let streams = DataFrame::new(state, input)
        .execute_stream_partitioned()
        .await?;
    // A JoinSet stops every drain when one fails (or this future is dropped).
    let mut drains = tokio::task::JoinSet::new();
    for (index, mut stream) in streams.into_iter().enumerate() {
        let schema = Arc::clone(&schema);
        let name = name.to_string();
        drains.spawn(async move {
            let mut batches = Vec::new();
            while let Some(batch) = stream.next().await {
                let batch = crate::columns::conform(&schema, &batch?).map_err(|reason| {
                    datafusion::error::DataFusionError::Execution(format!(
                        "CREATE TABLE {name}: {reason}"
                    ))
                })?;
                batches.push(crate::columns::compact_views(&batch));
            }
            Ok::<_, datafusion::error::DataFusionError>((index, batches))
        });
    }
    let mut partitions: Vec<Vec<RecordBatch>> = vec![Vec::new(); drains.len()];
    while let Some(drained) = drains.join_next().await {
        match drained {
            Ok(result) => {
                let (index, batches) = result?;
                partitions[index] = batches;
            }
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => return Err(datafusion::error::DataFusionError::External(Box::new(e))),
        }
    }
    MemTable::try_new(schema, partitions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::physical_plan::displayable;

    #[tokio::test]
    async fn a_streams_joins_build_on_one_side_and_probe_the_other_unrepartitioned() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(dir.path().to_str().unwrap()).unwrap();
        let ctx = bounded_session(&lake, 16 << 20, 512).await.unwrap();
        // Several partitions on any machine, and tables past the size at which
        // a join of them would otherwise go by partition.
        run_sql(
            &ctx,
            "SET datafusion.execution.target_partitions = 4",
            "set",
        )
        .await
        .unwrap();
        let tables = [
            "CREATE TABLE keys AS SELECT value AS k FROM generate_series(1, 200000)",
            "CREATE TABLE lines AS SELECT value % 300000 AS k, repeat('é漢', 20) AS text \
             FROM generate_series(1, 400000)",
        ];
        for create in tables {
            run_sql(&ctx, create, "create").await.unwrap();
        }
        let query = "SELECT l.k, l.text FROM keys k JOIN lines l ON l.k = k.k ORDER BY l.k";
        let plan = ctx
            .sql(query)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let shown = displayable(plan.as_ref()).indent(false).to_string();
        assert!(shown.contains("mode=CollectLeft"), "{shown}");
        assert!(!shown.contains("partitioning=Hash"), "{shown}");
        let joined = run_sql(
            &ctx,
            "SELECT count(*) AS n FROM keys k JOIN lines l ON l.k = k.k",
            "n",
        )
        .await
        .unwrap();
        assert_eq!(crate::columns::i64s(&joined, "n"), vec![Some(300_000)]);
    }
}
