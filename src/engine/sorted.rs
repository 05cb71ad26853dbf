//! Lake tables declared sorted: a query that wants the order their files
//! were written in reads the files as they are, one after another or
//! merged, instead of sorting their rows. The order is read and checked,
//! never assumed.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::kernels::cmp::lt;
use arrow::compute::{cast, concat, sort_to_indices};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::ExecutionPlanProperties;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::EngineError;
use crate::engine::pinned::{PinnedFile, PinnedFiles, PinnedTable};

/// The most files a sorted table whose files' ranges overlap may have: a
/// query merges them, and a merge reads every file at once.
const MAX_MERGED_FILES: usize = 16;

/// Register `name` in `ctx` as one table over the files of the lake
/// tables `tables` (registered in `ctx`, all of one schema), declared
/// sorted by `column`, if each file holds it in ascending order without
/// nulls. The order is checked by reading the column of each file, whole.
///
/// When the files' ranges follow one another (each file's first value not
/// below the last of the file before it, as with tables of distinct
/// `row_id` prefixes), the table reads them in one partition, in that
/// order: a query that wants the order reads its rows as they come. When
/// they overlap, each file is a partition of its own, and such a query
/// merges them (at most [`MAX_MERGED_FILES`] files).
///
/// Returns whether `name` was registered. Nothing is registered when a
/// table is not a pinned lake scan, the tables' schemas differ, or a file
/// is not in order (a writer that did not sort, a compaction that merged
/// files): the caller then reads the tables as they are, and sorts.
pub async fn register_sorted(
    ctx: &SessionContext,
    name: &str,
    tables: &[&str],
    column: &str,
) -> Result<bool, EngineError> {
    let err = |source: DataFusionError| EngineError::Register {
        table: name.to_string(),
        source: Box::new(source),
    };
    let Some((schema, files)) = files_of(ctx, tables).await.map_err(err)? else {
        return Ok(false);
    };
    let each_file = PinnedTable::new(Arc::clone(&schema), files.clone())
        .and_then(|t| t.sorted_by(column))
        .map_err(err)?;
    let mut ranges = Vec::new();
    for (file, order) in files
        .files
        .iter()
        .zip(file_orders(ctx, &each_file, column).await.map_err(err)?)
    {
        match order {
            FileOrder::Empty => {}
            FileOrder::Ascending { first, last } => {
                let range = Some([text(&first).map_err(err)?, text(&last).map_err(err)?]);
                ranges.push((
                    PinnedFile {
                        range,
                        ..file.clone()
                    },
                    first,
                    last,
                ));
            }
            FileOrder::Unordered => return Ok(false),
        }
    }
    let table = match in_sequence(ranges).map_err(err)? {
        Some(in_order) => PinnedTable::new(
            schema,
            PinnedFiles {
                files: in_order,
                ..files
            },
        )
        .and_then(|t| t.sorted_in_sequence(column))
        .map_err(err)?,
        None if files.files.len() <= MAX_MERGED_FILES => each_file,
        None => return Ok(false),
    };
    let _ = ctx.deregister_table(name);
    ctx.register_table(name, Arc::new(table)).map_err(err)?;
    Ok(true)
}

/// The schema and files of `tables`, if each is a pinned lake scan and
/// they share their schema, store and partition columns.
async fn files_of(
    ctx: &SessionContext,
    tables: &[&str],
) -> Result<Option<(SchemaRef, PinnedFiles)>> {
    let mut all: Option<(SchemaRef, PinnedFiles)> = None;
    for table in tables {
        let provider = ctx.table_provider(*table).await?;
        let Some(pinned) = provider.downcast_ref::<PinnedTable>() else {
            return Ok(None);
        };
        let files = pinned.files();
        // Whatever order the table was declared in before, it is read again.
        let unsorted = files.files.iter().map(|f| PinnedFile {
            range: None,
            ..f.clone()
        });
        match &mut all {
            None => {
                let files = PinnedFiles {
                    files: unsorted.collect(),
                    sorted_by: None,
                    in_sequence: false,
                    ..files.clone()
                };
                all = Some((provider.schema(), files));
            }
            Some((schema, all)) => {
                if *schema != provider.schema()
                    || all.store != files.store
                    || all.partition_cols != files.partition_cols
                {
                    return Ok(None);
                }
                all.files.extend(unsorted);
            }
        }
    }
    Ok(all)
}

/// The values of the sort column that one file holds, as read.
#[derive(Debug)]
enum FileOrder {
    Empty,
    /// Ascending without nulls, from `first` to `last` (one value each).
    Ascending {
        first: ArrayRef,
        last: ArrayRef,
    },
    /// Descending somewhere, or with a null.
    Unordered,
}

/// The order of `column` in each file of `table`, read through the
/// table's own scan, whose partition `i` is its file `i` (a sorted table
/// not in sequence; no optimizer has split the scan).
async fn file_orders(
    ctx: &SessionContext,
    table: &PinnedTable,
    column: &str,
) -> Result<Vec<FileOrder>> {
    let index = table.schema().index_of(column)?;
    let scan = table
        .scan(&ctx.state(), Some(&vec![index]), &[], None)
        .await?;
    let files = table.files().files.len();
    let partitions = scan.output_partitioning().partition_count();
    if partitions != files && files > 0 {
        return Err(DataFusionError::Internal(format!(
            "a sorted scan of {files} files has {partitions} partitions"
        )));
    }
    let mut orders = Vec::new();
    for file in 0..files {
        orders.push(file_order(scan.execute(file, ctx.task_ctx())?, column).await?);
    }
    Ok(orders)
}

