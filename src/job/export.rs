//! An SFT export as a whole job: rows streamed from the lake into a local
//! file, hashed, published (renamed, or uploaded to an object store), and its
//! manifest written beside it, so a failed export leaves nothing half-written.

use anyhow::Context;

use crate::export::sft::{self, SftFormat};
use crate::export::{manifest, sft_rows};
use crate::storage::Location;

/// Export `table` of `lake` as `format` to `out`: written to a local file
/// first (beside `out`, or in the temporary folder for an object), hashed,
/// then renamed or uploaded, so a failed export leaves nothing half-written.
pub async fn write_sft(
    lake: &crate::lake::Lake,
    table: &str,
    format: SftFormat,
    out: &Location,
) -> anyhow::Result<(sft::ExportSummary, manifest::FileEntry)> {
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
            Ok(sft::SftWriter::new(std::io::BufWriter::new(file), format)?)
        })
        .await??
    };
    let streamed = sft_rows::stream_rows(lake, table, writer, |w, rows| w.write(&rows)).await;
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
        let tmp = tmp.clone();
        tokio::task::spawn_blocking(move || manifest::entry(&name, &tmp)).await??
    };
    out.publish(&tmp).await?;
    Ok((written, entry))
}

/// Export and write its manifest beside it: the summary, the manifest and where it went.
pub async fn export_sft(
    lake: &crate::lake::Lake,
    table: &str,
    format: SftFormat,
    out: &Location,
) -> anyhow::Result<(sft::ExportSummary, manifest::Manifest, Location)> {
    let (summary, entry) = write_sft(lake, table, format, out).await?;
    let export = serde_json::json!({"kind": "sft", "table": table, "format": format_name(format)});
    let m = manifest::build(lake, export, vec![entry]).await?;
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
