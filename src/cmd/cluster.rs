//! `turnlake cluster scheduler|executor`: serve a Ballista cluster for `--cluster`.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Run a scheduler; prints `turnlake scheduler listening on df://HOST:PORT`.
    Scheduler(SchedulerArgs),
    /// Run an executor that registers with a scheduler and runs its tasks.
    Executor(ExecutorArgs),
}

#[derive(Debug, Args)]
pub struct SchedulerArgs {
    /// Address to listen on (port 0: a free one).
    #[arg(long, default_value = "127.0.0.1:50050")]
    pub bind: SocketAddr,
    /// Seconds without a heartbeat before an executor is taken for dead and
    /// its tasks go to the others (longer than the executors' heartbeat).
    #[arg(long, default_value_t = 180)]
    pub executor_timeout: u64,
}

#[derive(Debug, Args)]
pub struct ExecutorArgs {
    /// The scheduler, df://HOST:PORT.
    #[arg(long, env = "TURNLAKE_CLUSTER")]
    pub scheduler: String,
    /// Host to listen on and advertise to the scheduler and clients.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Arrow Flight port (results and shuffles); 0: a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// gRPC port the scheduler sends tasks to; 0: a free one.
    #[arg(long, default_value_t = 0)]
    pub grpc_port: u16,
    /// Tasks run at once (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub concurrency: usize,
    /// Seconds between heartbeats to the scheduler.
    #[arg(long, default_value_t = 60)]
    pub heartbeat: u64,
    /// Folder for shuffle files (default: a temporary folder removed on exit).
    #[arg(long)]
    pub work_dir: Option<String>,
}

#[cfg(not(feature = "cluster"))]
pub async fn run(_what: ClusterCommand) -> anyhow::Result<ExitCode> {
    Err(crate::sinks::Sink::Cluster
        .missing("turnlake cluster")
        .into())
}

#[cfg(feature = "cluster")]
pub async fn run(what: ClusterCommand) -> anyhow::Result<ExitCode> {
    use crate::cluster::serve;
    use crate::engine::remote::parse_url;
    // Ballista reports through `log`: warnings and errors on stderr (RUST_LOG for more).
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    match what {
        ClusterCommand::Scheduler(a) => {
            serve::scheduler(serve::SchedulerOptions {
                bind: a.bind,
                executor_timeout_secs: a.executor_timeout,
            })
            .await?
        }
        ClusterCommand::Executor(a) => {
            serve::executor(serve::ExecutorOptions {
                scheduler: parse_url(&a.scheduler)?,
                host: a.host,
                flight_port: a.port,
                grpc_port: a.grpc_port,
                concurrency: a.concurrency,
                heartbeat_secs: a.heartbeat,
                work_dir: a.work_dir,
            })
            .await?
        }
    }
    Ok(ExitCode::SUCCESS)
}
