//! Export manifests: what an export read (the lake commit and every table
//! version, the commands and parameters that wrote them) and what it wrote
//! (each file's size and sha256), so `turnlake rebuild` can reproduce it
//! byte for byte and say which file differs when it cannot.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

use super::ExportError;
use crate::lake::Lake;
use crate::storage::{Location, StorageError};

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

/// The entry of a written file: `name` as the manifest lists it, the bytes of `local`.
pub fn entry(name: &str, local: &Path) -> Result<FileEntry, ExportError> {
    let (size, sha256) =
        crate::digest::hash_file(local).map_err(|source| ExportError::Hashing {
            path: local.display().to_string(),
            source,
        })?;
    Ok(FileEntry {
        path: name.to_string(),
        size,
        sha256,
    })
}

/// The manifest of an export of `lake` (as its view reads it) that wrote `files`.
pub async fn build(
    lake: &Lake,
    export: serde_json::Value,
    files: Vec<FileEntry>,
) -> Result<Manifest, ExportError> {
    let view = lake.view().await?;
    let commit = view.commit.clone().ok_or(ExportError::NoCommit)?;
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
    Ok(Manifest {
        turnlake: env!("CARGO_PKG_VERSION").to_string(),
        lake: lake.root().to_string(),
        lake_commit: commit.version,
        tables: view.tables,
        written_by,
        export,
        files,
    })
}

/// Write `manifest` as pretty JSON at `path`.
pub async fn write(manifest: &Manifest, path: &Location) -> Result<(), StorageError> {
    let mut body = serde_json::to_vec_pretty(manifest).expect("a manifest serializes");
    body.push(b'\n');
    path.write(body).await
}

pub async fn read(path: &Location) -> Result<Manifest, ExportError> {
    let bytes = path.read().await?;
    serde_json::from_slice(&bytes).map_err(|e| ExportError::NotAManifest {
        path: path.to_string(),
        reason: e.to_string(),
    })
}

/// Compare the files in `dir` with the manifest (hashed on a blocking
/// thread, streamed where remote); the files that differ, with why.
/// Where file `path` of a manifest goes under the folder `out`: a manifest
/// is someone else's file, so a path that is absolute, climbs with `..`, or
/// leads (through a symlink already under `out`) outside it is refused.
pub fn confined(out: &Path, path: &str) -> Result<std::path::PathBuf, ExportError> {
    use std::path::Component;
    let refuse = |why: &str| {
        ExportError::Refused(format!(
            "the manifest's file path {path:?} {why}; rebuild writes only inside {}",
            out.display()
        ))
    };
    let relative = Path::new(path);
    if path.is_empty() || relative.is_absolute() {
        return Err(refuse("is absolute or empty"));
    }
    if !relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return Err(refuse("leaves its folder (a `..` or root component)"));
    }
    // A symlink under `out` may lead elsewhere: the deepest part of the
    // path that exists must resolve inside `out`.
    let root = out
        .canonicalize()
        .map_err(|e| ExportError::Refused(format!("{}: {e}", out.display())))?;
    let mut existing = out.join(relative);
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent.to_path_buf(),
            None => break,
        }
    }
    match existing.canonicalize() {
        Ok(real) if real.starts_with(&root) => Ok(out.join(relative)),
        Ok(real) => Err(refuse(&format!(
            "resolves to {} through a symlink",
            real.display()
        ))),
        Err(e) => Err(refuse(&format!("cannot be resolved: {e}"))),
    }
}

pub async fn verify(manifest: &Manifest, dir: &Location) -> Vec<String> {
    let (files, dir) = (manifest.files.clone(), dir.clone());
    let check = move || {
        let mut bad = Vec::new();
        for f in &files {
            let hashed = dir
                .join(&f.path)
                .open_blocking()
                .and_then(crate::digest::hash_reader);
            match hashed {
                Ok((size, sha)) if size == f.size && sha == f.sha256 => {}
                Ok((size, sha)) => bad.push(format!(
                    "{}: rebuilt {size} bytes sha256 {sha}, the manifest records {} bytes sha256 {}",
                    f.path, f.size, f.sha256
                )),
                Err(e) => bad.push(format!("{}: {e}", f.path)),
            }
        }
        bad
    };
    tokio::task::spawn_blocking(check)
        .await
        .unwrap_or_else(|e| vec![format!("verifying: {e}")])
}
