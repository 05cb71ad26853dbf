//! One writer at a time: `_turnlake/lock`, created with put-if-absent.
//!
//! A second writer waits while the holder is alive and takes over a lock
//! whose holder died on this host (a killed process leaves its lock behind)
//! or whose lease ran out: a holder rewrites its lock every quarter lease
//! (`TURNLAKE_LOCK_LEASE` seconds, default 120), so a lock that another
//! machine's writer stopped renewing is taken over after one lease, timed on
//! the waiter's own clock (no clocks are compared across machines).
//! The lock is what makes recovery safe: under it, every table version newer
//! than the latest lake commit belongs to a writer that is gone.

use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::storage::s3::describe;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::log::META_DIR;
use super::{LakeError, LakeResult};

/// How long a writer waits for a live holder before giving up.
pub const WAIT: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(200);
const DEFAULT_LEASE_SECS: f64 = 120.0;

/// How long a lock may go unrenewed before a waiter takes it over.
fn lease() -> Duration {
    let secs = std::env::var("TURNLAKE_LOCK_LEASE")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .unwrap_or(DEFAULT_LEASE_SECS);
    Duration::from_secs_f64(secs)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub command: String,
    pub since: String,
    /// How many times the holder renewed its lease.
    #[serde(default)]
    pub renewed: u64,
}

impl Holder {
    fn me(command: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            host: hostname(),
            command: command.to_string(),
            since: now_rfc3339(),
            renewed: 0,
        }
    }

    /// A holder on this host whose process is gone.
    fn is_stale(&self) -> bool {
        self.host == hostname() && !process_alive(self.pid)
    }
}

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(pid as libc::pid_t, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A held lock; released on `release` (a killed process leaves it stale).
#[derive(Debug)]
pub struct WriterLock {
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    released: bool,
    renewer: tokio::task::JoinHandle<()>,
    lost: Arc<std::sync::atomic::AtomicBool>,
}

/// Rewrite the lock every quarter lease while it is held; if another writer
/// took it over (the conditional rewrite fails), say it was lost.
fn renew(
    store: Arc<dyn ObjectStore>,
    path: StorePath,
    mut holder: Holder,
    mut etag: Option<String>,
    lost: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut conditional = true;
        loop {
            tokio::time::sleep(lease() / 4).await;
            holder.renewed += 1;
            let body = PutPayload::from(serde_json::to_vec(&holder).expect("a holder serializes"));
            let mode = match (&etag, conditional) {
                (Some(e), true) => PutMode::Update(object_store::UpdateVersion {
                    e_tag: Some(e.clone()),
                    version: None,
                }),
                _ => PutMode::Overwrite,
            };
            match store.put_opts(&path, body, mode.into()).await {
                Ok(r) => etag = r.e_tag,
                // A store without conditional updates (a local folder, where
                // a dead holder is found by its process) is rewritten as is.
                Err(object_store::Error::NotImplemented { .. }) => conditional = false,
                Err(object_store::Error::Precondition { .. })
                | Err(object_store::Error::NotFound { .. }) => {
                    lost.store(true, std::sync::atomic::Ordering::SeqCst);
                    return;
                }
                // A transient failure: the next round tries again.
                Err(_) => {}
            }
        }
    })
}

