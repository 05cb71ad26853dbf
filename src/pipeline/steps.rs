//! Every pipeline step declared once: its name, the tables it reads (with
//! the hint given when the lake lacks one), the table whose recorded
//! provenance says when it last ran, and its SQL. The step itself
//! ([`Step::begin`](super::step::Step::begin)), `build`'s skip rule and
//! `turnlake sql -f` all read these declarations, so they cannot drift.
//! Each SQL file of the steps is declared too, with what its step registers
//! before running it, so that `sql -f FILE` runs it alone as the step would.

use std::collections::BTreeMap;

use super::provenance::Provenance;
use super::PipelineError;
use datafusion::prelude::SessionContext;

use super::select_parts::{self, PartSizes};
use super::sqlstep::run_script;
use super::{credit, mix, select};
use crate::lake::{Lake, LakeError, View};

/// A table a step reads.
#[derive(Debug)]
pub struct Input {
    pub table: &'static str,
    /// What to run when the lake lacks it.
    pub hint: &'static str,
    /// An optional input is recorded as absent; a required one stops the step.
    pub required: bool,
}

pub const fn required(table: &'static str, hint: &'static str) -> Input {
    Input {
        table,
        hint,
        required: true,
    }
}

pub const fn optional(table: &'static str, hint: &'static str) -> Input {
    Input {
        table,
        hint,
        required: false,
    }
}

/// A step as the lake records it.
#[derive(Debug)]
pub struct StepSpec {
    pub name: &'static str,
    pub inputs: &'static [Input],
    /// The output whose version's provenance is the step's last run.
    pub records: &'static str,
    /// Its SQL file, as `sql/NAME.sql`, and the text it runs (none: a step in Rust).
    pub sql: Option<(&'static str, &'static str)>,
}

const INGEST: &str = "ingest first";
const INGEST_ALBEDO: &str = "ingest Albedo eval runs first (turnlake ingest albedo PATH)";
const CREDIT_FIRST: &str = "run `turnlake credit` first";
const SELECT_FIRST: &str = "run `turnlake select` first";

pub const CREDIT: StepSpec = StepSpec {
    name: "credit",
    inputs: &[
        required("judgments", INGEST_ALBEDO),
        required("questions", INGEST_ALBEDO),
        required("trajectories", INGEST_ALBEDO),
        required("turns", INGEST_ALBEDO),
    ],
    records: "turn_credit",
    sql: Some((credit::SQL_FILE, credit::SQL)),
};

/// A lake of one's own runs alone (no Albedo eval run ever ingested) has no
/// judgments: its Albedo products are empty, its run products are not.
pub const SELECT: StepSpec = StepSpec {
    name: "select",
    inputs: &[
        required("trajectories", INGEST),
        required("turns", INGEST),
        optional("judgments", "ingest Albedo eval runs first"),
        optional("turn_credit", CREDIT_FIRST),
    ],
    records: "sft_credit",
    sql: Some((select::SQL_FILE, select::STEP_SQL)),
};

pub const MIX: StepSpec = StepSpec {
    name: "mix",
    inputs: &[
        required("sft_credit", SELECT_FIRST),
        required("escape_duel", SELECT_FIRST),
        required("escape_mini", SELECT_FIRST),
        required("finish_mini", SELECT_FIRST),
    ],
    records: "sft_mix",
    sql: Some((mix::SQL_FILE, mix::SQL)),
};

/// `build`'s validate: the mix's rows, checked in Rust.
pub const VALIDATE: StepSpec = StepSpec {
    name: "validate",
    inputs: &[required("sft_mix", "run `turnlake mix` first")],
    records: "sft_validated",
    sql: None,
};

impl StepSpec {
    /// Each input's version in `view`; an error names the first required input it lacks.
    pub fn pin(&self, view: &View) -> Result<BTreeMap<String, Option<u64>>, PipelineError> {
        self.inputs
            .iter()
            .map(|i| match view.tables.get(i.table) {
                None if i.required => Err(PipelineError::Missing(i.table, i.hint)),
                version => Ok((i.table.to_string(), version.copied())),
            })
            .collect()
    }

    /// What a run of the step over `view` with `params` records.
    pub fn provenance(
        &self,
        view: &View,
        params: serde_json::Value,
    ) -> Result<Provenance, PipelineError> {
        Ok(Provenance::new(
            self.name,
            self.pin(view)?,
            params,
            self.sql,
        ))
    }
}

