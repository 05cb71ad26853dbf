//! SWE-bench outcome reports: which instances one's own runs resolved.
//!
//! Three shapes are read: the harness's run report (`run_evaluation`'s
//! `<model>.<run_id>.json`) and sb-cli's report, both with `resolved_ids`
//! beside `unresolved_ids`, `error_ids`, `empty_patch_ids` and
//! `completed_ids`; and the harness's per-instance `report.json`
//! (`{"<instance_id>": {"resolved": true, ...}}`) under
//! `logs/run_evaluation/<run_id>/<model>/<instance_id>/`.

use serde_json::Value;
use std::collections::BTreeMap;

use super::json::{parse_record, FieldError, FieldResult};

/// The outcome a report gives each instance it judged.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The evaluation run it names (`run_id`), if it names one.
    pub run_id: Option<String>,
    /// instance_id -> resolved.
    pub outcomes: BTreeMap<String, bool>,
}

/// The judged lists of a run report that mean "not resolved"; an id listed
/// only as incomplete or submitted was never judged.
const UNRESOLVED_LISTS: [&str; 4] = [
    "unresolved_ids",
    "error_ids",
    "empty_patch_ids",
    "completed_ids",
];

pub fn wants(name: &str) -> bool {
    name.ends_with(".json")
}

/// Read one report's bytes; `path` is where it lies, for the run a
/// per-instance report's folder names.
pub fn parse(bytes: &[u8], path: &str) -> FieldResult<Report> {
    let v = parse_record(bytes)?;
    let Value::Object(map) = &v else {
        return Err(FieldError::new(
            "",
            "expected a JSON object (a SWE-bench report)",
        ));
    };
    let run_id = map
        .get("run_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| run_of_path(path));
    let mut outcomes = BTreeMap::new();
    if let Some(resolved) = map.get("resolved_ids") {
        for id in ids(resolved, "resolved_ids")? {
            outcomes.insert(id, true);
        }
        for list in UNRESOLVED_LISTS {
            if let Some(v) = map.get(list) {
                for id in ids(v, list)? {
                    outcomes.entry(id).or_insert(false);
                }
            }
        }
        return Ok(Report { run_id, outcomes });
    }
    for (instance, entry) in map {
        match entry.get("resolved") {
            Some(Value::Bool(r)) => {
                outcomes.insert(instance.clone(), *r);
            }
            _ => {
                return Err(FieldError::new(
                    format!("{instance}.resolved"),
                    "expected a boolean (a per-instance report), or a run report with resolved_ids",
                ))
            }
        }
    }
    if outcomes.is_empty() {
        return Err(FieldError::new(
            "resolved_ids",
            "missing: not a SWE-bench run report or per-instance report",
        ));
    }
    Ok(Report { run_id, outcomes })
}

fn ids(v: &Value, field: &str) -> FieldResult<Vec<String>> {
    let Value::Array(list) = v else {
        return Err(FieldError::new(field, "expected a list of instance ids"));
    };
    list.iter()
        .enumerate()
        .map(|(i, id)| {
            id.as_str()
                .map(str::to_string)
                .ok_or_else(|| FieldError::new(format!("{field}[{i}]"), "expected a string"))
        })
        .collect()
}

/// The `<run_id>` of `.../run_evaluation/<run_id>/<model>/<instance>/report.json`.
fn run_of_path(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts.iter().rposition(|p| *p == "run_evaluation")?;
    parts
        .get(at + 1)
        .filter(|_| parts.len() > at + 2)
        .map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_report_resolves_its_resolved_ids_and_judges_the_rest_unresolved() {
        let report =
            br#"{"total_instances": 5, "resolved_ids": ["a__a-1"], "unresolved_ids": ["b__b-2"],
            "error_ids": ["c__c-3"], "empty_patch_ids": [], "completed_ids": ["a__a-1", "b__b-2"],
            "incomplete_ids": ["d__d-4"], "submitted_ids": ["a__a-1", "b__b-2", "c__c-3", "e__e-5"],
            "schema_version": 2}"#;
        let r = parse(report, "mini.run1.json").unwrap();
        assert_eq!(r.run_id, None);
        let want: BTreeMap<String, bool> = [("a__a-1", true), ("b__b-2", false), ("c__c-3", false)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            r.outcomes, want,
            "incomplete and merely submitted ids are not judged"
        );
    }

    #[test]
    fn a_per_instance_report_names_its_run_by_its_folder() {
        let report = br#"{"a__a-1": {"patch_is_None": false, "patch_exists": true, "resolved": true, "tests_status": {}}}"#;
        let r = parse(report, "logs/run_evaluation/run7/mini/a__a-1/report.json").unwrap();
        assert_eq!(r.run_id.as_deref(), Some("run7"));
        assert_eq!(r.outcomes.get("a__a-1"), Some(&true));
    }

    #[test]
    fn other_json_is_refused_naming_the_field() {
        let e = parse(br#"{"x": {"y": 1}}"#, "r.json").unwrap_err();
        assert_eq!(e.field, "x.resolved");
        let e = parse(br#"{"resolved_ids": ["a", 3]}"#, "r.json").unwrap_err();
        assert_eq!(e.field, "resolved_ids[1]");
        assert!(parse(b"[1]", "r.json").is_err());
    }
}
