//! Test-only fail points: `TURNLAKE_FAILPOINT=NAME[:N]` aborts the process
//! (no cleanup, as a kill would) the N-th time (default: first) the code
//! passes `hit(NAME)`, so crash tests can stop a command between two commits;
//! `TURNLAKE_PAUSE=NAME:SECONDS` waits there each time instead, so a test can
//! hold a writer's lock for longer than its leases however fast the machine.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

static TARGET: LazyLock<Option<(String, u32)>> = LazyLock::new(|| {
    let spec = std::env::var("TURNLAKE_FAILPOINT").ok()?;
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
