//! Running the lake's SQL on a DataFusion Ballista cluster.
//!
//! A command given `--cluster df://host:port` plans its SQL as usual, with
//! every lake table at the version the command pinned, but the scans,
//! joins and aggregates run on the cluster's executors; results come back to
//! the client, which writes them through the same lake commit as a local run.

pub mod codec;
pub mod serve;
pub mod stores;

use std::sync::Arc;

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

/// Plans and results larger than gRPC's 4 MiB default travel (in-memory step
/// tables ride inside plans); the scheduler and executors accept the same.
pub const MAX_MESSAGE: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cluster URL {url:?}: {reason} (expected df://HOST:PORT)")]
    Url { url: String, reason: String },
    #[error("listening on {0}")]
    Bind(String, #[source] std::io::Error),
    #[error("creating the executor's work folder")]
    WorkDir(#[source] std::io::Error),
    #[error("the executor stopped: {0}")]
    Stopped(String),
    #[error(transparent)]
    Ballista(#[from] ballista_core::error::BallistaError),
    #[error("connecting to the Ballista scheduler at {url}")]
    Connect {
        url: String,
        #[source]
        source: datafusion::error::DataFusionError,
    },
}

/// `df://host:port` (or `host:port`) as host and port.
pub fn parse_url(url: &str) -> Result<(String, u16), ClusterError> {
    let err = |reason: &str| ClusterError::Url {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let full = if url.contains("://") {
        url.to_string()
    } else {
        format!("df://{url}")
    };
    let parsed = url::Url::parse(&full).map_err(|e| err(&e.to_string()))?;
    if parsed.scheme() != "df" {
        return Err(err("the scheme must be df://"));
    }
    let host = parsed.host_str().ok_or_else(|| err("no host"))?.to_string();
    let port = parsed.port().ok_or_else(|| err("no port"))?;
    Ok((host, port))
}

/// A session whose queries run on the cluster at `url`, with turnlake's codec
/// (the caller registers the UDFs and the lake's tables).
pub async fn remote_session(url: &str) -> Result<SessionContext, ClusterError> {
    let (host, port) = parse_url(url)?;
    let config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(Arc::new(codec::LakeCodec::default()))
        .with_ballista_grpc_client_max_message_size(MAX_MESSAGE)
        // Ballista 55's adaptive planner re-plans some of the steps' joins
        // without end; the static planner runs them.
        .with_ballista_adaptive_query_planner(false);
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config)
        .build();
    let url = format!("df://{host}:{port}");
    let ctx = SessionContext::remote_with_state(&url, state)
        .await
        .map_err(|source| ClusterError::Connect { url, source })?;
    // Two Ballista 55 planning bugs would make distributed results differ
    // from local ones (both reproduced on the steps' SQL):
    // - it prefers sort-merge joins (they spill), and DataFusion 55's
    //   sort-merge join mis-indexes a join filter's columns and panics;
    // - a UNION ALL branch holding a nested-loop join (a cross join with a
    //   parameter table) runs in several of the stage's tasks, so its rows
    //   come back duplicated.
    // So: hash joins, and one partition per stage. Stages still run on
    // different executors; a stage does not split across them.
    {
        let state = ctx.state_ref();
        let mut state = state.write();
        let options = state.config_mut().options_mut();
        options.optimizer.prefer_hash_join = true;
        options.execution.target_partitions = 1;
        // Lake tables are plain strings here (`pinned::without_views`): read them so.
        options.execution.parquet.schema_force_view_types = false;
    }
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls() {
        assert_eq!(
            parse_url("df://127.0.0.1:50050").unwrap(),
            ("127.0.0.1".into(), 50050)
        );
        assert_eq!(parse_url("localhost:7").unwrap(), ("localhost".into(), 7));
        assert!(parse_url("http://h:1")
            .unwrap_err()
            .to_string()
            .contains("df://"));
        assert!(parse_url("df://h")
            .unwrap_err()
            .to_string()
            .contains("no port"));
    }
}