/// What the step's last run recorded: the provenance of the lake commit
/// that wrote the version of its `records` table readers see now.
pub async fn last_run(lake: &Lake, spec: &StepSpec) -> Result<Option<Provenance>, LakeError> {
    let view = lake.view().await?;
    let (Some(version), Some(latest)) = (view.tables.get(spec.records), view.commit.as_ref())
    else {
        return Ok(None);
    };
    let log = lake.log()?;
    for v in log.versions().await? {
        if v > latest.version {
            break;
        }
        let c = log.read(v).await?;
        if c.tables.get(spec.records) == Some(version) {
            return Ok(Provenance::recorded(&c.params));
        }
    }
    Ok(None)
}

/// Whether running the step now with `params` would redo its last run: the
/// same input versions, parameters and SQL (`build` skips it then).
pub async fn is_current(
    lake: &Lake,
    spec: &StepSpec,
    params: serde_json::Value,
) -> Result<bool, LakeError> {
    let Ok(now) = spec.provenance(&lake.view().await?, params) else {
        // A required input is missing: the step runs, and says so.
        return Ok(false);
    };
    Ok(last_run(lake, spec)
        .await?
        .is_some_and(|last| last.same_run(&now)))
}

/// What a SQL file reads that its step registers before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// The credit config as parameter tables (sql/credit.sql).
    CreditParams,
    /// The select config, and the sides and runs as the step builds them (sql/select.sql).
    SelectParts,
    /// The select config's parameter tables, then the files (name, text)
    /// whose views this one reads, in order.
    Select {
        before: &'static [(&'static str, &'static str)],
    },
    /// The mix's quota and candidates (sql/mix.sql).
    MixCandidates,
    /// The rows a description reads (`rows_in`: all of sft_mix), with the
    /// files that come before this one.
    MixRows {
        train_turns: bool,
        report_input: bool,
    },
}

/// Which step config (`--config`) a setup reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    Credit,
    Select,
}

impl Setup {
    pub fn config(self) -> Option<ConfigKind> {
        match self {
            Setup::CreditParams => Some(ConfigKind::Credit),
            Setup::MixRows { .. } => None,
            _ => Some(ConfigKind::Select),
        }
    }
}

/// A step's SQL file that needs more than the lake's tables to run.
#[derive(Debug)]
pub struct SqlFile {
    /// As `sql/NAME.sql`.
    pub file: &'static str,
    pub setup: Setup,
}

const GATES: (&str, &str) = (select_parts::GATES_SQL_FILE, select_parts::GATES_SQL);
const CREDIT_KEEP: (&str, &str) = (
    select_parts::CREDIT_KEEP_SQL_FILE,
    select_parts::CREDIT_KEEP_SQL,
);

/// Every step SQL file that reads something its step registers. The other
/// files of `sql/` read the lake's tables only.
pub const SQL_FILES: &[SqlFile] = &[
    SqlFile {
        file: credit::SQL_FILE,
        setup: Setup::CreditParams,
    },
    SqlFile {
        file: select::SQL_FILE,
        setup: Setup::SelectParts,
    },
    SqlFile {
        file: select_parts::GATES_SQL_FILE,
        setup: Setup::Select { before: &[] },
    },
    SqlFile {
        file: select_parts::CREDIT_KEEP_SQL_FILE,
        setup: Setup::Select { before: &[GATES] },
    },
    SqlFile {
        file: select_parts::SIDES_SQL_FILE,
        setup: Setup::Select {
            before: &[GATES, CREDIT_KEEP],
        },
    },
    SqlFile {
        file: select_parts::INPUT_SQL_FILE,
        setup: Setup::Select { before: &[] },
    },
    SqlFile {
        file: select_parts::RUNS_SQL_FILE,
        setup: Setup::Select {
            before: &[(select_parts::INPUT_SQL_FILE, select_parts::INPUT_SQL)],
        },
    },
    SqlFile {
        file: mix::SQL_FILE,
        setup: Setup::MixCandidates,
    },
    SqlFile {
        file: mix::TRAIN_TURNS_SQL_FILE,
        setup: Setup::MixRows {
            train_turns: false,
            report_input: false,
        },
    },
    SqlFile {
        file: mix::REPORT_INPUT_SQL_FILE,
        setup: Setup::MixRows {
            train_turns: true,
            report_input: false,
        },
    },
    SqlFile {
        file: mix::REPORT_SQL_FILE,
        setup: Setup::MixRows {
            train_turns: true,
            report_input: true,
        },
    },
];

