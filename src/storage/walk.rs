//! Walking a local folder someone else may have written (ingest, scorer
//! score, outcomes): whatever cannot be read as a regular file is skipped
//! with a warning naming it and counted, so an odd entry neither hangs nor
//! stops a walk. Symlinks to folders are followed only when asked
//! (`--follow`, as ripgrep does); a loop is skipped either way. Without
//! `--follow` a symlink that leads outside the folder is skipped too: a
//! folder from someone else must not make turnlake read (and keep, as a
//! reject's raw bytes) a file of yours it points at.

use std::path::Path;

use super::{Entry, Location};

/// The files a walk found, in path order, and how many entries it skipped.
#[derive(Debug, Default)]
pub struct Listing {
    pub entries: Vec<Entry>,
    pub skipped: u64,
}

/// Files under a local path (itself if a file).
pub(super) fn local(p: &Path, follow: bool) -> std::io::Result<Listing> {
    let meta = std::fs::metadata(p)?;
    if !meta.is_dir() {
        return Ok(Listing {
            entries: vec![Entry {
                location: Location::Local(p.to_path_buf()),
                size: meta.len(),
                etag: None,
            }],
            skipped: 0,
        });
    }
    let root = std::fs::canonicalize(p)?;
    let mut skipped = 0;
    let mut skip = |path: &Path, why: &str| {
        eprintln!("warning: skipping {}: {why}", path.display());
        skipped += 1;
    };
    let mut entries = Vec::new();
    for entry in walkdir::WalkDir::new(p)
        .follow_links(follow)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                let at = e.path().map_or_else(|| p.to_path_buf(), Path::to_path_buf);
                skip(&at, &e.to_string());
                continue;
            }
        };
        let path = entry.path();
        let file_type = entry.file_type();
        if file_type.is_dir() {
            continue;
        }
        // A symlink (not followed): read what it names when that is a regular file.
        let meta = match (file_type.is_symlink(), std::fs::metadata(path)) {
            (_, Err(e)) => {
                skip(path, &e.to_string());
                continue;
            }
            (true, Ok(m)) if m.is_dir() => {
                skip(
                    path,
                    "a symlink to a folder (not followed without --follow)",
                );
                continue;
            }
            (true, Ok(_)) if !follow && !leads_inside(path, &root) => {
                skip(
                    path,
                    "a symlink that leads outside the folder (followed only with --follow)",
                );
                continue;
            }
            (_, Ok(m)) => m,
        };
        if !meta.is_file() {
            skip(path, "not a regular file (a FIFO, socket or device)");
            continue;
        }
        if let Err(e) = std::fs::File::open(path) {
            skip(path, &e.to_string());
            continue;
        }
        entries.push(Entry {
            location: Location::Local(path.to_path_buf()),
            size: meta.len(),
            etag: None,
        });
    }
    entries.sort_by(|a, b| a.location.as_local().cmp(&b.location.as_local()));
    Ok(Listing { entries, skipped })
}

/// Whether the symlink at `path` resolves to somewhere under `root` (a
/// canonical path).
fn leads_inside(path: &Path, root: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|target| target.starts_with(root))
}
