//! `turnlake serve`: a read-only web app over the lake. Pages are rendered on
//! the server from templates embedded in the binary (nothing is fetched at
//! run time), every request must carry the token printed with the URL, and
//! SQL typed on a page runs under the shell's read-only rule.

mod auth;
mod pages;
mod render;
mod sql;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use datafusion::prelude::SessionContext;
use std::sync::Arc;

use crate::lake::Lake;

/// What every request shares: the lake, one session over it (as `turnlake
/// sql` opens) and the token.
pub struct App {
    pub lake: Lake,
    pub ctx: SessionContext,
    /// The credit report, counted on the first visit of its page (the
    /// session reads the lake as of one commit, so it does not change).
    credit_report: tokio::sync::OnceCell<crate::pipeline::stats::Report>,
    /// The mix's composition report, likewise.
    mix_report: tokio::sync::OnceCell<crate::pipeline::mix::MixReport>,
    token: String,
    templates: minijinja::Environment<'static>,
}

impl App {
    pub fn new(lake: Lake, ctx: SessionContext, token: String) -> App {
        App {
            lake,
            ctx,
            credit_report: tokio::sync::OnceCell::new(),
            mix_report: tokio::sync::OnceCell::new(),
            token,
            templates: render::templates(),
        }
    }
}

/// Bytes the queries of every page together may hold (beyond it they spill,
/// or fail with a message), so the server's memory is bounded whatever is asked.
pub const QUERY_MEMORY: usize = 512 << 20;

/// A fresh random token, as Jupyter prints one with its URL.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    getrandom_02::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// Serve `app` on `listener` until Ctrl-C.
pub async fn serve(app: App, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let app = Arc::new(app);
    let router = Router::new()
        .route("/", get(pages::lake))
        .route("/trajectories", get(pages::trajectories))
        .route("/trajectory", get(pages::trajectory))
        .route("/mix", get(pages::mix))
        .route("/credit", get(pages::credit))
        .route("/sql", get(sql::sql))
        .fallback(|| async { WebError::NotFound("no such page".into()) })
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::require_token,
        ))
        .with_state(app);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}

/// Why a page could not be shown; said on the page with its status.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Query(String),
    #[error("rendering the page: {0}")]
    Render(#[from] minijinja::Error),
}

impl From<datafusion::error::DataFusionError> for WebError {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        WebError::Query(e.to_string())
    }
}

impl From<crate::pipeline::PipelineError> for WebError {
    fn from(e: crate::pipeline::PipelineError) -> Self {
        match e {
            crate::pipeline::PipelineError::NotFound(what) => {
                WebError::NotFound(format!("no trajectory {what}"))
            }
            e => WebError::Query(chain(&e)),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let status = match &self {
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::Query(_) | WebError::Render(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let body = render::error_page(status, &self.to_string());
        (status, Html(body)).into_response()
    }
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
