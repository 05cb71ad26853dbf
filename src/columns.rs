//! Reading query results by column name, whatever Arrow type DataFusion chose
//! (`Utf8View`, `Int32`, ...). The queries are turnlake's own, so a missing
//! column is a bug and panics with its name. Also: a batch reshaped to a
//! schema by column name (`conform`), which reports what does not fit, and
//! a batch cut loose from the buffers its string views point into
//! (`compact_views`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, Int64Type, SchemaRef};
use arrow::record_batch::RecordBatch;

fn column(batches: &[RecordBatch], name: &str, ty: &DataType) -> Vec<ArrayRef> {
    batches
        .iter()
        .map(|b| {
            let c = b
                .column_by_name(name)
                .unwrap_or_else(|| panic!("query result has no column {name}"));
            cast(c, ty).unwrap_or_else(|e| panic!("column {name}: {e}"))
        })
        .collect()
}

pub fn strings(batches: &[RecordBatch], name: &str) -> Vec<Option<String>> {
    column(batches, name, &DataType::Utf8)
        .iter()
        .flat_map(|a| {
            a.as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

pub fn i64s(batches: &[RecordBatch], name: &str) -> Vec<Option<i64>> {
    column(batches, name, &DataType::Int64)
        .iter()
        .flat_map(|a| a.as_primitive::<Int64Type>().iter().collect::<Vec<_>>())
        .collect()
}

pub fn f64s(batches: &[RecordBatch], name: &str) -> Vec<Option<f64>> {
    column(batches, name, &DataType::Float64)
        .iter()
        .flat_map(|a| a.as_primitive::<Float64Type>().iter().collect::<Vec<_>>())
        .collect()
}

pub fn bools(batches: &[RecordBatch], name: &str) -> Vec<Option<bool>> {
    column(batches, name, &DataType::Boolean)
        .iter()
        .flat_map(|a| {
            let b = a.as_boolean();
            (0..b.len())
                .map(|i| b.is_valid(i).then(|| b.value(i)))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The single value of a one-row, one-column result.
pub fn scalar_i64(batches: &[RecordBatch]) -> i64 {
    let name = batches
        .first()
        .map(|b| b.schema().field(0).name().clone())
        .unwrap_or_default();
    i64s(batches, &name).first().copied().flatten().unwrap_or(0)
}

/// `batch` in the exact shape of `schema`: columns picked by name and cast to
/// its types; a null in a non-nullable column is an error (its reason).
pub fn conform(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch, String> {
    let mut columns = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let col = batch
            .column_by_name(field.name())
            .ok_or_else(|| format!("no column {}", field.name()))?;
        let col = if col.data_type() == field.data_type() {
            col.clone()
        } else {
            cast(col, field.data_type()).map_err(|e| format!("column {}: {e}", field.name()))?
        };
        if !field.is_nullable() && col.null_count() > 0 {
            return Err(format!(
                "column {} holds {} null(s) but is not nullable",
                field.name(),
                col.null_count()
            ));
        }
        columns.push(col);
    }
    RecordBatch::try_new(schema.clone(), columns).map_err(|e| e.to_string())
}

/// `batch` holding only the bytes its rows use. A string or binary view
/// column produced by a scan, a filter or a join points into the whole data
/// buffers it was cut from; Arrow IPC writes those buffers whole, so a small
/// result shipped as it is can weigh gigabytes.
pub fn compact_views(batch: &RecordBatch) -> RecordBatch {
    let columns = batch
        .columns()
        .iter()
        .map(|column| -> ArrayRef {
            match column.data_type() {
                DataType::Utf8View => Arc::new(column.as_string_view().gc()),
                DataType::BinaryView => Arc::new(column.as_binary_view().gc()),
                _ => column.clone(),
            }
        })
        .collect();
    RecordBatch::try_new(batch.schema(), columns).expect("same columns, same schema")
}
