//! Feature rows as the dense matrix the booster reads: numeric columns as
//! they are (a null is a missing value), text columns one-hot over the
//! values seen in training. The spec is saved with the model so scoring
//! builds the same columns in the same order.

use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::columns;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureSpec {
    pub numeric: Vec<String>,
    /// Each text column with the values that get a column of their own.
    pub categorical: Vec<(String, Vec<String>)>,
}

impl FeatureSpec {
    /// Every Float64 column not in `exclude`, and the `categorical` columns
    /// with their distinct values in `batches`, sorted.
    pub fn infer(batches: &[RecordBatch], exclude: &[&str], categorical: &[&str]) -> FeatureSpec {
        let numeric = batches
            .first()
            .map(|b| {
                b.schema()
                    .fields()
                    .iter()
                    .filter(|f| {
                        !exclude.contains(&f.name().as_str())
                            && !categorical.contains(&f.name().as_str())
                            && matches!(
                                f.data_type(),
                                DataType::Float64 | DataType::Int32 | DataType::Int64
                            )
                    })
                    .map(|f| f.name().clone())
                    .collect()
            })
            .unwrap_or_default();
        let categorical = categorical
            .iter()
            .map(|c| {
                let values: BTreeSet<String> =
                    columns::strings(batches, c).into_iter().flatten().collect();
                (c.to_string(), values.into_iter().collect())
            })
            .collect();
        FeatureSpec {
            numeric,
            categorical,
        }
    }

    /// Column names of the matrix: numeric ones, then `column=value`.
    pub fn names(&self) -> Vec<String> {
        let mut out = self.numeric.clone();
        for (c, values) in &self.categorical {
            out.extend(values.iter().map(|v| format!("{c}={v}")));
        }
        out
    }

    pub fn width(&self) -> usize {
        self.numeric.len() + self.categorical.iter().map(|(_, v)| v.len()).sum::<usize>()
    }

    /// Row-major f32 values of `rows` (indices into the concatenated batches).
    pub fn matrix(&self, batches: &[RecordBatch], rows: &[usize]) -> Vec<f32> {
        let width = self.width();
        let mut out = vec![0f32; rows.len() * width];
        let mut col = 0;
        for name in &self.numeric {
            let values = columns::f64s(batches, name);
            for (r, &i) in rows.iter().enumerate() {
                out[r * width + col] = values[i].map_or(f32::NAN, |v| v as f32);
            }
            col += 1;
        }
        for (name, vocab) in &self.categorical {
            let values = columns::strings(batches, name);
            for (r, &i) in rows.iter().enumerate() {
                if let Some(k) = values[i].as_ref().and_then(|v| vocab.binary_search(v).ok()) {
                    out[r * width + col + k] = 1.0;
                }
            }
            col += vocab.len();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use std::sync::Arc;

    #[test]
    fn one_hot_by_name_and_nulls_missing() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, false),
            Field::new("tag", DataType::Utf8, true),
            Field::new("x", DataType::Float64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["a", "b", "c"])),
                Arc::new(StringArray::from(vec![
                    Some("explore"),
                    None,
                    Some("economy"),
                ])),
                Arc::new(Float64Array::from(vec![Some(1.5), Some(2.0), None])),
            ],
        )
        .unwrap();
        let spec = FeatureSpec::infer(std::slice::from_ref(&batch), &["id"], &["tag"]);
        assert_eq!(spec.names(), vec!["x", "tag=economy", "tag=explore"]);
        let m = spec.matrix(&[batch], &[2, 0]);
        assert!(m[0].is_nan());
        assert_eq!(&m[1..3], &[1.0, 0.0]);
        assert_eq!(&m[3..6], &[1.5, 0.0, 1.0]);
    }
}
