//! The lake's tables as a DataFusion schema that opens each table when a
//! query first names it.
//!
//! A session pins every table at the version the lake's view gives when the
//! session starts, but loads only what its statements read: a `turnlake sql`
//! over `turns` reads one Delta log, not the lake's ten. Tables a step
//! creates in the session (`CREATE TABLE`, parameter tables) live here too.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arrow::datatypes::{FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::SchemaProvider;
use datafusion::datasource::TableProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::SessionStateBuilder;

use crate::engine::pinned::PinnedTable;
use crate::lake::Lake;

/// How a session's lake tables give their string columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strings {
    /// String views: grouping and comparing read them where they were
    /// decoded (fastest for ad-hoc queries).
    Views,
    /// Plain strings: a join's build side or a buffered batch holds only its
    /// rows' bytes. A view keeps the whole page it was cut from, and a
    /// concatenation of views copies that page once per batch, so a step's
    /// joins over views can hold many times their data, and run slower
    /// (bench/README.md). Every step (`pipeline::step`), the streams of `validate` and
    /// `export` (`bounded_session`) and every cluster use these.
    Plain,
}

/// A table of the schema: a lake table not yet opened, or a provider.
#[derive(Debug, Clone)]
enum Entry {
    Pinned(u64),
    Open(Arc<dyn TableProvider>),
}

#[derive(Debug)]
pub struct LakeSchema {
    lake: Lake,
    /// The session's runtime, where opened tables register their object store.
    runtime: Arc<RuntimeEnv>,
    strings: Strings,
    tables: Mutex<BTreeMap<String, Entry>>,
}

impl LakeSchema {
    /// Every table of `versions` (name to Delta version), none opened yet.
    pub fn new(
        lake: &Lake,
        runtime: Arc<RuntimeEnv>,
        strings: Strings,
        versions: &BTreeMap<String, u64>,
    ) -> Self {
        let tables = versions
            .iter()
            .map(|(name, v)| (name.clone(), Entry::Pinned(*v)))
            .collect();
        LakeSchema {
            lake: lake.clone(),
            runtime,
            strings,
            tables: Mutex::new(tables),
        }
    }

    /// How this schema's tables give their strings.
    pub fn strings(&self) -> Strings {
        self.strings
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.tables.lock().expect("lake schema lock")
    }
}

/// Lake table `name` at `version` as the Parquet files of that version
/// ([`PinnedTable`]): a cluster's executors get the file list, not the
/// Delta log; streaming steps get scans that honour their batch size (the
/// Delta scan yields whole row groups); and every query gets plain
/// partition columns, which group column-wise.
pub async fn open(
    lake: &Lake,
    runtime: &Arc<RuntimeEnv>,
    name: &str,
    version: u64,
    strings: Strings,
) -> Result<Arc<dyn TableProvider>> {
    let external = |e: Box<dyn std::error::Error + Send + Sync>| DataFusionError::External(e);
    let table = lake
        .table_at(name, version)
        .await
        .map_err(|e| external(Box::new(e)))?;
    // The scan reads through the session's object store registry.
    let state = SessionStateBuilder::new()
        .with_runtime_env(Arc::clone(runtime))
        .build();
    table
        .update_datafusion_session(&state)
        .map_err(|e| external(Box::new(e)))?;
    let delta = table.table_provider().await?;
    // Plain strings (see `without_views`) where asked for, and always on a cluster.
    let recorded = with_later_columns(name, delta.schema());
    let schema = match (lake.cluster(), strings) {
        (None, Strings::Views) => recorded,
        _ => crate::engine::pinned::without_views(&recorded),
    };
    Ok(Arc::new(PinnedTable::from_delta(
        &table,
        &lake.table_url(name),
        schema,
    )?))
}

/// Columns added to a schema file whose null every reader takes as "not
/// recorded" (the exports check content alone, `parsed` falls back to the
/// block count): a table written before them reads them as nulls. Other
/// added columns are not filled in, so their steps can tell the user what
/// to rerun (`credit_citations.category`, say).
const READ_AS_NULL: [(&str, &[&str]); 4] = [
    ("trajectories", &["tools", "prompt_text"]),
    (
        "evals",
        &[
            "challenger_model_uri",
            "challenger_hotkey",
            "challenger_uid",
            "king_model_uri",
            "king_hotkey",
            "king_uid",
            "king_version",
        ],
    ),
    (
        "messages",
        &["tool_call_id", "recovered", "fields_sha", "extra"],
    ),
    ("turns", &["commands", "format_error", "parsed"]),
];

/// `schema` with the [`READ_AS_NULL`] columns it lacks (before the
/// partition columns), so today's queries run on an older lake unchanged.
fn with_later_columns(name: &str, schema: SchemaRef) -> SchemaRef {
    let Some((_, later)) = READ_AS_NULL.iter().find(|(table, _)| *table == name) else {
        return schema;
    };
    let Ok(file) = crate::lake::table_schema(name) else {
        return schema;
    };
    let missing: Vec<FieldRef> = file
        .schema
        .fields()
        .iter()
        .filter(|f| later.contains(&f.name().as_str()) && schema.field_with_name(f.name()).is_err())
        .cloned()
        .collect();
    if missing.is_empty() {
        return schema;
    }
    let (mut fields, partitions): (Vec<FieldRef>, Vec<FieldRef>) = schema
        .fields()
        .iter()
        .cloned()
        .partition(|f| !file.partition_by.contains(f.name()));
    fields.extend(missing);
    fields.extend(partitions);
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

#[async_trait]
impl SchemaProvider for LakeSchema {
    fn table_names(&self) -> Vec<String> {
        self.entries().keys().cloned().collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let version = match self.entries().get(name) {
            None => return Ok(None),
            Some(Entry::Open(provider)) => return Ok(Some(Arc::clone(provider))),
            Some(Entry::Pinned(version)) => *version,
        };
        let provider = open(&self.lake, &self.runtime, name, version, self.strings).await?;
        // Another statement may have replaced or dropped the table meanwhile:
        // then what is there now stands.
        let mut entries = self.entries();
        match entries.get(name) {
            Some(Entry::Pinned(v)) if *v == version => {
                entries.insert(name.to_string(), Entry::Open(Arc::clone(&provider)));
                Ok(Some(provider))
            }
            Some(Entry::Open(now)) => Ok(Some(Arc::clone(now))),
            _ => Ok(None),
        }
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        let mut entries = self.entries();
        if entries.contains_key(&name) {
            return Err(DataFusionError::Execution(format!(
                "The table {name} already exists"
            )));
        }
        entries.insert(name, Entry::Open(table));
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(match self.entries().remove(name) {
            Some(Entry::Open(provider)) => Some(provider),
            _ => None,
        })
    }

    fn table_exist(&self, name: &str) -> bool {
        self.entries().contains_key(name)
    }
}
