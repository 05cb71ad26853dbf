//! `turnlake snapshot create NAME [--note TEXT] | list | show NAME|--latest [--json] | diff A B`:
//! named lake commits, what they hold (as files other engines read), and
//! what changed between two of them.

use anyhow::Context;
use clap::Subcommand;
use comfy_table::Table;
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::lake::{snapshot, Lake};
use crate::pipeline::lake_state::{self, state, step_settings};

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Name the latest lake commit.
    Create {
        name: String,
        #[arg(long)]
        note: Option<String>,
    },
    /// Every snapshot with its lake commit.
    List,
    /// Tables, versions and row counts at a snapshot (or lake version), and the
    /// command and parameters that last wrote each table; with --json, each
    /// table's path, Delta version and data files, for other engines.
    Show {
        /// A snapshot name or lake version.
        #[arg(required_unless_present = "latest", conflicts_with = "latest")]
        at: Option<String>,
        /// The latest lake commit (what turnlake reads now).
        #[arg(long)]
        latest: bool,
        #[arg(long)]
        json: bool,
    },
    /// Per table: versions and row counts at A and B; per step: whether its
    /// parameters or SQL changed.
    Diff { a: String, b: String },
}

/// A lake commit as other engines read it (`snapshot show --json`).
#[derive(Serialize)]
struct CommitFiles {
    lake: String,
    lake_commit: u64,
    timestamp: String,
    command: String,
    tables: BTreeMap<String, TableFiles>,
}

/// One table at a lake commit: open `path` at Delta `version`, or read `files`.
#[derive(Serialize)]
struct TableFiles {
    path: String,
    version: u64,
    rows: i64,
    files: Vec<String>,
}

/// The lake commit `at` names, or the latest one.
async fn resolve(root: &str, at: Option<String>) -> anyhow::Result<String> {
    if let Some(at) = at {
        return Ok(at);
    }
    let lake = Lake::open_existing(root)?;
    let latest = lake.log()?.latest().await?;
    let latest = latest.with_context(|| format!("{root}: the lake has no lake commit yet"))?;
    Ok(latest.version.to_string())
}

/// `turnlake unlock`: remove the writer lock of a writer that died on another machine.
pub async fn unlock(lake: &LakeArg) -> anyhow::Result<ExitCode> {
    let lake = Lake::open_existing(&lake.root)?;
    match lake.unlock().await? {
        Some(h) => println!(
            "removed the writer lock of `{}` (pid {} on {}, since {}); the next writer restores what it left",
            h.command, h.pid, h.host, h.since
        ),
        None => println!("the lake has no writer lock"),
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn run(lake: &LakeArg, cmd: SnapshotCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SnapshotCommand::Create { name, note } => {
            let lake = Lake::open_existing(&lake.root)?;
            let s = snapshot::create(&lake, &name, note).await?;
            println!("snapshot {} = lake commit {}", s.name, s.lake_version);
        }
        SnapshotCommand::List => {
            let lake = Lake::open_existing(&lake.root)?;
            let mut t = Table::new();
            t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
            t.set_header(vec!["name", "lake commit", "created", "note"]);
            for s in snapshot::list(&lake).await? {
                t.add_row(vec![
                    s.name,
                    s.lake_version.to_string(),
                    s.created,
                    s.note.unwrap_or_default(),
                ]);
            }
            println!("{t}");
        }
        SnapshotCommand::Show {
            at,
            latest: _,
            json,
        } => {
            let at = resolve(&lake.root, at).await?;
            let (commit, tables) = state(&lake.root, &at).await?;
            if json {
                let opened = Lake::open_existing(&lake.root)?;
                let mut files = BTreeMap::new();
                for (name, s) in tables {
                    let table = TableFiles {
                        path: opened.table_location(&name),
                        version: s.version,
                        rows: s.rows,
                        files: opened.data_files(&name, s.version).await?,
                    };
                    files.insert(name, table);
                }
                let shown = CommitFiles {
                    lake: opened.root().to_string(),
                    lake_commit: commit.version,
                    timestamp: commit.timestamp,
                    command: commit.command,
                    tables: files,
                };
                println!("{}", serde_json::to_string_pretty(&shown)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!(
                "lake commit {} ({}, {}, turnlake {})",
                commit.version, commit.timestamp, commit.command, commit.turnlake
            );
            let mut t = Table::new();
            t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
            t.set_header(vec![
                "table",
                "version",
                "rows",
                "written by",
                "parameters and SQL",
            ]);
            for (name, s) in tables {
                let (cmd, params) = s.writer.unwrap_or_default();
                t.add_row(vec![
                    name,
                    s.version.to_string(),
                    s.rows.to_string(),
                    cmd,
                    serde_json::to_string(&step_settings(&params))?,
                ]);
            }
            println!("{t}");
        }
        SnapshotCommand::Diff { a, b } => {
            let (ca, ta) = state(&lake.root, &a).await?;
            let (cb, tb) = state(&lake.root, &b).await?;
            println!(
                "{a} = lake commit {}, {b} = lake commit {}",
                ca.version, cb.version
            );
            let mut t = Table::new();
            t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
            t.set_header(vec![
                "table",
                "version A",
                "version B",
                "rows A",
                "rows B",
                "rows B - A",
                "step settings",
            ]);
            for d in lake_state::diff(&ta, &tb) {
                let show = |n: Option<i64>| n.map_or_else(|| "—".into(), |n| n.to_string());
                t.add_row(vec![
                    d.table,
                    show(d.version_a),
                    show(d.version_b),
                    show(d.rows_a),
                    show(d.rows_b),
                    (d.rows_b.unwrap_or(0) - d.rows_a.unwrap_or(0)).to_string(),
                    d.settings.to_string(),
                ]);
            }
            println!("{t}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
