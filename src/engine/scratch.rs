//! Tables kept as Parquet in a scratch folder instead of in memory. A
//! session given a folder ([`keep_tables_in`]) writes the rows of each of its
//! `CREATE TABLE`s there and reads them back from the files, and so do the
//! sessions made from it after: a step that builds large intermediate
//! tables (`select`'s candidates and products) then holds none of them on
//! its heap.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::{Field, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::config::TableParquetOptions;
use datafusion::dataframe::{DataFrame, DataFrameWriteOptions};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::prelude::{col, lit, SessionContext};
use futures::StreamExt;
use parquet::arrow::AsyncArrowWriter;
use parquet::file::properties::{WriterProperties, WriterPropertiesBuilder};

/// The folder a session keeps its tables in; each table gets a folder of
/// its own, numbered (sessions that share the scratch may each create a
/// table of the same name).
#[derive(Debug)]
pub struct ScratchTables {
    dir: PathBuf,
    next: AtomicUsize,
}

impl ScratchTables {
    /// A new, empty folder under the scratch for a table called `name`.
    pub async fn folder(&self, name: &str) -> Result<PathBuf> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let folder = self.dir.join(format!("{n}-{name}"));
        tokio::fs::create_dir_all(&folder).await?;
        Ok(folder)
    }
}

/// Keep the tables that `ctx`, and the sessions made from its settings
/// after this call, create as Parquet files under `dir`.
pub fn keep_tables_in(ctx: &SessionContext, dir: &Path) {
    let scratch = ScratchTables {
        dir: dir.to_path_buf(),
        next: AtomicUsize::new(0),
    };
    let state = ctx.state_ref();
    let mut state = state.write();
    state.config_mut().set_extension(Arc::new(scratch));
}

/// The write buffer of each scratch file being written. DataFusion's default
/// (10 MiB) is sized for object-store upload parts; a scratch file goes to
/// local disk, and with a few files open per table the default buffers
/// were a large share of a step's heap (bench/README.md).
const WRITE_BUFFER_BYTES: usize = 256 << 10;

/// Where `ctx` keeps its tables, if it was given a folder.
pub fn scratch_of(ctx: &SessionContext) -> Option<Arc<ScratchTables>> {
    ctx.state().config().get_extension::<ScratchTables>()
}

/// How scratch tables are written: LZ4, row groups of 64k rows, no
/// dictionaries, and one writer per file (a parallel writer buffers every
/// column of a row group per thread). Their columns are mostly ids, each
/// value distinct: a dictionary encoder interned every one of them before
/// falling back, and with it the compressed dictionary page. A zstd codec
/// holds a compression and a decompression context per column of each open
/// file; LZ4 keeps none, and these files live minutes (bench/README.md).
pub fn parquet_options() -> TableParquetOptions {
    let mut options = TableParquetOptions::default();
    options.global.max_row_group_size = 64 * 1024;
    options.global.dictionary_enabled = Some(false);
    options.global.allow_single_file_parallelism = false;
    options.global.compression = Some("lz4_raw".into());
    options
}

/// Write the rows of `frame` into a new folder of the scratch for `name`,
/// and return a table over them.
pub async fn store(
    scratch: &ScratchTables,
    name: &str,
    frame: DataFrame,
) -> Result<Arc<dyn TableProvider>> {
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let folder = scratch.folder(name).await?;
    write(frame, &folder).await?;
    table_over(&[folder], &schema)
}

/// `frame`, written through [`WRITE_BUFFER_BYTES`] buffers whatever its
/// session's setting (a split may be written from any step's session).
fn small_buffers(frame: DataFrame) -> DataFrame {
    let (mut state, plan) = frame.into_parts();
    state
        .config_mut()
        .options_mut()
        .execution
        .objectstore_writer_buffer_size = WRITE_BUFFER_BYTES;
    DataFrame::new(state, plan)
}

/// Write the rows of `frame` as Parquet files into `folder`.
pub async fn write(frame: DataFrame, folder: &Path) -> Result<()> {
    small_buffers(frame)
        .write_parquet(
            &format!("{}/", folder.display()),
            DataFrameWriteOptions::new(),
            Some(parquet_options()),
        )
        .await?;
    Ok(())
}