/// How the values of `column` in `rows` are ordered.
async fn file_order(mut rows: SendableRecordBatchStream, column: &str) -> Result<FileOrder> {
    let descends = |later: &ArrayRef, earlier: &ArrayRef| -> Result<bool> {
        Ok(lt(later, earlier)?.true_count() > 0)
    };
    let mut range: Option<(ArrayRef, ArrayRef)> = None;
    while let Some(batch) = rows.next().await.transpose()? {
        let values = batch
            .column_by_name(column)
            .ok_or_else(|| DataFusionError::Plan(format!("no column {column}")))?;
        let n = values.len();
        if n == 0 {
            continue;
        }
        if values.null_count() > 0 {
            return Ok(FileOrder::Unordered);
        }
        // Each value against the one before it, the first against the last batch's last.
        if let Some((_, last)) = &range {
            if descends(&values.slice(0, 1), last)? {
                return Ok(FileOrder::Unordered);
            }
        }
        if descends(&values.slice(1, n - 1), &values.slice(0, n - 1))? {
            return Ok(FileOrder::Unordered);
        }
        let first = range.map_or_else(|| values.slice(0, 1), |(first, _)| first);
        range = Some((first, values.slice(n - 1, 1)));
    }
    Ok(match range {
        Some((first, last)) => FileOrder::Ascending { first, last },
        None => FileOrder::Empty,
    })
}

/// The one value of `value` as text, as a file's range keeps it.
fn text(value: &ArrayRef) -> Result<String> {
    let text = cast(value, &DataType::Utf8)?;
    Ok(text.as_string::<i32>().value(0).to_string())
}

/// The files, each given with its first and last value, in the order of
/// their first values, if each then starts at or after the end of the one
/// before it; `None` if two ranges overlap.
fn in_sequence(files: Vec<(PinnedFile, ArrayRef, ArrayRef)>) -> Result<Option<Vec<PinnedFile>>> {
    if files.is_empty() {
        return Ok(Some(Vec::new()));
    }
    let firsts: Vec<&dyn Array> = files.iter().map(|(_, first, _)| first.as_ref()).collect();
    let order = sort_to_indices(&concat(&firsts)?, None, None)?;
    let mut in_order = Vec::with_capacity(files.len());
    let mut end: Option<&ArrayRef> = None;
    for i in order.values() {
        let (file, first, last) = &files[*i as usize];
        if let Some(end) = end {
            if lt(first, end)?.true_count() > 0 {
                return Ok(None);
            }
        }
        end = Some(last);
        in_order.push(file.clone());
    }
    Ok(Some(in_order))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::memory::MemoryStream;

    /// The batches of one column `id` holding `values`, as a stream.
    fn stream(values: &[&[Option<&str>]]) -> SendableRecordBatchStream {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, true)]));
        let batches = values
            .iter()
            .map(|v| {
                let column: ArrayRef = Arc::new(StringArray::from(v.to_vec()));
                RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap()
            })
            .collect();
        Box::pin(MemoryStream::try_new(batches, schema, None).unwrap())
    }

    fn one(value: &str) -> ArrayRef {
        Arc::new(StringArray::from(vec![value]))
    }

    /// The range `file_order` reads from `values`, or "unordered", "empty".
    async fn range(values: &[&[Option<&str>]]) -> String {
        match file_order(stream(values), "id").await.unwrap() {
            FileOrder::Ascending { first, last } => {
                format!("{}..{}", text(&first).unwrap(), text(&last).unwrap())
            }
            FileOrder::Unordered => "unordered".into(),
            FileOrder::Empty => "empty".into(),
        }
    }

    #[tokio::test]
    async fn order_is_checked_within_and_across_batches() {
        let ascending: &[&[Option<&str>]] =
            &[&[Some("a"), Some("b")], &[], &[Some("b"), Some("c")]];
        assert_eq!(range(ascending).await, "a..c");
        assert_eq!(range(&[&[], &[]]).await, "empty");
        // Descending inside a batch, across two batches, past an empty one.
        assert_eq!(range(&[&[Some("b"), Some("a")]]).await, "unordered");
        assert_eq!(
            range(&[&[Some("a"), Some("c")], &[], &[Some("b")]]).await,
            "unordered"
        );
        // A null has no place in the declared order.
        assert_eq!(range(&[&[Some("a"), None]]).await, "unordered");
        // Byte order, as DataFusion sorts strings: "B" < "a" < "é".
        assert_eq!(range(&[&[Some("B"), Some("a"), Some("é")]]).await, "B..é");
    }

    #[test]
    fn files_follow_one_another_in_the_order_of_their_first_values() {
        let file = |path: &str, first: &str, last: &str| {
            let file = PinnedFile {
                path: path.into(),
                size: 1,
                rows: Some(2),
                partition: Vec::new(),
                range: None,
            };
            (file, one(first), one(last))
        };
        let paths = |files: Option<Vec<PinnedFile>>| {
            files.map(|f| f.into_iter().map(|f| f.path).collect::<Vec<_>>())
        };
        // Given out of order; a file may start where the one before ends.
        let sequence = vec![
            file("escape", "escape/1", "escape/9"),
            file("credit", "credit/1", "credit/9"),
            file("finish", "finish/1", "finish/9"),
            file("escape2", "escape/9", "escape/9z"),
        ];
        assert_eq!(
            paths(in_sequence(sequence).unwrap()),
            Some(vec![
                "credit".into(),
                "escape".into(),
                "escape2".into(),
                "finish".into()
            ])
        );
        let overlapping = vec![file("a", "a/1", "a/5"), file("b", "a/3", "a/9")];
        assert_eq!(paths(in_sequence(overlapping).unwrap()), None);
        assert_eq!(paths(in_sequence(Vec::new()).unwrap()), Some(Vec::new()));
    }
}
