//! Exports as whole jobs: rows streamed from the lake into local files,
//! hashed, published (renamed, or uploaded to an object store), and the
//! manifest written beside them, so a failed export leaves nothing
//! half-written; and `rebuild`, which reproduces an export from the lake
//! commit its manifest records.

use anyhow::Context;

use crate::export::sft::{self, SftFormat};
use crate::export::trainers::{self, Trainer};
use crate::export::{manifest, sft_rows, verl};
use crate::storage::Location;

/// Export `table` of `lake` as `format`, shaped for `trainer`, to `out`:
/// written to a local file first (beside `out`, or in the temporary folder
/// for an object), hashed, then renamed or uploaded, so a failed export
/// leaves nothing half-written. For axolotl, its config goes beside `out`.
pub async fn write_sft(
    lake: &crate::lake::Lake,
    table: &str,
    format: SftFormat,
    trainer: Option<Trainer>,
    out: &Location,
) -> anyhow::Result<(sft::ExportSummary, Vec<manifest::FileEntry>)> {
    let scratch;
    let tmp = match out.as_local() {
        Some(p) => {
            if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            }
            p.with_extension("partial")
        }
        None => {
            scratch = tempfile::tempdir().context("creating a scratch folder")?;
            scratch.path().join("export")
        }
    };
    // Rows stream from the lake into the file; on any failure the partial
    // file goes and nothing is published.
    let writer = {
        let tmp = tmp.clone();
        tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let file = std::fs::File::create(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            Ok(sft::SftWriter::new(
                std::io::BufWriter::new(file),
                format,
                trainer,
            )?)
        })
        .await??
    };
    // KTO labels every judged turn, which the rows carry only when asked.
    let judged = trainer == Some(Trainer::Kto);
    let streamed =
        sft_rows::stream_rows_with(lake, table, judged, writer, |w, rows| w.write(&rows)).await;
    let written = match streamed {
        Ok(w) => tokio::task::spawn_blocking(move || w.finish()).await?,
        Err(e) => Err(e),
    };
    let written = match written {
        Ok(summary) => summary,
        Err(e) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(anyhow::Error::from(e).context("export failed"));
        }
    };
    let name = out.file_name().context("the export path names no file")?;
    let entry = {
        let (tmp, name) = (tmp.clone(), name.clone());
        tokio::task::spawn_blocking(move || manifest::entry(&name, &tmp)).await??
    };
    out.publish(&tmp).await?;
    let mut entries = vec![entry];
    if trainer == Some(Trainer::Axolotl) {
        let config_name = trainers::axolotl_config_name(&name);
        let config_tmp = tmp.with_extension("axolotl-partial");
        std::fs::write(&config_tmp, trainers::axolotl_config(&name, format))
            .with_context(|| format!("writing {}", config_tmp.display()))?;
        entries.push(manifest::entry(&config_name, &config_tmp)?);
        let at = out
            .parent()
            .unwrap_or_else(|| out.clone())
            .join(&config_name);
        at.publish(&config_tmp).await?;
    }
    Ok((written, entries))
}

/// Export and write its manifest beside it: the summary, the manifest and where it went.
pub async fn export_sft(
    lake: &crate::lake::Lake,
    table: &str,
    format: SftFormat,
    trainer: Option<Trainer>,
    out: &Location,
) -> anyhow::Result<(sft::ExportSummary, manifest::Manifest, Location)> {
    let (summary, entries) = write_sft(lake, table, format, trainer, out).await?;
    let mut export =
        serde_json::json!({"kind": "sft", "table": table, "format": format_name(format)});
    if let Some(trainer) = trainer {
        export["for"] = serde_json::to_value(trainer)?;
    }
    let m = manifest::build(lake, export, entries).await?;
    let mpath = manifest_path(out);
    manifest::write(&m, &mpath)
        .await
        .with_context(|| format!("writing {mpath}"))?;
    Ok((summary, m, mpath))
}

/// Where an export's manifest goes: `PATH.manifest.json`.
pub fn manifest_path(out: &Location) -> Location {
    let name = format!("{}.manifest.json", out.file_name().unwrap_or_default());
    out.parent().unwrap_or_else(|| out.clone()).join(&name)
}

fn format_name(f: SftFormat) -> &'static str {
    match f {
        SftFormat::Jsonl => "jsonl",
        SftFormat::Parquet => "parquet",
    }
}