/// Most files a split ([`write_parts`]) writes at once. Every file being
/// written holds its row group until it is full, so a split into more parts
/// than this writes this many files at a time, each holding several parts,
/// and a part is read from its files by its hash.
const MOST_PART_FILES: usize = 32;

/// Rows held in row groups being filled, over every file of a split: each
/// file's row groups are a share of this, so a split's memory (once
/// `select`'s peak) stays put however many files it writes. The files have
/// no statistics: a file is read whole.
const PART_BUFFERED_ROWS: usize = 64 * 1024;

/// Row groups a split's file takes before it is closed and the next file
/// of its part begins. A Parquet writer keeps the metadata of every row
/// group it wrote until it closes: when one file took all of its part's
/// rows, that metadata grew with the input.
const ROW_GROUPS_PER_FILE: usize = 32;

/// The column a split computes each row's file into (not written).
const FILE_COLUMN: &str = "__split_file";

/// A table written into a scratch folder split into parts by
/// `hash_part(traj_id, parts)`, in one pass over its input.
#[derive(Debug, Clone)]
pub struct SplitTable {
    folder: PathBuf,
    schema: SchemaRef,
    parts: usize,
    files: usize,
}

/// Write the rows of `table` in `session` into `folder`, split into at
/// least `parts` parts: a folder `part=N` for each of at most
/// [`MOST_PART_FILES`] files that has rows. With more parts than files, the
/// parts are a multiple of the files, so that each part lies in one file.
pub async fn write_parts(
    session: &SessionContext,
    table: &str,
    parts: usize,
    folder: &Path,
) -> Result<SplitTable> {
    let files = parts.clamp(1, MOST_PART_FILES);
    let group_rows = (PART_BUFFERED_ROWS / files).min(16 * 1024);
    split_in_groups(session, table, parts, folder, group_rows).await
}

/// [`write_parts`], in row groups of `group_rows` rows.
async fn split_in_groups(
    session: &SessionContext,
    table: &str,
    parts: usize,
    folder: &Path,
    group_rows: usize,
) -> Result<SplitTable> {
    let files = parts.clamp(1, MOST_PART_FILES);
    let parts = parts.max(1).div_ceil(files) * files;
    let frame = session.table(table).await?;
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let file = session
        .udf("hash_part")?
        .call(vec![col("traj_id"), lit(files as i64)]);
    let mut options = parquet_options();
    options.global.max_row_group_size = group_rows;
    options.global.statistics_enabled = Some("none".into());
    // The Arrow writer stores the schema itself.
    options.global.skip_arrow_metadata = true;
    let mut writers = PartWriters {
        folder: folder.to_path_buf(),
        properties: WriterPropertiesBuilder::try_from(&options)?.build(),
        rows_per_file: group_rows * ROW_GROUPS_PER_FILE,
        open: (0..files).map(|_| None).collect(),
        written: vec![0; files],
    };
    let mut rows = frame
        .with_column(FILE_COLUMN, file)?
        .execute_stream()
        .await?;
    while let Some(batch) = rows.next().await {
        writers.write(batch?).await?;
    }
    writers.close().await?;
    Ok(SplitTable {
        folder: folder.to_path_buf(),
        schema,
        parts,
        files,
    })
}

/// A new file for file index `file`, in its folder `part=N`, named by
/// the count of files it had before (`written`, which this counts up).
async fn create(
    folder: &Path,
    file: usize,
    written: &mut usize,
    schema: SchemaRef,
    properties: &WriterProperties,
) -> Result<AsyncArrowWriter<tokio::fs::File>> {
    let folder = folder.join(format!("part={file}"));
    tokio::fs::create_dir_all(&folder).await?;
    let out = tokio::fs::File::create(folder.join(format!("{written}.parquet"))).await?;
    *written += 1;
    Ok(AsyncArrowWriter::try_new(
        out,
        schema,
        Some(properties.clone()),
    )?)
}

/// The files of a split being written: one open per file index at most,
/// each closed after [`ROW_GROUPS_PER_FILE`] row groups.
struct PartWriters {
    folder: PathBuf,
    properties: WriterProperties,
    rows_per_file: usize,
    /// Per file index: its open file and the rows in it.
    open: Vec<Option<(AsyncArrowWriter<tokio::fs::File>, usize)>>,
    /// Per file index: the files it closed or opened.
    written: Vec<usize>,
}