/// The declaration of the step file named `name` (`credit.sql`), if it needs a setup.
pub fn sql_file(name: &str) -> Option<&'static SqlFile> {
    SQL_FILES
        .iter()
        .find(|f| f.file.rsplit('/').next() == Some(name))
}

/// A step config, parsed from TOML or the embedded default.
pub enum StepConfig {
    Credit(credit::CreditConfig),
    Select(select::SelectConfig),
}

impl StepConfig {
    /// The config of `kind` from `toml` (none: the embedded default); a bad
    /// file's error says what is wrong with it.
    pub fn parse(kind: ConfigKind, toml: Option<&str>) -> Result<StepConfig, String> {
        Ok(match (kind, toml) {
            (ConfigKind::Credit, None) => {
                StepConfig::Credit(credit::CreditConfig::default_config())
            }
            (ConfigKind::Credit, Some(t)) => {
                StepConfig::Credit(credit::CreditConfig::from_toml(t)?)
            }
            (ConfigKind::Select, None) => {
                StepConfig::Select(select::SelectConfig::default_config())
            }
            (ConfigKind::Select, Some(t)) => {
                StepConfig::Select(select::SelectConfig::from_toml(t)?)
            }
        })
    }
}

/// Register in `ctx` what a file with `setup` reads, as its step does, from
/// `config` (of the setup's [`ConfigKind`]). Returns the scratch folder the
/// step's intermediate tables are kept in, if it has one (hold it while the
/// session reads them).
pub async fn prepare(
    ctx: &SessionContext,
    setup: Setup,
    config: Option<&StepConfig>,
    on_cluster: bool,
) -> Result<Option<tempfile::TempDir>, PipelineError> {
    let select = || match config {
        Some(StepConfig::Select(c)) => c.clone(),
        _ => select::SelectConfig::default_config(),
    };
    match setup {
        Setup::CreditParams => {
            let c = match config {
                Some(StepConfig::Credit(c)) => c.clone(),
                _ => credit::CreditConfig::default_config(),
            };
            credit::register_config(ctx, &c)?;
        }
        Setup::SelectParts => {
            return select::prepare_parts(ctx, &select(), PartSizes::default(), on_cluster).await;
        }
        Setup::Select { before } => {
            select::register_config(ctx, &select())?;
            for (file, sql) in before {
                run_script(ctx, file, sql).await?;
            }
        }
        Setup::MixCandidates => {
            mix::register_candidates(ctx, &select().mix).await?;
            mix::register_quota(ctx, &select().mix, None).await?;
        }
        Setup::MixRows {
            train_turns,
            report_input,
        } => {
            // Over the whole mix: the report's chunks are a hash's shares of these views.
            mix::register_rows(ctx, "sft_mix").await?;
            if train_turns {
                run_script(ctx, mix::TRAIN_TURNS_SQL_FILE, mix::TRAIN_TURNS_SQL).await?;
            }
            if report_input {
                run_script(ctx, mix::REPORT_INPUT_SQL_FILE, mix::REPORT_INPUT_SQL).await?;
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_pins_its_inputs_and_names_the_first_it_lacks() {
        let view = View {
            commit: None,
            tables: BTreeMap::from([("trajectories".into(), 2), ("turns".into(), 3)]),
        };
        let pinned = SELECT.pin(&view).unwrap();
        assert_eq!(pinned["turns"], Some(3));
        assert_eq!(pinned["judgments"], None);
        let err = CREDIT.pin(&view).unwrap_err().to_string();
        assert!(
            err.contains("judgments") && err.contains("ingest Albedo"),
            "{err}"
        );
        let p = SELECT
            .provenance(&view, serde_json::json!({"k": 1}))
            .unwrap();
        assert_eq!(p.sql.as_deref(), Some("sql/select.sql"));
        assert_eq!(
            p.sql_sha256,
            Some(crate::digest::sha256_hex(select::STEP_SQL.as_bytes()))
        );
    }
}
