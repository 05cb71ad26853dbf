//! One module per subcommand: each takes its validated arguments and runs.

pub mod build;
pub mod cluster;
pub mod credit;
pub mod demo;
pub mod export;
pub mod harvest;
pub mod ingest;
pub mod maintain;
pub mod mix;
pub mod scorer;
pub mod select;
pub mod serve;
pub mod show;
pub mod snapshot;
pub mod sql;
pub mod stats;
pub mod synth;
pub mod tables;
pub mod tokenizer;
pub mod train;
pub mod validate;

/// Where the lake is and which commit of it to read.
#[derive(Debug, Clone)]
pub struct LakeArg {
    pub root: String,
    pub as_of: Option<String>,
    pub cluster: Option<String>,
}

impl LakeArg {
    /// The lake, pinned to `--as-of` when given; it must exist.
    pub async fn open(&self) -> anyhow::Result<crate::lake::Lake> {
        self.require_cluster()?;
        let lake = match &self.as_of {
            Some(at) => crate::lake::Lake::open_as_of(&self.root, at).await?,
            None => crate::lake::Lake::open_existing(&self.root)?,
        };
        Ok(lake.with_cluster(self.cluster.clone()))
    }

    /// `--cluster` needs the cluster feature: said before the lake is looked at.
    fn require_cluster(&self) -> anyhow::Result<()> {
        if self.cluster.is_some() {
            crate::sinks::Sink::Cluster.require("--cluster")?;
        }
        Ok(())
    }

    /// The lake, created where it does not exist yet (the commands that
    /// bring inputs in: ingest, build).
    pub async fn open_or_create(&self) -> anyhow::Result<crate::lake::Lake> {
        self.require_cluster()?;
        match &self.as_of {
            Some(_) => self.open().await,
            None => Ok(crate::lake::Lake::open(&self.root)?.with_cluster(self.cluster.clone())),
        }
    }
}

/// A TOML config read from `path`, or the embedded default; errors name the file.
pub fn load_config<T>(
    path: Option<&std::path::PathBuf>,
    default: fn() -> T,
    parse: fn(&str) -> Result<T, String>,
) -> anyhow::Result<T> {
    let file = path
        .map(|p| {
            std::fs::read_to_string(p)
                .map(|text| (p.display().to_string(), text))
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))
        })
        .transpose()?;
    crate::job::parse_config(file, default, parse)
}
