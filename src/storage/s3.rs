//! S3 stores configured as the AWS tools configure them: credentials,
//! region and endpoint from `AWS_*` variables (or the shared credentials
//! file's profile), path-style requests, conditional writes (`If-None-Match`)
//! for lake-log and Delta commits, bounded timeouts and retries with backoff.
//!
//! With keys in the environment no other credential source is asked; with
//! none and `AWS_EC2_METADATA_DISABLED` set, the store refuses to start
//! rather than ask the cloud metadata address. Secrets never reach output:
//! every error turnlake prints passes through [`redact`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
use object_store::{BackoffConfig, ClientOptions, ObjectStore, RetryConfig};
use url::Url;

use super::StorageError;

/// Per-request timeout (seconds) unless `TURNLAKE_S3_TIMEOUT` says otherwise.
const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Retries of a transient failure unless `TURNLAKE_S3_RETRIES` says otherwise.
const DEFAULT_RETRIES: usize = 4;

fn env_number<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn truthy(key: &str) -> bool {
    std::env::var(key)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
        .unwrap_or(false)
}

/// One store per bucket, shared by every table and input of the process.
fn stores() -> &'static Mutex<HashMap<String, Arc<dyn ObjectStore>>> {
    static STORES: OnceLock<Mutex<HashMap<String, Arc<dyn ObjectStore>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// The store of `url`'s bucket, built from the environment on first use.
pub fn store(url: &Url) -> Result<Arc<dyn ObjectStore>, StorageError> {
    let bucket = url.host_str().unwrap_or_default().to_string();
    let invalid = |reason: String| StorageError::Invalid {
        location: url.to_string(),
        reason,
    };
    if bucket.is_empty() {
        return Err(invalid("no bucket in the URL (s3://BUCKET/prefix)".into()));
    }
    if let Some(s) = stores().lock().expect("store cache").get(&bucket) {
        return Ok(s.clone());
    }
    register_delta_handlers();
    let timeout = Duration::from_secs(env_number("TURNLAKE_S3_TIMEOUT", DEFAULT_TIMEOUT_SECS));
    let mut builder = AmazonS3Builder::new()
        .with_client_options(
            ClientOptions::new()
                .with_timeout(timeout)
                .with_connect_timeout(timeout.min(Duration::from_secs(10))),
        )
        .with_retry(RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(5),
                base: 2.0,
            },
            max_retries: env_number("TURNLAKE_S3_RETRIES", DEFAULT_RETRIES),
            retry_timeout: timeout * 4,
        });
    let mut has_keys = false;
    for (key, value) in std::env::vars() {
        if !key.starts_with("AWS_") {
            continue;
        }
        if let Ok(k) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
            has_keys |= matches!(k, AmazonS3ConfigKey::AccessKeyId);
            builder = builder.with_config(k, value);
        }
    }
    if !has_keys {
        if let Some(creds) = profile_credentials() {
            has_keys = true;
            builder = builder
                .with_access_key_id(creds.access_key_id)
                .with_secret_access_key(creds.secret_access_key);
            if let Some(t) = creds.session_token {
                builder = builder.with_token(t);
            }
        }
    }
    let other_source = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ]
    .iter()
    .any(|k| std::env::var_os(k).is_some())
        || truthy("AWS_SKIP_SIGNATURE");
    if !has_keys && !other_source && truthy("AWS_EC2_METADATA_DISABLED") {
        return Err(invalid(
            "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE); \
             AWS_EC2_METADATA_DISABLED forbids asking the instance metadata service"
                .into(),
        ));
    }
    let store: Arc<dyn ObjectStore> = Arc::new(
        builder
            .with_url(url.as_str())
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .build()
            .map_err(|e| invalid(redact(&e.to_string())))?,
    );
    stores()
        .lock()
        .expect("store cache")
        .insert(bucket, store.clone());
    Ok(store)
}

/// delta-rs resolves a table's log store by URL scheme: register S3's.
fn register_delta_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| deltalake::aws::register_handlers(None));
}

#[derive(Clone)]
struct ProfileCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