impl PartWriters {
    /// Write each row of `batch` to the file its [`FILE_COLUMN`] names.
    async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        let column = batch.schema().index_of(FILE_COLUMN)?;
        let mut rows = batch;
        let file_of = rows.remove_column(column);
        let file_of = file_of.as_primitive::<Int64Type>();
        let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); self.open.len()];
        for (row, file) in file_of.iter().enumerate() {
            let file = file.unwrap_or(0).clamp(0, self.open.len() as i64 - 1) as usize;
            rows_of[file].push(row as u32);
        }
        for (file, indices) in rows_of.into_iter().enumerate() {
            if indices.is_empty() {
                continue;
            }
            let taken = take_record_batch(&rows, &UInt32Array::from(indices))?;
            let (writer, count) = match &mut self.open[file] {
                Some(open) => open,
                empty => empty.insert((
                    create(
                        &self.folder,
                        file,
                        &mut self.written[file],
                        rows.schema(),
                        &self.properties,
                    )
                    .await?,
                    0,
                )),
            };
            writer.write(&taken).await?;
            *count += taken.num_rows();
            if *count >= self.rows_per_file {
                if let Some((writer, _)) = self.open[file].take() {
                    writer.close().await?;
                }
            }
        }
        Ok(())
    }

    /// Close every file still open.
    async fn close(self) -> Result<()> {
        for (writer, _) in self.open.into_iter().flatten() {
            writer.close().await?;
        }
        Ok(())
    }
}

impl SplitTable {
    /// How many parts the table was split into.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// A table over the rows of part `part` (none where it got none), in
    /// `session`: its file, filtered by hash where the file holds several parts.
    pub async fn part(
        &self,
        session: &SessionContext,
        part: usize,
    ) -> Result<Arc<dyn TableProvider>> {
        let folder = self.folder.join(format!("part={}", part % self.files));
        tokio::fs::create_dir_all(&folder).await?;
        let file = table_over(&[folder], &self.schema)?;
        if self.files == self.parts {
            return Ok(file);
        }
        let in_part = session
            .udf("hash_part")?
            .call(vec![col("traj_id"), lit(self.parts as i64)])
            .eq(lit(part as i64));
        Ok(session.read_table(file)?.filter(in_part)?.into_view())
    }
}

/// A table over the Parquet files in `folders` (a folder without files adds
/// no rows), under `schema` with every field nullable, so that files written
/// from several sessions fit it.
pub fn table_over(folders: &[PathBuf], schema: &Schema) -> Result<Arc<dyn TableProvider>> {
    let urls = folders
        .iter()
        .map(|f| ListingTableUrl::parse(format!("{}/", f.display())))
        .collect::<Result<Vec<_>>>()?;
    // Plain strings as written: the table's schema is the one given.
    let format = ParquetFormat::new().with_force_view_types(false);
    let options = ListingOptions::new(Arc::new(format)).with_file_extension(".parquet");
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(options)
        .with_schema(nullable(schema));
    Ok(Arc::new(ListingTable::try_new(config)?))
}

