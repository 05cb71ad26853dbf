//! What a step records with every table it writes and in its lake commit:
//! the step, the versions of its inputs, its parameters and its SQL. `build`
//! reads it back to decide whether a step is current; `snapshot diff` to say
//! whether a step's settings changed. One type, written and read here.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A step's provenance. Fields are in the order the `json!` maps it
/// replaced wrote their keys, so the recorded text is unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub step: String,
    /// Each input table's version the step read (none: the lake had no such table).
    pub inputs: BTreeMap<String, Option<u64>>,
    pub params: serde_json::Value,
    /// Rows the step left out of its output (validate's failing rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// The step's SQL file, as `sql/NAME.sql`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_sha256: Option<String>,
}

impl Provenance {
    /// A step's provenance over `inputs`, with its SQL file (name and text) when it has one.
    pub fn new(
        step: &str,
        inputs: BTreeMap<String, Option<u64>>,
        params: serde_json::Value,
        sql: Option<(&str, &str)>,
    ) -> Self {
        Provenance {
            dropped: None,
            inputs,
            params,
            sql: sql.map(|(file, _)| file.to_string()),
            sql_sha256: sql.map(|(_, text)| crate::digest::sha256_hex(text.as_bytes())),
            step: step.to_string(),
        }
    }

    /// The provenance a table version or lake commit recorded, when a step wrote it
    /// (ingest records other things).
    pub fn recorded(value: &serde_json::Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("provenance serializes")
    }

    /// Whether a run with this provenance read the same inputs with the same
    /// parameters and SQL as `other`: the step would write the same tables.
    pub fn same_run(&self, other: &Provenance) -> bool {
        self.inputs == other.inputs
            && self.params == other.params
            && self.sql_sha256 == other.sql_sha256
    }

    /// The settings of the run (parameters and SQL digest), without the
    /// input versions or what it measured: what `snapshot diff` compares.
    pub fn settings(&self) -> (&serde_json::Value, Option<&str>) {
        (&self.params, self.sql_sha256.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_serializes_as_the_maps_it_replaced_and_reads_back() {
        let inputs = BTreeMap::from([
            ("judgments".to_string(), None),
            ("turns".to_string(), Some(3)),
        ]);
        let p = Provenance::new(
            "credit",
            inputs,
            serde_json::json!({"a": 1}),
            Some(("sql/credit.sql", "SELECT 1")),
        );
        let old = serde_json::json!({
            "step": "credit", "inputs": {"judgments": null, "turns": 3}, "params": {"a": 1},
            "sql": "sql/credit.sql", "sql_sha256": crate::digest::sha256_hex(b"SELECT 1"),
        });
        assert_eq!(p.to_value().to_string(), old.to_string());
        assert_eq!(Provenance::recorded(&old), Some(p.clone()));
        let mut changed = p.clone();
        changed.params = serde_json::json!({"a": 2});
        assert!(!p.same_run(&changed));
        assert!(p.same_run(&Provenance {
            dropped: Some(4),
            ..p.clone()
        }));
        // What ingest records is not a step's provenance.
        assert_eq!(
            Provenance::recorded(&serde_json::json!({"inputs": ["x"]})),
            None
        );
    }
}
