//! Test-only fail points: `TURNLAKE_FAILPOINT=NAME[:N]` aborts the process
//! (no cleanup, as a kill would) the N-th time (default: first) the code
//! passes `hit(NAME)`, so crash tests can stop a command between two commits
//! (`panic@NAME[:N]` panics there instead, as a bug would);
//! `TURNLAKE_PAUSE=NAME:SECONDS` waits there each time instead, so a test can
//! hold a writer's lock for longer than its leases however fast the machine.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

/// Whether the fail point panics (`panic@NAME`) rather than aborts.
static PANICS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

static TARGET: LazyLock<Option<(String, u32)>> = LazyLock::new(|| {
    let spec = std::env::var("TURNLAKE_FAILPOINT").ok()?;
    let spec = match spec.strip_prefix("panic@") {
        Some(rest) => {
            PANICS.store(true, std::sync::atomic::Ordering::Relaxed);
            rest.to_string()
        }
        None => spec,
    };
    match spec.rsplit_once(':') {
        Some((name, n)) if n.parse::<u32>().is_ok() => Some((name.to_string(), n.parse().ok()?)),
        _ => Some((spec, 1)),
    }
});
static PAUSE: LazyLock<Option<(String, f64)>> = LazyLock::new(|| {
    let spec = std::env::var("TURNLAKE_PAUSE").ok()?;
    let (name, secs) = spec.rsplit_once(':')?;
    Some((name.to_string(), secs.parse().ok()?))
});
static SEEN: LazyLock<Mutex<HashMap<String, u32>>> = LazyLock::new(Default::default);

/// Abort here if this is the configured fail point's configured pass.
pub fn hit(name: &str) {
    let Some((target, nth)) = TARGET.as_ref() else {
        return;
    };
    if target != name {
        return;
    }
    let mut seen = SEEN.lock().expect("fail point counter");
    let n = seen.entry(name.to_string()).or_default();
    *n += 1;
    if *n == *nth {
        if PANICS.load(std::sync::atomic::Ordering::Relaxed) {
            drop(seen);
            panic!("fail point {name}:{nth} panicked");
        }
        eprintln!("fail point {name}:{nth} fired");
        std::process::abort();
    }
}

/// Wait here if this is the configured pause point (without blocking the
/// runtime: a writer's lock renewal goes on meanwhile).
pub async fn pause(name: &str) {
    if let Some((target, secs)) = PAUSE.as_ref() {
        if target == name {
            tokio::time::sleep(std::time::Duration::from_secs_f64(*secs)).await;
        }
    }
}