/// `schema` with every field nullable.
pub fn nullable(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::{i64s, strings};
    use crate::engine::{run_sql, sub_session};

    /// The table folders under `dir`, each with its count of Parquet files.
    fn folders(dir: &Path) -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let files = std::fs::read_dir(&path)
                    .unwrap()
                    .filter(|f| f.as_ref().unwrap().path().extension() == Some("parquet".as_ref()))
                    .count();
                (
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    files,
                )
            })
            .collect();
        out.sort();
        out
    }

    #[tokio::test]
    async fn created_tables_are_kept_as_parquet_in_the_scratch_folder() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = SessionContext::new();
        keep_tables_in(&ctx, dir.path());
        let create = "CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'é漢')) AS v(n, s)";
        run_sql(&ctx, create, "t").await.unwrap();
        // A session made from its settings keeps its own table of that name
        // in a folder of its own.
        let sub = sub_session(&ctx);
        run_sql(&sub, "CREATE TABLE t AS SELECT 3 AS n", "t")
            .await
            .unwrap();
        let kept = folders(dir.path());
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(
            kept.iter()
                .all(|(name, files)| name.ends_with("-t") && *files > 0),
            "{kept:?}"
        );

        let rows = run_sql(&ctx, "SELECT n, s FROM t ORDER BY n", "t")
            .await
            .unwrap();
        assert_eq!(i64s(&rows, "n"), vec![Some(1), Some(2)]);
        assert_eq!(
            strings(&rows, "s"),
            vec![Some("a".into()), Some("é漢".into())]
        );
        let rows = run_sql(&sub, "SELECT n FROM t", "t").await.unwrap();
        assert_eq!(i64s(&rows, "n"), vec![Some(3)]);
        // Creating a table that exists fails, as in memory; OR REPLACE replaces it.
        assert!(run_sql(&ctx, "CREATE TABLE t AS SELECT 4 AS n", "t")
            .await
            .is_err());
        run_sql(&ctx, "CREATE OR REPLACE TABLE t AS SELECT 4 AS n", "t")
            .await
            .unwrap();
        let rows = run_sql(&ctx, "SELECT n FROM t", "t").await.unwrap();
        assert_eq!(i64s(&rows, "n"), vec![Some(4)]);
    }

    #[tokio::test]
    async fn without_a_scratch_folder_tables_stay_in_memory() {
        let ctx = SessionContext::new();
        assert!(scratch_of(&ctx).is_none());
        run_sql(&ctx, "CREATE TABLE t AS SELECT 1 AS n", "t")
            .await
            .unwrap();
        let table = ctx.table_provider("t").await.unwrap();
        assert!(table.is::<datafusion::datasource::MemTable>());
    }

    #[tokio::test]
    async fn a_split_gives_each_row_to_its_part_once_in_at_most_the_most_files() {
        let dir = tempfile::tempdir().unwrap();
        // Batches of 50 rows: a file closes after the batch that fills it.
        let ctx = SessionContext::new_with_config(
            datafusion::prelude::SessionConfig::new().with_batch_size(50),
        );
        crate::udf::register_all(&ctx);
        let runs =
            "CREATE TABLE runs AS SELECT 'mini_coder/run-' || CAST(value AS VARCHAR) AS traj_id, \
                    value AS n FROM generate_series(1, 3000)";
        run_sql(&ctx, runs, "runs").await.unwrap();
        let hash_part = ctx.udf("hash_part").unwrap();
        // Row groups of 2 rows: a file closes after 64 rows, so each part
        // of the first split takes several files.
        for (asked, parts, group_rows) in [
            (5, 5, 2),
            (MOST_PART_FILES + 8, 2 * MOST_PART_FILES, 16 * 1024),
        ] {
            let folder = dir.path().join(format!("split-{asked}"));
            let split = split_in_groups(&ctx, "runs", asked, &folder, group_rows)
                .await
                .unwrap();
            assert_eq!(split.parts(), parts, "asked for {asked}");
            let folders = std::fs::read_dir(&folder).unwrap().count();
            assert!(folders <= MOST_PART_FILES.min(parts), "{folders} folders");
            let most_files = std::fs::read_dir(&folder)
                .unwrap()
                .map(|part| std::fs::read_dir(part.unwrap().path()).unwrap().count())
                .max();
            let most_rows = group_rows * ROW_GROUPS_PER_FILE;
            if group_rows == 2 {
                // About 600 rows a part in files of about 64.
                assert!(most_files >= Some(5), "{most_files:?} files in a part");
            } else {
                assert_eq!(most_files, Some(1), "{most_rows} rows fit a file");
            }
            let mut seen = Vec::new();
            for part in 0..parts {
                let rows = ctx
                    .read_table(split.part(&ctx, part).await.unwrap())
                    .unwrap()
                    .select(vec![
                        col("n"),
                        hash_part
                            .call(vec![col("traj_id"), lit(parts as i64)])
                            .alias("part"),
                    ])
                    .unwrap()
                    .collect()
                    .await
                    .unwrap();
                let of_part = i64s(&rows, "part");
                assert!(
                    of_part.iter().all(|p| *p == Some(part as i64)),
                    "part {part}"
                );
                seen.extend(i64s(&rows, "n").into_iter().flatten());
            }
            seen.sort_unstable();
            assert_eq!(seen, (1..=3000).collect::<Vec<i64>>(), "{parts} parts");
        }
    }
}
