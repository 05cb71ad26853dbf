//! The lake log: one commit across tables per command that writes.
//!
//! Each Delta table keeps its own versions; the lake log, under
//! `_turnlake/log/NNNNNNNNNNNNNNNNNNNN.json` at the lake root, says which
//! version of every table belongs to one consistent lake. Readers resolve
//! every table at the latest lake commit, so a table version written by a
//! command that died before its lake commit stays invisible. A commit is
//! written with put-if-absent: of two writers, exactly one wins a version.

use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{LakeError, LakeResult};

/// The folder under the lake root that holds turnlake's own files.
pub const META_DIR: &str = "_turnlake";

/// One input file a command read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct InputFile {
    pub path: String,
    pub size: u64,
    /// sha256 of the file's bytes, where the command hashed them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<String>,
    /// The object's ETag, for an input read from an object store.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub etag: Option<String>,
}

/// One lake commit.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LakeCommit {
    pub version: u64,
    /// RFC 3339, UTC.
    pub timestamp: String,
    /// The command that wrote it (`ingest mini-coder`, `credit`, ...).
    pub command: String,
    pub params: serde_json::Value,
    #[serde(default)]
    pub inputs: Vec<InputFile>,
    /// The version of every table of the lake after this commit.
    pub tables: BTreeMap<String, u64>,
    pub turnlake: String,
}

/// The lake log of one lake root.
#[derive(Debug, Clone)]
pub struct LakeLog {
    store: Arc<dyn ObjectStore>,
    dir: StorePath,
    root: String,
}

fn commit_name(version: u64) -> String {
    format!("{version:020}.json")
}

impl LakeLog {
    pub fn new(store: Arc<dyn ObjectStore>, root_prefix: &StorePath, root: &str) -> LakeLog {
        LakeLog {
            store,
            dir: root_prefix.clone().join(META_DIR).join("log"),
            root: root.to_string(),
        }
    }

    fn err(&self, what: &str, e: impl std::fmt::Display) -> LakeError {
        LakeError::Log {
            root: self.root.clone(),
            reason: format!("{what}: {e}"),
        }
    }

    /// A failed request on the log, named by operation and URL.
    fn store_err(&self, what: &str, key: &str, e: &object_store::Error) -> LakeError {
        LakeError::Log {
            root: self.root.clone(),
            reason: crate::storage::s3::describe(
                what,
                &format!("{}{META_DIR}/log/{key}", self.root_slash()),
                e,
            ),
        }
    }

    fn root_slash(&self) -> String {
        if self.root.ends_with('/') {
            self.root.clone()
        } else {
            format!("{}/", self.root)
        }
    }

    /// Every commit version in the log, ascending.
    pub async fn versions(&self) -> LakeResult<Vec<u64>> {
        use futures::TryStreamExt;
        let listed: Vec<object_store::ObjectMeta> = self
            .store
            .list(Some(&self.dir))
            .try_collect()
            .await
            .map_err(|e| self.store_err("listing the lake log: LIST", "", &e))?;
        let mut versions: Vec<u64> = listed
            .iter()
            .filter_map(|m| m.location.filename())
            .filter_map(|n| n.strip_suffix(".json"))
            .filter_map(|n| n.parse().ok())
            .collect();
        versions.sort_unstable();
        Ok(versions)
    }

    pub async fn read(&self, version: u64) -> LakeResult<LakeCommit> {
        let path = self.dir.clone().join(commit_name(version));
        let bytes = self
            .store
            .get(&path)
            .await
            .map_err(|e| self.store_err("reading a lake commit: GET", &commit_name(version), &e))?
            .bytes()
            .await
            .map_err(|e| self.store_err("reading a lake commit: GET", &commit_name(version), &e))?;
        serde_json::from_slice(&bytes).map_err(|e| self.err(&format!("lake commit {version}"), e))
    }

    /// The newest commit, if the lake has any.
    pub async fn latest(&self) -> LakeResult<Option<LakeCommit>> {
        match self.versions().await?.last() {
            Some(v) => Ok(Some(self.read(*v).await?)),
            None => Ok(None),
        }
    }

    /// Write `commit` at its version, failing if another writer took it.
    pub async fn write(&self, commit: &LakeCommit) -> LakeResult<()> {
        let path = self.dir.clone().join(commit_name(commit.version));
        let body = serde_json::to_vec_pretty(commit).expect("a lake commit serializes");
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&path, PutPayload::from(body), opts)
            .await
        {
            Ok(_) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. }) => Err(LakeError::Conflict {
                root: self.root.clone(),
                version: commit.version,
            }),
            Err(e) => Err(self.store_err(
                "writing a lake commit: PUT",
                &commit_name(commit.version),
                &e,
            )),
        }
    }
}
