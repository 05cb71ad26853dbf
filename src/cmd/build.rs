//! `turnlake build PIPELINE.toml`: see `job::build`; this prints its closing table.

use clap::Args;
use comfy_table::Table;
use std::collections::BTreeMap;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::job::build::{self, StepRun};
use crate::storage::Location;

#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The pipeline file (see data/pipeline.toml), local or s3://; its paths are relative to it.
    pub pipeline: String,
}

pub async fn run(lake_arg: &LakeArg, args: BuildArgs) -> anyhow::Result<ExitCode> {
    let plan = build::load(&Location::parse(&args.pipeline)?).await?;
    let lake = lake_arg.open_or_create().await?;
    let runs = build::run(&lake, &plan).await?;
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "step",
        "ran",
        "rows in",
        "rows out",
        "seconds",
        "peak RSS so far (MiB)",
        "note",
    ]);
    let summary: BTreeMap<usize, &StepRun> = runs.iter().enumerate().collect();
    for r in summary.values() {
        t.add_row(vec![
            r.step.clone(),
            if r.ran { "ran" } else { "skipped" }.to_string(),
            r.rows_in.to_string(),
            r.rows_out.to_string(),
            format!("{:.2}", r.secs),
            r.peak_mib.to_string(),
            r.note.clone(),
        ]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}
