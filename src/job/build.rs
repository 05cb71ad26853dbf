//! `turnlake build PIPELINE.toml`: the whole pipeline as one batch job —
//! ingest, credit, select, mix, validate, export — where each step is
//! skipped when what it would read (table versions), its parameters and its
//! SQL equal what its last run recorded (`pipeline::steps::is_current`), so
//! a rerun after a crash or a config change redoes only what changed.
//! `data/pipeline.toml` is the documented example.

use anyhow::Context;
use serde::Deserialize;
use std::time::Instant;

use super::export::{export_sft, manifest_path};
use super::validate::{params, validate_table, ValidateOptions};
use crate::export::{manifest, sft};
use crate::lake::Lake;
use crate::pipeline::credit::{self, CreditConfig};
use crate::pipeline::ingest::{ingest, InputKind};
use crate::pipeline::select::{self, MixUnit, SelectConfig, PRODUCTS};
use crate::pipeline::{mix, steps};
use crate::storage::Location;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Inputs {
    #[serde(default)]
    albedo: Vec<String>,
    #[serde(default)]
    mini_coder: Vec<String>,
    #[serde(default)]
    mswea: Vec<String>,
    #[serde(default = "yes")]
    verify: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Configs {
    credit: Option<String>,
    select: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Outputs {
    sft: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineFile {
    #[serde(default)]
    inputs: Inputs,
    #[serde(default)]
    configs: Configs,
    outputs: Outputs,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    32768
}

/// One line of the closing table.
pub struct StepRun {
    pub step: String,
    pub ran: bool,
    pub rows_in: u64,
    pub rows_out: u64,
    pub secs: f64,
    pub peak_mib: u64,
    pub note: String,
}

/// The process's peak resident memory so far, in MiB.
fn peak_mib() -> u64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    u.ru_maxrss as u64 / 1024
}

/// The tables a step reads.
fn table_names(spec: &steps::StepSpec) -> Vec<&'static str> {
    spec.inputs.iter().map(|i| i.table).collect()
}

async fn rows(lake: &Lake, tables: &[&str]) -> anyhow::Result<u64> {
    let ctx = crate::engine::session(lake).await?;
    let mut n = 0;
    for t in tables {
        if ctx.table_exist(*t)? {
            n += ctx.table(*t).await?.count().await? as u64;
        }
    }
    Ok(n)
}

/// The note of a step that did not run.
const UNCHANGED: &str = "inputs and parameters unchanged";

/// A pipeline file read, with its configs parsed: what [`run`] executes.
pub struct Plan {
    file: PipelineFile,
    pipeline: Location,
    credit_config: CreditConfig,
    select_config: SelectConfig,
}

/// Read the pipeline file at `pipeline` and the configs it names (relative to it).
pub async fn load(pipeline: &Location) -> anyhow::Result<Plan> {
    let pipeline = pipeline.clone();

    let text = String::from_utf8(
        pipeline
            .read()
            .await
            .with_context(|| format!("reading {pipeline}"))?,
    )
    .with_context(|| format!("{pipeline} is not UTF-8"))?;
    let file: PipelineFile = toml::from_str(&text).with_context(|| format!("{pipeline}"))?;
    let at = |p: &str| pipeline.resolve(p);
    let config_text = |p: &Option<String>| {
        let p = p.as_deref().map(at).transpose();
        async move {
            match p? {
                None => Ok::<_, anyhow::Error>(None),
                Some(l) => {
                    let bytes = l.read().await?;
                    Ok(Some((
                        l.to_string(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    )))
                }
            }
        }
    };
    let credit_config = super::parse_config(
        config_text(&file.configs.credit).await?,
        CreditConfig::default_config,
        CreditConfig::from_toml,
    )?;
    let select_config = super::parse_config(
        config_text(&file.configs.select).await?,
        SelectConfig::default_config,
        SelectConfig::from_toml,
    )?;
    Ok(Plan {
        file,
        pipeline,
        credit_config,
        select_config,
    })
}

/// Run every step of `plan` on `lake` in order, each skipped when current;
/// a line per step goes to stderr as it ends.
pub async fn run(lake: &Lake, plan: &Plan) -> anyhow::Result<Vec<StepRun>> {
    let Plan {
        file,
        pipeline,
        credit_config,
        select_config,
    } = plan;
    let at = |p: &str| pipeline.resolve(p);
    let mut runs: Vec<StepRun> = Vec::new();
    let mut step =
        |name: &str, ran: bool, (rows_in, rows_out): (u64, u64), started: Instant, note: String| {
            let r = StepRun {
                step: name.to_string(),
                ran,
                rows_in,
                rows_out,
                secs: started.elapsed().as_secs_f64(),
                peak_mib: peak_mib(),
                note,
            };
            eprintln!(
                "build: {:<20} {:<8} {:>9} rows in {:>9} rows out  {:>7.2} s",
                r.step,
                if r.ran { "ran" } else { "skipped" },
                r.rows_in,
                r.rows_out,
                r.secs
            );
            runs.push(r);
        };

    // Ingest is incremental by itself: content the lake holds is not written again.
    for (label, kind, paths) in [
        (
            "ingest albedo",
            InputKind::Albedo {
                verify: file.inputs.verify,
            },
            &file.inputs.albedo,
        ),
        (
            "ingest mini-coder",
            InputKind::MiniCoder,
            &file.inputs.mini_coder,
        ),
        ("ingest mswea", InputKind::Mswea, &file.inputs.mswea),
    ] {
        if paths.is_empty() {
            continue;
        }
        let started = Instant::now();
        let paths = paths.iter().map(|p| at(p)).collect::<Result<Vec<_>, _>>()?;
        let r = ingest(lake, kind, paths, Default::default())
            .await
            .with_context(|| format!("{label} failed"))?;
        let mut note = format!(
            "read {} = written {} + unchanged {} + rejected {}",
            r.read, r.written, r.unchanged, r.rejected
        );
        if r.skipped > 0 {
            note.push_str(&format!("; skipped {} unreadable entries", r.skipped));
        }
        step(
            label,
            r.written > 0,
            (r.read, r.trajectories),
            started,
            note,
        );
    }

    let started = Instant::now();
    let credit_in = table_names(&steps::CREDIT);
    if steps::is_current(lake, &steps::CREDIT, serde_json::to_value(credit_config)?).await? {
        step("credit", false, (0, 0), started, UNCHANGED.into());
    } else {
        let rows_in = rows(lake, &credit_in).await?;
        let s = credit::build(lake, credit_config)
            .await
            .context("credit failed")?;
        step(
            "credit",
            true,
            (rows_in, (s.citations + s.turns + s.sides) as u64),
            started,
            String::new(),
        );
    }

    let started = Instant::now();
    let select_in = table_names(&steps::SELECT);
    if steps::is_current(lake, &steps::SELECT, select::recorded_params(select_config)).await? {
        step("select", false, (0, 0), started, UNCHANGED.into());
    } else {
        let rows_in = rows(lake, &select_in).await?;
        select::build(lake, select_config)
            .await
            .context("select failed")?;
        let out: Vec<&str> = PRODUCTS.iter().map(|(_, t)| *t).collect();
        step(
            "select",
            true,
            (rows_in, rows(lake, &out).await?),
            started,
            String::new(),
        );
    }

    let started = Instant::now();
    // Token quotas are counted with turnlake's own tokenizer here.
    let counter = match select_config.mix.unit {
        MixUnit::Rows => None,
        MixUnit::Tokens => Some(super::mix::Counter::open(None)?),
    };
    let mix_params = mix::params(
        &select_config.mix,
        counter.as_ref().map(|c| c.digest.as_str()),
    );
    if steps::is_current(lake, &steps::MIX, mix_params).await? {
        step("mix", false, (0, 0), started, UNCHANGED.into());
    } else {
        let tokens = match counter {
            Some(c) => Some(
                super::mix::count_tokens(lake, c)
                    .await
                    .context("mix failed")?,
            ),
            None => None,
        };
        let r = mix::build(lake, &select_config.mix, tokens.as_ref())
            .await
            .context("mix failed")?;
        step(
            "mix",
            true,
            (
                r.available.values().map(|n| *n as u64).sum(),
                r.mixes.iter().map(|m| m.rows as u64).sum(),
            ),
            started,
            String::new(),
        );
    }

    let started = Instant::now();
    let validate_args = ValidateOptions::defaults(file.limit);
    if steps::is_current(lake, &steps::VALIDATE, params(&validate_args)).await? {
        step("validate", false, (0, 0), started, UNCHANGED.into());
    } else {
        let v = validate_table(lake, &validate_args).await?;
        anyhow::ensure!(
            v.report.failures.is_empty(),
            "validate: {} of {} train turns do not decode back to their content (run `turnlake validate` for each one)",
            v.report.failures.len(),
            v.report.train_turns
        );
        step(
            "validate",
            true,
            (v.report.rows as u64, v.kept.unwrap_or(0) as u64),
            started,
            format!(
                "{:.2}% of train turns decode back",
                100.0 * v.report.pass_rate()
            ),
        );
    }

    // The export is current when its manifest records the versions readers see now
    // and the file still has the recorded hash.
    let started = Instant::now();
    let out = at(&file.outputs.sft)?;
    let mpath = manifest_path(&out);
    let view = lake.view().await?;
    let current = match manifest::read(&mpath).await {
        Ok(m) => {
            m.lake == lake.root().as_str()
                && m.tables.get("sft_mix") == view.tables.get("sft_mix")
                && manifest::verify(&m, &out.parent().unwrap_or_else(|| out.clone()))
                    .await
                    .is_empty()
        }
        Err(_) => false,
    };
    if current {
        step(
            "export sft",
            false,
            (0, 0),
            started,
            format!("{out} is current"),
        );
    } else {
        let (s, _, _) = export_sft(lake, "sft_mix", sft::SftFormat::Jsonl, None, &out).await?;
        step(
            "export sft",
            true,
            (s.rows as u64, s.rows as u64),
            started,
            out.to_string(),
        );
    }

    Ok(runs)
}
