//! The token every request carries: `?token=` on the URL `serve` printed,
//! then a cookie the first such request sets, so links need not repeat it.

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use super::App;

const COOKIE: &str = "turnlake_token";

/// Pages allow no script, no frame and nothing from elsewhere.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
                      form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub async fn require_token(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let from_query = req
        .uri()
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token"))
        .map(|(_, v)| v.into_owned());
    let given = from_query.clone().or_else(|| cookie(req.headers()));
    if !given.is_some_and(|t| same(t.as_bytes(), app.token.as_bytes())) {
        return (
            StatusCode::FORBIDDEN,
            "turnlake serve: a missing or wrong token; open the URL `turnlake serve` printed\n",
        )
            .into_response();
    }
    let mut response = next.run(req).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if from_query.is_some() {
        let set = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", app.token);
        if let Ok(v) = HeaderValue::from_str(&set) {
            headers.insert(header::SET_COOKIE, v);
        }
    }
    response
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// Equal, in time that does not depend on where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others_and_compared_whole() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; turnlake_token=abc; b=2"),
        );
        assert_eq!(cookie(&h).as_deref(), Some("abc"));
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab"));
    }
}
