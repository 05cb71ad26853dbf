//! `turnlake vacuum [--retention-hours H]` and `turnlake optimize`.

use clap::Args;
use comfy_table::Table;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::lake::maintain::{self, Maintenance};

#[derive(Debug, Args)]
pub struct VacuumArgs {
    /// Keep files removed less than this many hours ago (0: delete every file
    /// that no named snapshot and no latest lake commit reads).
    #[arg(long, default_value_t = 168)]
    pub retention_hours: i64,
}

fn print(m: &Maintenance, added: &str, removed: &str) {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
    t.set_header(vec!["table", added, removed]);
    for (name, (a, r)) in &m.tables {
        t.add_row(vec![name.clone(), a.to_string(), r.to_string()]);
    }
    println!("{t}");
}

pub async fn vacuum(lake: &LakeArg, args: VacuumArgs) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let m = maintain::vacuum(&lake, args.retention_hours).await?;
    print(&m, "-", "files deleted");
    println!("{} bytes freed", m.bytes_freed);
    Ok(ExitCode::SUCCESS)
}

pub async fn optimize(lake: &LakeArg) -> anyhow::Result<ExitCode> {
    let lake = lake.open().await?;
    let m = maintain::optimize(&lake).await?;
    print(&m, "files written", "files compacted");
    Ok(ExitCode::SUCCESS)
}