/// Keys of `AWS_PROFILE` (or `default`) in the shared credentials file
/// (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`).
fn profile_credentials() -> Option<ProfileCredentials> {
    static READ: OnceLock<Option<ProfileCredentials>> = OnceLock::new();
    READ.get_or_init(read_profile_credentials).clone()
}

fn read_profile_credentials() -> Option<ProfileCredentials> {
    let file = std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".aws/credentials"))
        })?;
    let text = std::fs::read_to_string(file).ok()?;
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let keys = profile_section(&text, &profile);
    Some(ProfileCredentials {
        access_key_id: keys.get("aws_access_key_id")?.clone(),
        secret_access_key: keys.get("aws_secret_access_key")?.clone(),
        session_token: keys.get("aws_session_token").cloned(),
    })
}

/// The `key = value` pairs of one `[profile]` section of an INI file.
fn profile_section(text: &str, profile: &str) -> HashMap<String, String> {
    let mut inside = false;
    let mut out = HashMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            inside =
                name == profile || name.strip_prefix("profile ").map(str::trim) == Some(profile);
            continue;
        }
        if inside {
            if let Some((k, v)) = line.split_once('=') {
                out.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    out
}

/// `text` with every secret of the environment (secret key, session token)
/// replaced by `***`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    let mut secrets: Vec<String> = ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .collect();
    if let Some(c) = profile_credentials() {
        secrets.push(c.secret_access_key);
        secrets.extend(c.session_token);
    }
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s.as_str(), "***");
    }
    out
}

const ACCESS_DENIED: &str =
    "403 access denied: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket's policy";
const TIMED_OUT: &str =
    "the server did not answer in time: TURNLAKE_S3_TIMEOUT sets the per-request limit";

/// How object_store words a 403 answer (a listing's error carries no variant for it).
const FORBIDDEN_STATUS: &str = "status code: 403 Forbidden";

/// One line for a failed object-store request: the operation, the URL and
/// what the server said, with a hint for the common permanent failures.
pub fn describe(operation: &str, location: &str, e: &object_store::Error) -> String {
    let said = redact(&e.to_string());
    match hint(std::iter::once(e as &(dyn std::error::Error + 'static))) {
        Some(hint) => format!("{operation} {location} failed ({hint}): {said}"),
        None => format!("{operation} {location} failed: {said}"),
    }
}

/// A hint for an error whose cause is an object-store failure that did not
/// pass through [`describe`] (a Delta or query error wrapping it).
pub fn hint<'a>(
    mut chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> Option<&'static str> {
    chain.find_map(|e| {
        let e = e.downcast_ref::<object_store::Error>()?;
        if matches!(e, object_store::Error::PermissionDenied { .. })
            || e.to_string().contains(FORBIDDEN_STATUS)
        {
            Some(ACCESS_DENIED)
        } else if matches!(e, object_store::Error::Unauthenticated { .. }) {
            Some("401 not authenticated: check the credentials in the environment")
        } else if timed_out(e) {
            Some(TIMED_OUT)
        } else {
            None
        }
    })
}

/// Whether a request failed because the server did not answer in time.
fn timed_out(e: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<HttpError>()
            .is_some_and(|h| matches!(h.kind(), HttpErrorKind::Timeout))
        {
            return true;
        }
        cur = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_sections_are_read_by_name() {
        let ini = "[default]\naws_access_key_id = A\naws_secret_access_key=B\n\n[profile lab]\n# c\naws_access_key_id = C\naws_secret_access_key = D\naws_session_token = E\n";
        let d = profile_section(ini, "default");
        assert_eq!(d["aws_access_key_id"], "A");
        assert_eq!(d["aws_secret_access_key"], "B");
        assert!(!d.contains_key("aws_session_token"));
        let lab = profile_section(ini, "lab");
        assert_eq!(lab["aws_access_key_id"], "C");
        assert_eq!(lab["aws_session_token"], "E");
        assert!(profile_section(ini, "none").is_empty());
    }

    #[test]
    fn a_403_is_named_with_its_hint() {
        let e = object_store::Error::PermissionDenied {
            path: "k".into(),
            source: "Server returned 403 Forbidden".into(),
        };
        let line = describe("PUT", "s3://b/k", &e);
        assert!(
            line.starts_with("PUT s3://b/k failed (403 access denied"),
            "{line}"
        );
    }
}
