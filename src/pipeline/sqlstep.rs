//! Running a pipeline step's SQL file: statements in order, failing fast
//! with the file and statement named.

use datafusion::prelude::SessionContext;

use crate::engine::{self, EngineError};

/// Split SQL text into statements at `;` ending a line (comment lines and blanks dropped).
pub fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("--") {
            continue;
        }
        cur.push_str(line);
        cur.push('\n');
        if trimmed.ends_with(';') {
            out.push(cur.trim().trim_end_matches(';').to_string());
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Run every statement of `file` (its text `sql`) in `ctx`.
pub async fn run_script(ctx: &SessionContext, file: &str, sql: &str) -> Result<(), EngineError> {
    for (i, s) in statements(sql).iter().enumerate() {
        let context = format!(
            "{file}, statement {} ({})",
            i + 1,
            s.lines().next().unwrap_or("")
        );
        engine::run_sql(ctx, s, &context).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_statements() {
        let s =
            statements("-- a comment\nCREATE VIEW v AS\nSELECT 1;\n\nSELECT *\nFROM v;\nSELECT 2");
        assert_eq!(
            s,
            vec!["CREATE VIEW v AS\nSELECT 1", "SELECT *\nFROM v", "SELECT 2"]
        );
    }

    #[tokio::test]
    async fn a_failing_statement_is_named() {
        let ctx = SessionContext::new();
        let err = run_script(
            &ctx,
            "sql/x.sql",
            "CREATE VIEW a AS SELECT 1 AS n;\nSELECT * FROM missing;\n",
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("sql/x.sql, statement 2 (SELECT * FROM missing)"),
            "{err}"
        );
    }
}
