//! `turnlake cluster scheduler|executor`: Ballista's scheduler and executor
//! processes with turnlake's codec (pinned lake tables, in-memory tables),
//! its UDFs in every function registry, and its object stores.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::utils::default_session_builder;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{FunctionRegistry, SessionState};
use datafusion::prelude::SessionConfig;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};

use super::stores::LakeStores;
use super::ClusterError;
use crate::engine::codec::LakeCodec;
use crate::engine::remote::MAX_MESSAGE;

pub struct SchedulerOptions {
    /// Where to listen; port 0 picks a free one (printed on stdout).
    pub bind: SocketAddr,
    /// An executor silent this long is dead and its tasks are rescheduled.
    pub executor_timeout_secs: u64,
}

pub struct ExecutorOptions {
    /// The scheduler's host:port.
    pub scheduler: (String, u16),
    /// The host the executor listens on and advertises.
    pub host: String,
    /// Flight (results, shuffles) and gRPC (task) ports; 0 picks free ones.
    pub flight_port: u16,
    pub grpc_port: u16,
    /// Tasks run at once.
    pub concurrency: usize,
    pub heartbeat_secs: u64,
    /// Shuffle files; a temporary folder when `None`.
    pub work_dir: Option<String>,
}

/// A session on the scheduler: Ballista's defaults plus turnlake's UDFs, so
/// plans that call them decode.
fn scheduler_session(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    let mut state = default_session_builder(config)?;
    for udf in crate::udf::all() {
        state.register_udf(Arc::new(udf))?;
    }
    Ok(state)
}

/// Run a scheduler until the process is stopped.
pub async fn scheduler(opts: SchedulerOptions) -> Result<(), ClusterError> {
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|e| ClusterError::Bind(opts.bind.to_string(), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| ClusterError::Bind(opts.bind.to_string(), e))?;
    let config = SchedulerConfig {
        bind_host: addr.ip().to_string(),
        external_host: addr.ip().to_string(),
        bind_port: addr.port(),
        executor_timeout_seconds: opts.executor_timeout_secs,
        expire_dead_executor_interval_seconds: (opts.executor_timeout_secs / 3).max(1),
        no_executors_grace_period_seconds: opts.executor_timeout_secs,
        grpc_server_max_decoding_message_size: MAX_MESSAGE as u32,
        grpc_server_max_encoding_message_size: MAX_MESSAGE as u32,
        grpc_client_max_message_size: MAX_MESSAGE as u32,
        override_session_builder: Some(Arc::new(scheduler_session)),
        override_logical_codec: Some(Arc::new(LakeCodec::default())),
        ..SchedulerConfig::default()
    };
    let config = Arc::new(config);
    let cluster = BallistaCluster::new_from_config(&config).await?;
    let server = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, config).await?;
    println!("turnlake scheduler listening on df://{addr}");
    start_grpc_service_with_listener(listener, server).await?;
    Ok(())
}

/// A free port on `host`, for the executor's own listeners.
fn free_port(host: &str) -> Result<u16, ClusterError> {
    let l = TcpListener::bind((host, 0)).map_err(|e| ClusterError::Bind(host.to_string(), e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ClusterError::Bind(host.to_string(), e))
}

/// Run an executor registered with the scheduler until it is stopped.
pub async fn executor(opts: ExecutorOptions) -> Result<(), ClusterError> {
    // Held until the executor stops: its shuffle files live here.
    let scratch = tempfile::TempDir::new().map_err(ClusterError::WorkDir)?;
    let work_dir = match &opts.work_dir {
        Some(d) => d.clone(),
        None => scratch.path().to_string_lossy().into_owned(),
    };
    let port = |p: u16| if p == 0 { free_port(&opts.host) } else { Ok(p) };
    // Ballista's default registry has the core functions; plans also call
    // the array functions (cardinality, array_has, ...) and turnlake's UDFs.
    let mut functions = BallistaFunctionRegistry::default();
    let extra = datafusion::functions_nested::all_default_nested_functions()
        .into_iter()
        .chain(crate::udf::all().into_iter().map(Arc::new));
    for f in extra {
        for name in std::iter::once(f.name()).chain(f.aliases().iter().map(String::as_str)) {
            functions
                .scalar_functions
                .insert(name.to_string(), f.clone());
        }
    }
    let config = ExecutorProcessConfig {
        bind_host: opts.host.clone(),
        external_host: Some(opts.host.clone()),
        port: port(opts.flight_port)?,
        grpc_port: port(opts.grpc_port)?,
        scheduler_host: opts.scheduler.0.clone(),
        scheduler_port: opts.scheduler.1,
        vcores: opts.concurrency,
        executor_heartbeat_interval_seconds: opts.heartbeat_secs,
        work_dir: Some(work_dir),
        grpc_max_decoding_message_size: MAX_MESSAGE as u32,
        grpc_max_encoding_message_size: MAX_MESSAGE as u32,
        override_function_registry: Some(Arc::new(functions)),
        override_logical_codec: Some(Arc::new(LakeCodec::default())),
        override_runtime_producer: Some(Arc::new(|_config: &SessionConfig| {
            Ok(Arc::new(
                RuntimeEnvBuilder::new()
                    .with_object_store_registry(Arc::new(LakeStores::default()))
                    .build()?,
            ))
        })),
        ..ExecutorProcessConfig::default()
    };
    let (host, flight_port) = (config.bind_host.clone(), config.port);
    println!(
        "turnlake executor {} on {host}:{flight_port} (flight), scheduler {}:{}",
        config.executor_id, config.scheduler_host, config.scheduler_port
    );
    let process = tokio::spawn(start_executor_process(Arc::new(config)));
    // Ballista registers with the scheduler before it serves Flight, so a
    // Flight port that accepts means the executor can be given tasks.
    while !process.is_finished() {
        if tokio::net::TcpStream::connect((host.as_str(), flight_port))
            .await
            .is_ok()
        {
            println!("turnlake executor ready");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    process
        .await
        .map_err(|e| ClusterError::Stopped(e.to_string()))??;
    drop(scratch);
    Ok(())
}