/// Write a verl export of `lake` into the folder `out` with its manifest:
/// files go to a local scratch folder first and are published only when
/// every one is written, so a refused or failed export writes nothing.
pub async fn export_verl(
    lake: &crate::lake::Lake,
    opts: &verl::VerlOptions,
    out: &Location,
) -> anyhow::Result<(verl::VerlSummary, manifest::Manifest, Location)> {
    for s in &opts.sources {
        anyhow::ensure!(
            ["albedo", "mini_coder", "mswea"].contains(&s.as_str()),
            "unknown source {s:?} (albedo, mini_coder, mswea)"
        );
    }
    let scratch = verl::scratch_for(out).context("creating a scratch folder")?;
    let summary = verl::write(lake, opts, scratch.path()).await?;
    let mut entries = Vec::new();
    for name in verl::FILES {
        let local = scratch.path().join(name);
        let entry = {
            let local = local.clone();
            tokio::task::spawn_blocking(move || manifest::entry(name, &local)).await??
        };
        entries.push(entry);
    }
    for name in verl::FILES {
        out.join(name).publish(&scratch.path().join(name)).await?;
    }
    let export = serde_json::json!({
        "kind": "verl",
        "options": opts,
        "r_exit": {"at_last_evidence": 0.0, "earlier": -0.75, "later": -0.5},
    });
    let m = manifest::build(lake, export, entries).await?;
    let mpath = out.join("manifest.json");
    manifest::write(&m, &mpath)
        .await
        .with_context(|| format!("writing {mpath}"))?;
    Ok((summary, m, mpath))
}

/// What a rebuild found: the files the manifest lists, the lake commit they
/// were rebuilt from, and each file whose sha256 differs.
pub struct Rebuilt {
    pub files: usize,
    pub lake_commit: u64,
    pub mismatches: Vec<String>,
}

/// Reproduce the export `manifest_at` describes from the lake commit it
/// records, into `out` (else a temporary folder), and compare every file's
/// sha256 with the manifest's.
pub async fn rebuild(
    manifest_at: &Location,
    out: Option<&std::path::Path>,
    lake: Option<&str>,
) -> anyhow::Result<Rebuilt> {
    let mpath = manifest_at;
    let m = manifest::read(mpath).await?;
    let scratch;
    let dir = match out {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            d.to_path_buf()
        }
        None => {
            scratch = tempfile::tempdir().context("creating a scratch folder")?;
            scratch.path().to_path_buf()
        }
    };
    // Every file the manifest names stays inside the folder, before anything is written.
    for file in &m.files {
        manifest::confined(&dir, &file.path)?;
    }
    // The lake the user named, else the manifest's (someone else's word for
    // where to read, with this user's credentials): say which, before reading.
    let root = match lake {
        Some(named) => {
            // Neither is created: a manifest must not make a folder anywhere.
            let ours = crate::lake::Lake::open_existing(named)?;
            let differs = crate::lake::Lake::open_existing(&m.lake)
                .map_or(true, |theirs| theirs.root() != ours.root());
            if differs {
                eprintln!(
                    "rebuild: reading the lake {named} at lake commit {} (the manifest names {})",
                    m.lake_commit, m.lake
                );
            }
            named
        }
        None => {
            eprintln!(
                "rebuild: reading the lake {} that the manifest names, at lake commit {} (--lake reads another)",
                m.lake, m.lake_commit
            );
            m.lake.as_str()
        }
    };
    let lake = crate::lake::Lake::open_as_of(root, &m.lake_commit.to_string()).await?;
    match m.export["kind"].as_str().unwrap_or("") {
        "sft" => {
            let table = m.export["table"].as_str().unwrap_or("sft_mix");
            let format = match m.export["format"].as_str() {
                Some("parquet") => SftFormat::Parquet,
                _ => SftFormat::Jsonl,
            };
            let trainer: Option<Trainer> = serde_json::from_value(m.export["for"].clone())
                .with_context(|| format!("{mpath}: the trainer the export was for"))?;
            let file = m.files.first().context("the manifest lists no file")?;
            let out = Location::Local(dir.join(&file.path));
            write_sft(&lake, table, format, trainer, &out).await?;
        }
        "verl" => {
            let opts: verl::VerlOptions = serde_json::from_value(m.export["options"].clone())
                .with_context(|| format!("{mpath}: export options"))?;
            verl::write(&lake, &opts, &dir).await?;
        }
        kind => anyhow::bail!("{mpath}: cannot rebuild an export of kind {kind:?}"),
    }
    Ok(Rebuilt {
        files: m.files.len(),
        lake_commit: m.lake_commit,
        mismatches: manifest::verify(&m, &Location::Local(dir.clone())).await,
    })
}
