//! Running the lake's SQL on a DataFusion Ballista cluster: the scheduler
//! and executor processes (`turnlake cluster`). The client side, a session
//! whose plans run there, is `engine::remote`.
//!
//! A command given `--cluster df://host:port` plans its SQL as usual, with
//! every lake table at the version the command pinned, but the scans,
//! joins and aggregates run on the cluster's executors; results come back to
//! the client, which writes them through the same lake commit as a local run.

pub mod serve;
pub mod stores;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("listening on {0}")]
    Bind(String, #[source] std::io::Error),
    #[error("creating the executor's work folder")]
    WorkDir(#[source] std::io::Error),
    #[error("the executor stopped: {0}")]
    Stopped(String),
    #[error(transparent)]
    Ballista(#[from] ballista_core::error::BallistaError),
}
