//! A lake table at its pinned Delta version as a plain list of Parquet files.
//!
//! A Ballista scheduler plans a query without reading any Delta log: the
//! client resolves the version it pinned to its files (paths, sizes and
//! partition values) and ships that list inside the plan; the scan it plans
//! is an ordinary Parquet scan that every executor already knows how to run.

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch, RecordBatchOptions};
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{DFSchema, ScalarValue, Statistics};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::helpers::expr_applicable_for_cols;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::datasource::{TableProvider, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::DeltaTable;
use object_store::path::Path as StorePath;
use serde::{Deserialize, Serialize};
use url::Url;

/// One data file of the pinned version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinnedFile {
    /// The file's path inside its object store.
    pub path: String,
    pub size: u64,
    /// Rows, from the Delta log's statistics (for the planner's join choices).
    pub rows: Option<u64>,
    /// One value per partition column, in `partition_cols` order.
    pub partition: Vec<Option<String>>,
    /// In a table sorted in sequence, the file's first and last value of
    /// the sort column, as text: the planner checks from them that the
    /// files of the one partition follow one another, and otherwise sorts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[String; 2]>,
}

/// What travels with a plan: the store, the partition columns and the files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinnedFiles {
    /// The object store's URL (`file:///`, `s3://bucket`).
    pub store: String,
    pub partition_cols: Vec<String>,
    pub files: Vec<PinnedFile>,
    /// A column each file is sorted by, ascending, as its writer wrote it
    /// ([`PinnedTable::sorted_by`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sorted_by: Option<String>,
    /// The files, in this order, are one ascending sequence of `sorted_by`
    /// (each file's values after the last of the file before it): they are
    /// scanned in one partition, file after file, with nothing to merge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_sequence: bool,
}

/// A table provider over [`PinnedFiles`], with the schema the lake's own
/// Delta provider gives the same version (so plans and results match),
/// except that partition columns are plain values (string views where the
/// table's strings are views), not dictionaries: DataFusion groups
/// dictionaries row by row, plain strings column-wise.
/// Filters on partition columns alone prune files before the scan (and are
/// then fully applied: no filter runs above the scan, and a count over a
/// partition comes from its files' row counts); the others reach the Parquet
/// scan through DataFusion's physical pushdown.
#[derive(Debug)]
pub struct PinnedTable {
    schema: SchemaRef,
    files: PinnedFiles,
}

