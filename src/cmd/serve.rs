//! `turnlake serve [--bind ADDR]`: the read-only web app over the lake.

use anyhow::Context;
use clap::Args;
use std::net::SocketAddr;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::{engine, web};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; loopback unless you say otherwise (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8765")]
    pub bind: SocketAddr,
}

pub async fn run(lake: &LakeArg, args: ServeArgs) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let ctx = engine::memory_bounded_session(&lake, web::QUERY_MEMORY).await?;
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("listening on {}", args.bind))?;
    let addr = listener.local_addr()?;
    let token = web::new_token().context("drawing the token")?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: listening on {addr}, beyond this machine: anyone who learns the token can read the lake"
        );
    }
    // One line, the only one on stdout: a script reads the URL from it.
    println!("turnlake serve: open http://{addr}/?token={token} (Ctrl-C stops it)");
    web::serve(web::App::new(lake, ctx, token), listener)
        .await
        .context("serving")?;
    Ok(ExitCode::SUCCESS)
}
