//! The Albedo dashboard's index of eval runs (`dashboard.json`): for each
//! run, who played (the challenger's model, hotkey and uid, and the king it
//! duelled) and the URLs of its artifacts. `harvest` fetches what it lists;
//! `ingest albedo` reads who played from the entry harvest saves beside a
//! run (or from a dashboard file). A dashboard from someone else is
//! untrusted: an eval run id that is not one path component is refused.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

use super::json::{opt_i64, opt_str, parse_record, FieldError, FieldResult};

/// The file harvest writes beside a run's artifacts: its dashboard entry.
pub const ENTRY_FILE: &str = "dashboard-entry.json";

/// A model that played a duel.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Player {
    /// The model key (`owner/name@revision`), as the dashboard gives it.
    pub model_uri: Option<String>,
    pub hotkey: Option<String>,
    pub uid: Option<i64>,
}

/// One eval run of the dashboard.
#[derive(Debug, Clone)]
pub struct DashboardRun {
    pub eval_run_id: String,
    pub finished_at: Option<String>,
    pub challenger: Player,
    pub king: Player,
    /// The version of the king the challenger duelled.
    pub king_version: Option<i64>,
    /// Artifact kind (`EVAL_VERDICT`, `GENERATED_SAMPLES`, ...) to its URL.
    pub artifacts: BTreeMap<String, String>,
    /// The entry as the dashboard wrote it.
    pub entry: Value,
}

/// A dashboard's runs, and the entries refused with the field and reason.
#[derive(Debug, Default)]
pub struct Dashboard {
    pub runs: Vec<DashboardRun>,
    pub refused: Vec<FieldError>,
}

/// Parse a dashboard.json.
pub fn parse(bytes: &[u8]) -> FieldResult<Dashboard> {
    let v = parse_record(bytes)?;
    let list = match v.get("eval_runs") {
        Some(Value::Array(list)) => list,
        Some(_) => return Err(FieldError::new("eval_runs", "expected a list")),
        None => return Err(FieldError::new("eval_runs", "missing")),
    };
    let mut out = Dashboard::default();
    for (i, entry) in list.iter().enumerate() {
        match run_entry(entry, &format!("eval_runs[{i}].")) {
            Ok(run) => out.runs.push(run),
            Err(e) => out.refused.push(e),
        }
    }
    Ok(out)
}

/// One run's entry (as the dashboard lists it, or as harvest saved it).
pub fn run_entry(entry: &Value, path: &str) -> FieldResult<DashboardRun> {
    if !entry.is_object() {
        return Err(FieldError::new(
            path.trim_end_matches('.'),
            "expected an object",
        ));
    }
    let id = opt_str(entry, "eval_run_id")
        .ok_or_else(|| FieldError::new(format!("{path}eval_run_id"), "missing"))?;
    if !is_one_path_component(&id) {
        return Err(FieldError::new(
            format!("{path}eval_run_id"),
            format!("{id:?} is not one path component"),
        ));
    }
    let player = |v: Option<&Value>| Player {
        model_uri: v.and_then(|v| opt_str(v, "model_uri")),
        hotkey: v.and_then(|v| opt_str(v, "hotkey")),
        uid: v.and_then(|v| opt_i64(v, "uid")),
    };
    let king = entry.get("king").filter(|k| k.is_object());
    let mut artifacts = BTreeMap::new();
    if let Some(Value::Object(map)) = entry.get("artifacts") {
        for (kind, url) in map {
            let Value::String(url) = url else {
                return Err(FieldError::new(
                    format!("{path}artifacts.{kind}"),
                    "expected a URL",
                ));
            };
            artifacts.insert(kind.clone(), url.clone());
        }
    }
    Ok(DashboardRun {
        finished_at: opt_str(entry, "finished_at"),
        challenger: player(Some(entry)),
        king: player(king),
        king_version: king
            .and_then(|k| opt_i64(k, "king_version"))
            .or_else(|| opt_i64(entry, "king_version")),
        artifacts,
        entry: entry.clone(),
        eval_run_id: id,
    })
}

/// A name that is one path component everywhere: no separators, not `.`
/// or `..`, nothing a file system treats specially.
fn is_one_path_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s.starts_with('.')
        && s.chars()
            .all(|c| !matches!(c, '/' | '\\' | ':' | '\0') && !c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_names_its_players_and_artifacts() {
        let bytes = json!({"eval_runs": [{
            "eval_run_id": "r1", "finished_at": "2026-08-07T10:32:55+00:00",
            "model_uri": "me/model@abc", "hotkey": "5E", "uid": 27, "king_version": null,
            "king": {"king_version": 104, "model_uri": "king/model@sha256:78", "uid": 90, "hotkey": "5D"},
            "artifacts": {"EVAL_VERDICT": "https://host/s/1/eval/r1/verdict.json"}
        }]})
        .to_string();
        let d = parse(bytes.as_bytes()).unwrap();
        let r = &d.runs[0];
        assert_eq!(r.challenger.model_uri.as_deref(), Some("me/model@abc"));
        assert_eq!(r.challenger.uid, Some(27));
        assert_eq!(r.king.model_uri.as_deref(), Some("king/model@sha256:78"));
        assert_eq!(r.king_version, Some(104));
        assert_eq!(
            r.artifacts["EVAL_VERDICT"],
            "https://host/s/1/eval/r1/verdict.json"
        );
    }

    #[test]
    fn a_run_id_that_is_not_one_path_component_is_refused_naming_it() {
        for id in ["../x", "a/b", "..", "", ".hidden", "a\\b", "C:x"] {
            let bytes =
                json!({"eval_runs": [{"eval_run_id": id}, {"eval_run_id": "ok"}]}).to_string();
            let d = parse(bytes.as_bytes()).unwrap();
            assert_eq!(d.runs.len(), 1, "{id:?}");
            assert_eq!(d.refused[0].field, "eval_runs[0].eval_run_id", "{id:?}");
        }
    }
}