impl PinnedTable {
    /// The version `table` was loaded at, as files under `table_url`, with `schema`.
    pub fn from_delta(
        table: &DeltaTable,
        table_url: &Url,
        schema: SchemaRef,
    ) -> Result<PinnedTable> {
        let delta = |e: deltalake::DeltaTableError| DataFusionError::External(Box::new(e));
        let snapshot = table.snapshot().map_err(delta)?;
        let partition_cols = snapshot.metadata().partition_columns().to_vec();
        let (store, prefix) = store_and_prefix(table_url)?;
        let mut files: Vec<PinnedFile> = snapshot
            .log_data()
            .iter()
            .map(|f| {
                let values = f.partition_values_map();
                let rel = f.object_store_path();
                let path: StorePath = prefix.parts().chain(rel.parts()).collect();
                PinnedFile {
                    path: path.to_string(),
                    size: f.size() as u64,
                    rows: f.num_records().map(|n| n as u64),
                    partition: partition_cols
                        .iter()
                        .map(|c| values.get(c).cloned().flatten())
                        .collect(),
                    range: None,
                }
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        PinnedTable::new(
            schema,
            PinnedFiles {
                store,
                partition_cols,
                files,
                sorted_by: None,
                in_sequence: false,
            },
        )
    }

    /// Check that every partition column is in `schema`; dictionary-typed
    /// partition columns take their value type.
    pub fn new(schema: SchemaRef, files: PinnedFiles) -> Result<PinnedTable> {
        for c in &files.partition_cols {
            schema.field_with_name(c)?;
        }
        // Where the table's strings are views, a partition column's are too:
        // a view of a short value holds it inline, and grouping by it does
        // not copy the value into every row.
        let views = schema
            .fields()
            .iter()
            .any(|f| f.data_type() == &DataType::Utf8View);
        let fields: Vec<FieldRef> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Dictionary(_, value) if files.partition_cols.contains(f.name()) => {
                    let value = match value.as_ref() {
                        DataType::Utf8 if views => DataType::Utf8View,
                        other => other.clone(),
                    };
                    Arc::new(f.as_ref().clone().with_data_type(value))
                }
                _ => Arc::clone(f),
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        Ok(PinnedTable { schema, files })
    }

    /// The table, each of whose files its writer wrote sorted by `column`
    /// (ascending; nulls, if any, last): every file is scanned in
    /// partitions of its own (the whole file, or contiguous ranges of it)
    /// that declare that order, so a query that wants it merges the files
    /// instead of sorting their rows. The caller answers for the order;
    /// nothing here reads the files to check it (see
    /// `engine::register_sorted`).
    pub fn sorted_by(mut self, column: &str) -> Result<PinnedTable> {
        if self.is_partition(column) {
            return Err(DataFusionError::Plan(format!(
                "{column} is a partition column: a file holds one value of it"
            )));
        }
        self.schema.field_with_name(column)?;
        self.files.sorted_by = Some(column.to_string());
        Ok(self)
    }

    /// The table, whose files, in their order, its writers wrote as one
    /// ascending sequence of `column`: they are scanned in one partition,
    /// file after file, declaring that order (a query that wants it reads
    /// the rows as they come). The caller answers for the order within
    /// each file, as for [`PinnedTable::sorted_by`], and gives each file's
    /// `range`, from which the planner checks the order across them.
    pub fn sorted_in_sequence(self, column: &str) -> Result<PinnedTable> {
        let mut table = self.sorted_by(column)?;
        table.files.in_sequence = true;
        Ok(table)
    }

    pub fn files(&self) -> &PinnedFiles {
        &self.files
    }

    fn is_partition(&self, name: &str) -> bool {
        self.files.partition_cols.iter().any(|c| c == name)
    }

    /// The data columns, then the partition columns: the order a file scan yields.
    fn scan_fields(&self) -> Result<(Vec<FieldRef>, Vec<FieldRef>)> {
        let data = self
            .schema
            .fields()
            .iter()
            .filter(|f| !self.is_partition(f.name()))
            .cloned()
            .collect();
        let parts = self
            .files
            .partition_cols
            .iter()
            .map(|c| Ok(Arc::new(self.schema.field_with_name(c)?.clone())))
            .collect::<Result<Vec<_>>>()?;
        Ok((data, parts))
    }

    /// The row count of `files` when every file's is known (exact: from the
    /// log), and their size on storage as an estimate of their bytes: the
    /// planner puts the smaller side of a join on its build side.
    fn row_stats<'a>(
        schema: &Schema,
        files: impl Iterator<Item = &'a PinnedFile> + Clone,
    ) -> Statistics {
        let mut stats = Statistics::new_unknown(schema);
        let bytes: u64 = files.clone().map(|f| f.size).sum();
        stats.total_byte_size = Precision::Inexact(bytes as usize);
        let rows: Option<u64> = files.map(|f| f.rows).sum();
        if let Some(n) = rows {
            stats.num_rows = Precision::Exact(n as usize);
        }
        stats
    }

    /// Whether `filter` can prune files: it reads partition columns, and
    /// nothing else a file's partition values cannot answer.
    fn prunes_files(&self, filter: &Expr) -> bool {
        let cols: Vec<&str> = self
            .files
            .partition_cols
            .iter()
            .map(String::as_str)
            .collect();
        let unanswerable = filter
            .exists(|e| {
                Ok(matches!(
                    e,
                    Expr::Exists(_)
                        | Expr::InSubquery(_)
                        | Expr::ScalarSubquery(_)
                        | Expr::ScalarVariable(..)
                        | Expr::OuterReferenceColumn(..)
                ))
            })
            .unwrap_or(true);
        !unanswerable && !filter.column_refs().is_empty() && expr_applicable_for_cols(&cols, filter)
    }

    /// The files whose partition values pass every filter of `filters` that
    /// [prunes files](Self::prunes_files) (the rest are left to the scan).
    fn pruned_files(&self, state: &dyn Session, filters: &[Expr]) -> Result<Vec<&PinnedFile>> {
        let on_partitions = filters.iter().filter(|f| self.prunes_files(f)).cloned();
        let predicate = match conjunction(on_partitions) {
            Some(p) if !self.files.files.is_empty() => p,
            _ => return Ok(self.files.files.iter().collect()),
        };
        let (_, parts) = self.scan_fields()?;
        let part_schema = Arc::new(Schema::new(parts.clone()));
        let columns = parts
            .iter()
            .enumerate()
            .map(|(i, field)| {
                let values = self
                    .files
                    .files
                    .iter()
                    .map(|f| partition_value(field, &f.partition[i]));
                ScalarValue::iter_to_array(values.collect::<Result<Vec<_>>>()?)
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = RecordBatchOptions::new().with_row_count(Some(self.files.files.len()));
        let batch = RecordBatch::try_new_with_options(Arc::clone(&part_schema), columns, &rows)?;
        let df_schema = DFSchema::try_from(part_schema)?;
        let expr = state.create_physical_expr(predicate, &df_schema)?;
        let keep = expr.evaluate(&batch)?.into_array(batch.num_rows())?;
        let keep = keep.as_boolean();
        Ok(self
            .files
            .files
            .iter()
            .enumerate()
            .filter(|(i, _)| !keep.is_null(*i) && keep.value(*i))
            .map(|(_, f)| f)
            .collect())
    }

    fn partitioned_file(
        &self,
        file: &PinnedFile,
        data: &[FieldRef],
        parts: &[FieldRef],
    ) -> Result<PartitionedFile> {
        let values = parts
            .iter()
            .zip(&file.partition)
            .map(|(field, value)| partition_value(field, value))
            .collect::<Result<Vec<_>>>()?;
        // The path is already in object-store form: parse it, do not re-encode it.
        let location =
            StorePath::parse(&file.path).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let meta = object_store::ObjectMeta {
            location,
            last_modified: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            size: file.size,
            e_tag: None,
            version: None,
        };
        let file_rows = PartitionedFile::new_from_meta(meta).with_partition_values(values);
        Ok(match self.range_statistics(file, data)? {
            Some(stats) => file_rows.with_statistics(Arc::new(stats)),
            None => file_rows,
        })
    }

    /// The statistics of a file of a table sorted in sequence: the least
    /// and greatest value of its sort column (nothing else is known).
    fn range_statistics(&self, file: &PinnedFile, data: &[FieldRef]) -> Result<Option<Statistics>> {
        let (Some(column), Some([first, last])) = (&self.files.sorted_by, &file.range) else {
            return Ok(None);
        };
        let Some(index) = data.iter().position(|f| f.name() == column) else {
            return Ok(None);
        };
        let data_type = data[index].data_type();
        let mut stats = Statistics::new_unknown(&Schema::new(data.to_vec()));
        let column = &mut stats.column_statistics[index];
        column.min_value =
            Precision::Exact(ScalarValue::try_from_string(first.clone(), data_type)?);
        column.max_value = Precision::Exact(ScalarValue::try_from_string(last.clone(), data_type)?);
        Ok(Some(stats))
    }
}

/// A file's value of partition column `field` (as the Delta log writes it:
/// text, or null).
fn partition_value(field: &FieldRef, value: &Option<String>) -> Result<ScalarValue> {
    match value {
        Some(v) => ScalarValue::try_from_string(v.clone(), field.data_type()),
        None => ScalarValue::try_from(field.data_type()),
    }
}

/// `schema` with its string and binary views as plain strings and binaries,
/// for tables scanned on a cluster or by a pipeline step (see
/// `engine::Strings`). Ballista ships every intermediate
/// result as Arrow IPC, which writes a view column's data buffers whole: a
/// few rows filtered or joined out of a scan carry the scan's pages with
/// them, so a shuffle or a result weighs gigabytes. Plain arrays are copied
/// by filters and joins and ship only their rows.
pub fn without_views(schema: &Schema) -> SchemaRef {
    fn plain(field: &FieldRef) -> FieldRef {
        let ty = match field.data_type() {
            DataType::Utf8View => DataType::Utf8,
            DataType::BinaryView => DataType::Binary,
            DataType::List(item) => DataType::List(plain(item)),
            DataType::LargeList(item) => DataType::LargeList(plain(item)),
            DataType::FixedSizeList(item, n) => DataType::FixedSizeList(plain(item), *n),
            DataType::Struct(fields) => DataType::Struct(fields.iter().map(plain).collect()),
            DataType::Map(entries, sorted) => DataType::Map(plain(entries), *sorted),
            other => other.clone(),
        };
        Arc::new(field.as_ref().clone().with_data_type(ty))
    }
    Arc::new(Schema::new_with_metadata(
        schema.fields().iter().map(plain).collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// The object store URL of `url` and the path of `url` inside that store.
fn store_and_prefix(url: &Url) -> Result<(String, StorePath)> {
    let store = match url.scheme() {
        "file" => "file:///".to_string(),
        scheme => format!("{scheme}://{}", url.authority()),
    };
    let prefix =
        StorePath::from_url_path(url.path()).map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok((store, prefix))
}

#[async_trait]
impl TableProvider for PinnedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        Some(Self::row_stats(&self.schema, self.files.files.iter()))
    }

    /// Exact for filters that prune files.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match self.prunes_files(f) {
                true => TableProviderFilterPushDown::Exact,
                false => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (data, parts) = self.scan_fields()?;
        let natural: Vec<&str> = data
            .iter()
            .chain(&parts)
            .map(|f| f.name().as_str())
            .collect();
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let indices = wanted
            .iter()
            .map(|&i| {
                let name = self.schema.field(i).name();
                natural
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| DataFusionError::Internal(format!("no column {name}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let kept = self.pruned_files(state, filters)?;
        if kept.is_empty() {
            let projected = Arc::new(self.schema.project(&wanted)?);
            return Ok(Arc::new(EmptyExec::new(projected)));
        }
        let full_schema = Schema::new(data.iter().chain(&parts).cloned().collect::<Vec<_>>());
        let stats = Self::row_stats(&full_schema, kept.iter().copied());
        // A sorted table's files are read one per partition, each in its
        // order, or, in sequence, all in one partition in theirs.
        let groups = match self.files.sorted_by {
            Some(_) if self.files.in_sequence => 1,
            Some(_) => kept.len(),
            None => state.config().target_partitions().clamp(1, kept.len()),
        };
        let mut files = vec![Vec::new(); groups];
        for (i, f) in kept.into_iter().enumerate() {
            files[i % groups].push(self.partitioned_file(f, &data, &parts)?);
        }
        let ordering = match &self.files.sorted_by {
            Some(column) => {
                let ascending = SortOptions {
                    descending: false,
                    nulls_first: false,
                };
                let column = Arc::new(Column::new_with_schema(column, &full_schema)?);
                LexOrdering::new([PhysicalSortExpr::new(column, ascending)])
                    .into_iter()
                    .collect()
            }
            None => Vec::new(),
        };
        let format = ParquetFormat::default().with_options(state.table_options().parquet.clone());
        let table_schema = TableSchema::builder(Arc::new(Schema::new(data)))
            .with_table_partition_cols(parts)
            .build();
        let config = FileScanConfigBuilder::new(
            ObjectStoreUrl::parse(&self.files.store)?,
            format.file_source(table_schema),
        )
        .with_file_groups(files.into_iter().map(FileGroup::new).collect())
        .with_statistics(stats)
        .with_output_ordering(ordering)
        .with_projection_indices(Some(indices))?
        .with_limit(limit)
        .build();
        format.create_physical_plan(state, config).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;
    use datafusion::prelude::{col, lit, SessionContext};

    /// A table partitioned by `source` (dictionary-typed, as the Delta
    /// provider gives it) with one file per `(path, source)`.
    fn partitioned(files: &[(&str, Option<&str>)]) -> PinnedTable {
        let schema = Schema::new(vec![
            Field::new("t", DataType::Int32, false),
            Field::new(
                "source",
                DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8)),
                true,
            ),
        ]);
        let files = files
            .iter()
            .map(|(path, source)| PinnedFile {
                path: path.to_string(),
                size: 1,
                rows: Some(1),
                partition: vec![source.map(str::to_string)],
                range: None,
            })
            .collect();
        let files = PinnedFiles {
            store: "file:///".into(),
            partition_cols: vec!["source".into()],
            files,
            sorted_by: None,
            in_sequence: false,
        };
        PinnedTable::new(Arc::new(schema), files).unwrap()
    }

    #[test]
    fn a_partition_column_reads_as_views_where_the_table_does() {
        let dictionary = DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8));
        let files = partitioned(&[("a", Some("albedo"))]).files;
        let table = |text: DataType| {
            let schema = Schema::new(vec![
                Field::new("kind", text, true),
                Field::new("source", dictionary.clone(), true),
            ]);
            let table = PinnedTable::new(Arc::new(schema), files.clone()).unwrap();
            table
                .schema()
                .field_with_name("source")
                .unwrap()
                .data_type()
                .clone()
        };
        assert_eq!(table(DataType::Utf8View), DataType::Utf8View);
        assert_eq!(table(DataType::Utf8), DataType::Utf8);
    }

    #[test]
    fn partition_filters_prune_files_with_sql_semantics() {
        let state = SessionContext::new().state();
        let table = partitioned(&[("a", Some("albedo")), ("b", Some("mswea")), ("c", None)]);
        let source = table.schema().field_with_name("source").unwrap().clone();
        assert_eq!(source.data_type(), &DataType::Utf8);
        let kept = |filters: &[Expr]| -> Vec<String> {
            let files = table.pruned_files(&state, filters).unwrap();
            files.iter().map(|f| f.path.clone()).collect()
        };
        assert_eq!(kept(&[col("source").eq(lit("albedo"))]), ["a"]);
        assert_eq!(kept(&[col("source").not_eq(lit("albedo"))]), ["b"]);
        assert_eq!(kept(&[col("source").is_null()]), ["c"]);
        // A filter that also reads a data column, or no column, prunes
        // nothing and is left to run above the scan.
        let mixed = col("source").eq(lit("albedo")).or(col("t").gt(lit(3)));
        assert_eq!(kept(&[mixed.clone(), lit(false)]), ["a", "b", "c"]);
        let on_source = col("source").eq(lit("x"));
        assert_eq!(
            table
                .supports_filters_pushdown(&[&mixed, &lit(false), &on_source])
                .unwrap(),
            [
                TableProviderFilterPushDown::Unsupported,
                TableProviderFilterPushDown::Unsupported,
                TableProviderFilterPushDown::Exact
            ]
        );
        let empty = partitioned(&[]);
        assert!(empty.pruned_files(&state, &[on_source]).unwrap().is_empty());
    }

    #[test]
    fn views_become_plain_arrays_at_every_depth() {
        let item = Arc::new(Field::new("element", DataType::Utf8View, true));
        let schema = Schema::new(vec![
            Field::new("id", DataType::Utf8View, false),
            Field::new("blob", DataType::BinaryView, true),
            Field::new("tags", DataType::List(item), true),
            Field::new("t", DataType::Int32, false),
        ]);
        let plain = without_views(&schema);
        let types: Vec<String> = plain
            .fields()
            .iter()
            .map(|f| format!("{} {} {}", f.name(), f.data_type(), f.is_nullable()))
            .collect();
        assert_eq!(
            types,
            [
                "id Utf8 false",
                "blob Binary true",
                "tags List(Utf8, field: 'element') true",
                "t Int32 false"
            ]
        );
    }
}
