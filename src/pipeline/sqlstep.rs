//! Running a SQL file: statements in order, failing fast with the file and
//! statement named.

use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::ParserError;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

use crate::engine::{self, EngineError};

/// Split SQL text into its statements, as written (comments before a
/// statement dropped). DataFusion's SQL tokenizer finds the `;`s, so one
/// inside a string, a quoted name or a comment does not split; text it
/// cannot tokenize (an unterminated string) is an error naming where.
pub fn statements(text: &str) -> Result<Vec<String>, DataFusionError> {
    let tokens = Tokenizer::new(&GenericDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| {
            DataFusionError::SQL(Box::new(ParserError::TokenizerError(e.to_string())), None)
        })?;
    // Byte offset of each line's start, to turn a token's line and column
    // (counted in characters) into a byte offset of `text`.
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |at: &Location| -> usize {
        let start = line_starts[at.line as usize - 1];
        text[start..]
            .char_indices()
            .nth(at.column as usize - 1)
            .map_or(text.len(), |(i, _)| start + i)
    };
    let mut out = Vec::new();
    let mut begin: Option<usize> = None;
    for t in &tokens {
        match &t.token {
            Token::Whitespace(_) | Token::EOF => {}
            Token::SemiColon => {
                if let Some(b) = begin.take() {
                    out.push(text[b..offset(&t.span.start)].trim_end().to_string());
                }
            }
            _ => {
                begin.get_or_insert_with(|| offset(&t.span.start));
            }
        }
    }
    if let Some(b) = begin {
        out.push(text[b..].trim_end().to_string());
    }
    Ok(out)
}

/// Run every statement of `file` (its text `sql`) in `ctx`.
pub async fn run_script(ctx: &SessionContext, file: &str, sql: &str) -> Result<(), EngineError> {
    let split =
        statements(sql).map_err(EngineError::query(format!("{file}: splitting statements")))?;
    for (i, s) in split.iter().enumerate() {
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
            statements("-- a comment\nCREATE VIEW v AS\nSELECT 1;\n\nSELECT *\nFROM v;\nSELECT 2")
                .unwrap();
        assert_eq!(
            s,
            vec!["CREATE VIEW v AS\nSELECT 1", "SELECT *\nFROM v", "SELECT 2"]
        );
    }

    #[test]
    fn a_semicolon_in_a_string_a_name_or_a_comment_does_not_split() {
        let s =
            statements("SELECT 'a;\nb' AS \"x;y\"; -- one; two\nSELECT /* ; */ 'é;' ;SELECT 3;;")
                .unwrap();
        assert_eq!(
            s,
            vec![
                "SELECT 'a;\nb' AS \"x;y\"",
                "SELECT /* ; */ 'é;'",
                "SELECT 3"
            ]
        );
        assert!(statements("SELECT 'open").is_err());
        assert!(statements("-- only a comment\n").unwrap().is_empty());
    }

    #[test]
    fn every_step_file_splits_as_its_statements_read() {
        // Each statement of the step files starts with a keyword (no `;` was
        // inside a string or comment to split one in two).
        for sql in [
            super::super::credit::SQL,
            super::super::select::STEP_SQL,
            super::super::mix::SQL,
            super::super::mix::REPORT_SQL,
            super::super::stats::SQL,
        ] {
            for s in statements(sql).unwrap() {
                let head = s.split_whitespace().next().unwrap();
                assert!(["CREATE", "SELECT", "WITH"].contains(&head), "{s}");
            }
        }
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
