//! Export manifests: what an export read (the lake commit and every table
//! version, the commands and parameters that wrote them) and what it wrote
//! (each file's size and sha256), so `turnlake rebuild` can reproduce it
//! byte for byte and say which file differs when it cannot.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use crate::lake::{Lake, LakeError};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    /// The file's name, relative to the manifest's folder.
    pub path: String,
    pub size: u64,
    pub sha256: String,
}

/// The command and parameters of the lake commit that wrote a table's version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WrittenBy {
    pub command: String,
    pub params: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub turnlake: String,
    pub lake: String,
    pub lake_commit: u64,
    pub tables: BTreeMap<String, u64>,
    pub written_by: BTreeMap<String, WrittenBy>,
    /// The export and its arguments, as `rebuild` reruns it.
    pub export: serde_json::Value,
    pub files: Vec<FileEntry>,
}

/// sha256 and size of a file, read in chunks.
pub fn hash_file(path: &Path) -> std::io::Result<(u64, String)> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    Ok((size, hex::encode(h.finalize())))
}

/// The manifest of an export of `lake` (as its view reads it) that wrote `files`.
pub async fn build(
    lake: &Lake,
    export: serde_json::Value,
    files: &[&Path],
) -> Result<Manifest, ManifestError> {
    let view = lake.view().await?;
    let commit = view.commit.clone().ok_or(ManifestError::NoCommit)?;
    let log = lake.log()?;
    let mut written_by = BTreeMap::new();
    for v in log.versions().await? {
        if v > commit.version {
            break;
        }
        let c = log.read(v).await?;
        for (table, version) in &view.tables {
            if c.tables.get(table) == Some(version) && !written_by.contains_key(table) {
                written_by.insert(
                    table.clone(),
                    WrittenBy {
                        command: c.command.clone(),
                        params: c.params.clone(),
                    },
                );
            }
        }
    }
    let mut entries = Vec::new();
    for f in files {
        let (size, sha256) =
            hash_file(f).map_err(|e| ManifestError::Io(f.display().to_string(), e))?;
        entries.push(FileEntry {
            path: f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            size,
            sha256,
        });
    }
    Ok(Manifest {
        turnlake: env!("CARGO_PKG_VERSION").to_string(),
        lake: lake.root().to_string(),
        lake_commit: commit.version,
        tables: view.tables,
        written_by,
        export,
        files: entries,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(
        "the lake has no lake commit to record: write to it with this version of turnlake first"
    )]
    NoCommit,
    #[error("{0}")]
    Io(String, #[source] std::io::Error),
}

/// Write `manifest` as pretty JSON at `path`.
pub fn write(manifest: &Manifest, path: &Path) -> std::io::Result<()> {
    let mut body = serde_json::to_vec_pretty(manifest).map_err(std::io::Error::from)?;
    body.push(b'\n');
    std::fs::write(path, body)
}

pub fn read(path: &Path) -> Result<Manifest, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("{}: not a turnlake manifest: {e}", path.display()))
}

/// Compare rebuilt files in `dir` with the manifest; the files that differ, with why.
pub fn verify(manifest: &Manifest, dir: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for f in &manifest.files {
        let path = dir.join(&f.path);
        match hash_file(&path) {
            Ok((size, sha)) if size == f.size && sha == f.sha256 => {}
            Ok((size, sha)) => bad.push(format!(
                "{}: rebuilt {size} bytes sha256 {sha}, the manifest records {} bytes sha256 {}",
                f.path, f.size, f.sha256
            )),
            Err(e) => bad.push(format!("{}: {e}", f.path)),
        }
    }
    bad
}
