//! Named snapshots: a name for one lake commit, kept under
//! `_turnlake/snapshots/NAME.json` (put-if-absent, so a name is never
//! silently moved), which `--as-of NAME` reads and vacuum keeps.

use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use super::log::META_DIR;
use super::{Lake, LakeError, LakeResult};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub name: String,
    pub lake_version: u64,
    pub created: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub note: Option<String>,
}

/// A name that cannot be read as a lake version or a timestamp.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 128
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        || !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
    {
        return Err(format!(
            "snapshot name {name:?}: use letters, digits, '.', '_' and '-', starting with a letter"
        ));
    }
    Ok(())
}

fn err(lake: &Lake, reason: String) -> LakeError {
    LakeError::Log {
        root: lake.root().to_string(),
        reason,
    }
}

fn path(
    lake: &Lake,
    name: &str,
) -> LakeResult<(
    std::sync::Arc<dyn object_store::ObjectStore>,
    object_store::path::Path,
)> {
    let (store, prefix) = lake.store()?;
    Ok((
        store,
        prefix
            .join(META_DIR)
            .join("snapshots")
            .join(format!("{name}.json")),
    ))
}

/// Name the latest lake commit.
pub async fn create(lake: &Lake, name: &str, note: Option<String>) -> LakeResult<Snapshot> {
    check_name(name).map_err(|e| err(lake, e))?;
    // Under the writer lock, so no vacuum runs between naming a commit and
    // the snapshot file that keeps its files.
    let writer = lake
        .begin("snapshot", serde_json::json!({"name": name}))
        .await?;
    let snap = create_locked(lake, name, note).await;
    writer.release().await?;
    snap
}

async fn create_locked(lake: &Lake, name: &str, note: Option<String>) -> LakeResult<Snapshot> {
    let commit = lake.log()?.latest().await?.ok_or_else(|| {
        err(
            lake,
            "the lake has no commit to name yet: write something first".into(),
        )
    })?;
    let snap = Snapshot {
        name: name.to_string(),
        lake_version: commit.version,
        created: super::lock::now_rfc3339(),
        note,
    };
    let (store, path) = path(lake, name)?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    let body = serde_json::to_vec_pretty(&snap).expect("a snapshot serializes");
    match store.put_opts(&path, PutPayload::from(body), opts).await {
        Ok(_) => Ok(snap),
        Err(object_store::Error::AlreadyExists { .. }) => Err(err(
            lake,
            format!("a snapshot named {name:?} already exists"),
        )),
        Err(e) => Err(err(lake, format!("writing snapshot {name:?}: {e}"))),
    }
}

pub async fn read(lake: &Lake, name: &str) -> LakeResult<Snapshot> {
    check_name(name).map_err(|e| err(lake, e))?;
    let (store, path) = path(lake, name)?;
    let bytes = match store.get(&path).await {
        Ok(r) => r.bytes().await.map_err(|e| err(lake, e.to_string()))?,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(err(
                lake,
                format!("no snapshot named {name:?} (see `turnlake snapshot list`)"),
            ))
        }
        Err(e) => return Err(err(lake, format!("reading snapshot {name:?}: {e}"))),
    };
    serde_json::from_slice(&bytes).map_err(|e| err(lake, format!("snapshot {name:?}: {e}")))
}

/// Every snapshot, oldest commit first.
pub async fn list(lake: &Lake) -> LakeResult<Vec<Snapshot>> {
    use futures::TryStreamExt;
    let (store, prefix) = lake.store()?;
    let dir = prefix.join(META_DIR).join("snapshots");
    let metas: Vec<object_store::ObjectMeta> = store
        .list(Some(&dir))
        .try_collect()
        .await
        .map_err(|e| err(lake, format!("listing snapshots: {e}")))?;
    let mut out = Vec::new();
    for m in metas {
        if let Some(name) = m.location.filename().and_then(|n| n.strip_suffix(".json")) {
            out.push(read(lake, name).await?);
        }
    }
    out.sort_by(|a, b| (a.lake_version, &a.name).cmp(&(b.lake_version, &b.name)));
    Ok(out)
}
