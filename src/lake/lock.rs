//! One writer at a time: `_turnlake/lock`, created with put-if-absent.
//!
//! A second writer waits while the holder is alive and takes over a lock
//! whose holder died on this host (a killed process leaves its lock behind).
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    pub command: String,
    pub since: String,
}

impl Holder {
    fn me(command: &str) -> Holder {
        Holder {
            pid: std::process::id(),
            host: hostname(),
            command: command.to_string(),
            since: now_rfc3339(),
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
}

impl WriterLock {
    pub async fn acquire(
        store: Arc<dyn ObjectStore>,
        root_prefix: &StorePath,
        root: &str,
        command: &str,
    ) -> LakeResult<WriterLock> {
        let path = root_prefix.clone().join(META_DIR).join("lock");
        let me = serde_json::to_vec(&Holder::me(command)).expect("a holder serializes");
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
                Ok(_) => {
                    return Ok(WriterLock {
                        store,
                        path,
                        released: false,
                    })
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
            let holder: Option<Holder> = match store.get(&path).await {
                Ok(r) => r
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok()),
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => {
                    return Err(err(describe(
                        "reading the writer lock: GET",
                        &format!("{root}{META_DIR}/lock"),
                        &e,
                    )))
                }
            };
            match holder {
                Some(h) if h.is_stale() => {
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
    pub async fn release(mut self) -> LakeResult<()> {
        self.released = true;
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
