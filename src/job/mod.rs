//! Jobs that span the layers below them: `build` (a pipeline file as one
//! batch job), validate's table step, an SFT export with its manifest, and
//! a mix whose shares are token quotas.
//! `cmd` turns arguments into these calls and prints what they return.

pub mod build;
pub mod export;
pub mod mix;
pub mod validate;

/// A TOML config from `(name, text)`, or the embedded default; errors name the file.
pub fn parse_config<T>(
    file: Option<(String, String)>,
    default: fn() -> T,
    parse: fn(&str) -> Result<T, String>,
) -> anyhow::Result<T> {
    match file {
        None => Ok(default()),
        Some((name, text)) => parse(&text).map_err(|e| anyhow::anyhow!("{name}: {e}")),
    }
}
