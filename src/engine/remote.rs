//! A session whose queries run on a DataFusion Ballista cluster: the client
//! side of `--cluster df://host:port` (the scheduler and executors are
//! `cluster`). Plans travel with turnlake's [`codec`](super::codec).

use std::sync::Arc;

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::codec::LakeCodec;

/// Plans and results larger than gRPC's 4 MiB default travel (in-memory step
/// tables ride inside plans); the scheduler and executors accept the same.
pub const MAX_MESSAGE: usize = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cluster URL {url:?}: {reason} (expected df://HOST:PORT)")]
    Url { url: String, reason: String },
    #[error("connecting to the Ballista scheduler at {url}")]
    Connect {
        url: String,
        #[source]
        source: datafusion::error::DataFusionError,
    },
}

/// `df://host:port` (or `host:port`) as host and port.
pub fn parse_url(url: &str) -> Result<(String, u16), RemoteError> {
    let err = |reason: &str| RemoteError::Url {
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
pub async fn remote_session(url: &str) -> Result<SessionContext, RemoteError> {
    let (host, port) = parse_url(url)?;
    let config = SessionConfig::new_with_ballista()
        .with_ballista_logical_extension_codec(Arc::new(LakeCodec::default()))
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
        .map_err(|source| RemoteError::Connect { url, source })?;
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
