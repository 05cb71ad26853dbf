//! Table schemas, read from the files in `schemas/` (embedded at build time)
//! so the files a user reads are the ones the writer enforces.

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::Deserialize;
use std::sync::Arc;

use super::LakeError;

#[derive(Debug, Deserialize)]
struct SchemaFile {
    table: String,
    #[serde(default)]
    doc: String,
    #[serde(default)]
    partition_by: Vec<String>,
    fields: Vec<FieldSpec>,
}

#[derive(Debug, Deserialize)]
struct FieldSpec {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    nullable: bool,
    #[serde(default)]
    doc: String,
}

/// A table's name, Arrow schema and partition columns.
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub name: String,
    pub schema: SchemaRef,
    pub partition_by: Vec<String>,
    /// What a row is, from the file's `doc`.
    pub doc: String,
    /// What each column means, by name, where the file says.
    pub column_docs: std::collections::BTreeMap<String, String>,
}

const FILES: &[(&str, &str)] = &[
    ("evals", include_str!("../../schemas/evals.json")),
    (
        "trajectories",
        include_str!("../../schemas/trajectories.json"),
    ),
    ("messages", include_str!("../../schemas/messages.json")),
    ("turns", include_str!("../../schemas/turns.json")),
    ("questions", include_str!("../../schemas/questions.json")),
    ("judgments", include_str!("../../schemas/judgments.json")),
    ("rejects", include_str!("../../schemas/rejects.json")),
    (
        "swebench_results",
        include_str!("../../schemas/swebench_results.json"),
    ),
    (
        "credit_citations",
        include_str!("../../schemas/credit_citations.json"),
    ),
    (
        "turn_credit",
        include_str!("../../schemas/turn_credit.json"),
    ),
    (
        "side_credit",
        include_str!("../../schemas/side_credit.json"),
    ),
    (
        "gate_demotions",
        include_str!("../../schemas/gate_demotions.json"),
    ),
    (
        "scorer_features",
        include_str!("../../schemas/scorer_features.json"),
    ),
    (
        "turn_labels",
        include_str!("../../schemas/turn_labels.json"),
    ),
];

/// Tables that share one schema file.
const SHARED: &[(&str, &str)] = &[
    ("sft_credit", include_str!("../../schemas/product.json")),
    ("escape_duel", include_str!("../../schemas/product.json")),
    ("escape_mini", include_str!("../../schemas/product.json")),
    ("finish_mini", include_str!("../../schemas/product.json")),
    ("sft_mix", include_str!("../../schemas/product.json")),
    ("sft_validated", include_str!("../../schemas/product.json")),
];

/// The schema of a named table, from its file.
pub fn table_schema(name: &str) -> Result<TableSchema, LakeError> {
    let (_, text) = FILES
        .iter()
        .chain(SHARED)
        .find(|(n, _)| *n == name)
        .ok_or_else(|| LakeError::UnknownTable(name.to_string()))?;
    let mut schema = parse(text).map_err(|reason| LakeError::Schema {
        table: name.to_string(),
        reason,
    })?;
    schema.name = name.to_string();
    Ok(schema)
}

fn parse(text: &str) -> Result<TableSchema, String> {
    let file: SchemaFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let fields = file
        .fields
        .iter()
        .map(|f| Ok(Field::new(&f.name, data_type(&f.ty)?, f.nullable)))
        .collect::<Result<Vec<_>, String>>()?;
    for p in &file.partition_by {
        if !fields.iter().any(|f| f.name() == p) {
            return Err(format!("partition column {p} is not a field"));
        }
    }
    Ok(TableSchema {
        name: file.table,
        schema: Arc::new(Schema::new(fields)),
        partition_by: file.partition_by,
        doc: file.doc,
        column_docs: file
            .fields
            .into_iter()
            .filter(|f| !f.doc.is_empty())
            .map(|f| (f.name, f.doc))
            .collect(),
    })
}

fn data_type(ty: &str) -> Result<DataType, String> {
    Ok(match ty {
        "utf8" => DataType::Utf8,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "float64" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "binary" => DataType::Binary,
        t if t.starts_with("list<") && t.ends_with('>') => {
            let inner = data_type(&t[5..t.len() - 1])?;
            DataType::List(Arc::new(Field::new("item", inner, true)))
        }
        other => return Err(format!("unknown type {other:?}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_file_parses() {
        for (name, _) in FILES.iter().chain(SHARED) {
            let s = table_schema(name).unwrap();
            assert_eq!(&s.name, name);
            assert!(!s.schema.fields().is_empty());
        }
    }

    #[test]
    fn bad_schema_is_an_error() {
        assert!(
            parse(r#"{"table":"x","fields":[{"name":"a","type":"uuid","nullable":true}]}"#)
                .is_err()
        );
        assert!(parse(r#"{"table":"x","partition_by":["b"],"fields":[{"name":"a","type":"utf8","nullable":true}]}"#).is_err());
        assert!(matches!(
            table_schema("nope"),
            Err(LakeError::UnknownTable(_))
        ));
    }
}