impl WriterLock {
    pub async fn acquire(
        store: Arc<dyn ObjectStore>,
        root_prefix: &StorePath,
        root: &str,
        command: &str,
    ) -> LakeResult<WriterLock> {
        let path = root_prefix.clone().join(META_DIR).join("lock");
        let holder = Holder::me(command);
        let me = serde_json::to_vec(&holder).expect("a holder serializes");
        // The lock as last seen and since when it has not changed.
        let mut watched: Option<(Option<String>, Instant)> = None;
        let err = |reason: String| LakeError::Log {
            root: root.to_string(),
            reason,
        };
        let started = Instant::now();
        loop {
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match store
                .put_opts(&path, PutPayload::from(me.clone()), opts)
                .await
            {
                Ok(put) => {
                    let lost = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let renewer =
                        renew(store.clone(), path.clone(), holder, put.e_tag, lost.clone());
                    return Ok(WriterLock {
                        store,
                        path,
                        released: false,
                        renewer,
                        lost,
                    });
                }
                Err(object_store::Error::AlreadyExists { .. }) => {}
                Err(e) => {
                    return Err(err(describe(
                        "taking the writer lock: PUT",
                        &format!("{root}{META_DIR}/lock"),
                        &e,
                    )))
                }
            }
            let (holder, etag): (Option<Holder>, Option<String>) = match store.get(&path).await {
                Ok(r) => {
                    let etag = r.meta.e_tag.clone();
                    let holder = r
                        .bytes()
                        .await
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                    (holder, etag)
                }
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => {
                    return Err(err(describe(
                        "reading the writer lock: GET",
                        &format!("{root}{META_DIR}/lock"),
                        &e,
                    )))
                }
            };
            let unrenewed = match &watched {
                Some((seen, since)) if *seen == etag => since.elapsed(),
                _ => {
                    watched = Some((etag, Instant::now()));
                    Duration::ZERO
                }
            };
            let expired = unrenewed > lease();
            match holder {
                Some(h) if h.is_stale() || expired => {
                    // Of several writers finding the same dead holder, exactly one
                    // (the one that creates this marker) removes its lock.
                    let marker = root_prefix.clone().join(META_DIR).join(format!(
                        "lock.stale.{}.{}",
                        h.pid,
                        h.since.replace(':', "-")
                    ));
                    let opts = PutOptions {
                        mode: PutMode::Create,
                        ..Default::default()
                    };
                    if store
                        .put_opts(&marker, PutPayload::from(me.clone()), opts)
                        .await
                        .is_ok()
                    {
                        let _ = store.delete(&path).await;
                        let _ = store.delete(&marker).await;
                    } else {
                        tokio::time::sleep(POLL).await;
                    }
                    continue;
                }
                Some(h) if started.elapsed() > WAIT => {
                    return Err(LakeError::Busy {
                        root: root.to_string(),
                        holder: format!(
                            "`{}` (pid {} on {}, since {})",
                            h.command, h.pid, h.host, h.since
                        ),
                    })
                }
                None if expired => {
                    // An unreadable lock nobody renews: remove it.
                    let _ = store.delete(&path).await;
                    watched = None;
                }
                None if started.elapsed() > WAIT => {
                    return Err(LakeError::Busy {
                        root: root.to_string(),
                        holder: "an unreadable lock file".into(),
                    })
                }
                _ => tokio::time::sleep(POLL).await,
            }
        }
    }
}

/// Remove the lock whoever holds it (`turnlake unlock`, for a holder that died
/// on another machine); the holder it removed, if any.
pub async fn force_unlock(
    store: Arc<dyn ObjectStore>,
    root_prefix: &StorePath,
) -> Result<Option<Holder>, object_store::Error> {
    let path = root_prefix.clone().join(META_DIR).join("lock");
    let holder = match store.get(&path).await {
        Ok(r) => serde_json::from_slice(&r.bytes().await?).ok(),
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    store.delete(&path).await?;
    Ok(holder)
}

impl WriterLock {
    /// Whether another writer took the lock over (this one stopped renewing
    /// it for longer than a lease): it must not commit.
    pub fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub async fn release(mut self) -> LakeResult<()> {
        self.released = true;
        self.renewer.abort();
        self.store
            .delete(&self.path)
            .await
            .map_err(|e| LakeError::Log {
                root: self.path.to_string(),
                reason: describe("releasing the writer lock: DELETE", self.path.as_ref(), &e),
            })
    }
}

impl Drop for WriterLock {
    fn drop(&mut self) {
        self.renewer.abort();
        if !self.released {
            // An error path: release without waiting (best effort; a stale lock
            // of a dead process is taken over by the next writer anyway).
            let (store, path) = (self.store.clone(), self.path.clone());
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = store.delete(&path).await;
                });
            }
        }
    }
}
