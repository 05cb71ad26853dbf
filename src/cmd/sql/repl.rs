//! The interactive shell: `turnlake sql` on a terminal with no query.
//!
//! A line editor with history kept across sessions, statements that run
//! when a line ends one with `;`, Ctrl-C that cancels the running query
//! (and, while typing, the line) without leaving, completion of table,
//! column and function names, and backslash commands for what a person
//! asks of a lake it does not know yet.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use comfy_table::Table;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{CompletionType, Config, Editor, Helper};

use super::runner::{self, Output, Runner};

const PROMPT: &str = "turnlake> ";

const HELP: &str = "\
  \\d          tables and views, with what a row of each is
  \\d TABLE    the columns of TABLE, with what each means
  \\df         turnlake's functions, with what each gives
  \\timing     say (or stop saying) each statement's rows and time
  \\q          leave (so does Ctrl-D)
  \\?          this list
A statement runs when a line ends it with `;`. Ctrl-C cancels a running query, or the line being typed.";

/// The history file: `TURNLAKE_HISTORY`, else `~/.turnlake_history`.
fn history_path() -> Option<PathBuf> {
    std::env::var_os("TURNLAKE_HISTORY")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".turnlake_history")))
}

/// Run the shell until `\q` or end of input.
pub async fn run(mut runner: Runner) -> anyhow::Result<()> {
    let config = Config::builder()
        .max_history_size(10_000)?
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor: Editor<Shell, FileHistory> = Editor::with_config(config)?;
    let words = Arc::new(Mutex::new(names(&runner.ctx).await));
    editor.set_helper(Some(Shell {
        words: Arc::clone(&words),
    }));
    let history = history_path();
    if let Some(path) = &history {
        // A first session has no file yet.
        let _ = editor.load_history(path);
    }
    eprintln!("turnlake sql: \\? for help, \\q to leave");
    loop {
        let line = tokio::task::block_in_place(|| editor.readline(PROMPT));
        let input = match line {
            Ok(input) => input,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let input = input.trim();
        if input.is_empty() {
            continue;
        }
        editor.add_history_entry(input)?;
        if let Some(path) = &history {
            if let Err(e) = editor.append_history(path) {
                eprintln!("history not kept in {}: {e}", path.display());
            }
        }
        if let Some(command) = input.strip_prefix('\\') {
            match backslash(&mut runner, command).await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => eprintln!("error: {e:#}"),
            }
            continue;
        }
        let statements = match runner::split(input, "input") {
            Ok(statements) => statements,
            Err(e) => {
                eprintln!("error: {e:#}");
                continue;
            }
        };
        for (context, sql) in statements {
            let run = runner.run_statement(&sql, &context, Output::Stdout);
            let outcome = tokio::select! {
                outcome = run => outcome,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("cancelled");
                    break;
                }
            };
            match outcome {
                Ok(_) if defines(&sql) => {
                    *words.lock().expect("words") = names(&runner.ctx).await;
                }
                Ok(_) => {}
                Err(e) => {
                    eprintln!("error: {e:#}");
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Whether `sql` may change the session's names (CREATE, DROP).
fn defines(sql: &str) -> bool {
    sql.split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("create") || w.eq_ignore_ascii_case("drop"))
}

/// Run backslash command `command`; `true` when it says to leave.
async fn backslash(runner: &mut Runner, command: &str) -> anyhow::Result<bool> {
    let mut words = command.split_whitespace();
    match (words.next().unwrap_or(""), words.next()) {
        ("q", None) => return Ok(true),
        ("?", None) => println!("{HELP}"),
        ("timing", None) => {
            runner.timing = !runner.timing;
            println!("timing is {}", if runner.timing { "on" } else { "off" });
        }
        ("d", None) => println!("{}", tables(&runner.ctx).await?),
        ("d", Some(table)) => println!("{}", columns(&runner.ctx, table).await?),
        ("df", None) => println!("{}", functions(&runner.ctx)),
        _ => anyhow::bail!("unknown command \\{command} (\\? lists them)"),
    }
    Ok(false)
}

fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
    t
}

/// Every table and view of the session, with what a row of a lake table is.
async fn tables(ctx: &SessionContext) -> anyhow::Result<Table> {
    let mut t = table();
    t.set_header(vec!["table", "kind", "a row is"]);
    for (schema, name, kind) in table_list(ctx).await? {
        let doc = crate::lake::table_schema(&name)
            .map(|s| s.doc)
            .unwrap_or_default();
        let name = match schema.as_str() {
            "public" => name,
            _ => format!("{schema}.{name}"),
        };
        t.add_row(vec![name, kind, doc]);
    }
    Ok(t)
}

/// (schema, table, kind) of every table and view but information_schema's.
async fn table_list(ctx: &SessionContext) -> anyhow::Result<Vec<(String, String, String)>> {
    let batches = ctx
        .sql(
            "SELECT table_schema, table_name, table_type FROM information_schema.tables \
             WHERE table_schema <> 'information_schema' ORDER BY table_schema, table_name",
        )
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for b in &batches {
        let text = |name: &str| -> anyhow::Result<Vec<String>> {
            let column = b
                .column_by_name(name)
                .ok_or_else(|| anyhow::anyhow!("information_schema.tables has no {name}"))?;
            let column = arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8)?;
            let strings = arrow::array::AsArray::as_string::<i32>(&column);
            Ok(strings
                .iter()
                .map(|v| v.unwrap_or("").to_string())
                .collect())
        };
        let (schemas, names, kinds) = (
            text("table_schema")?,
            text("table_name")?,
            text("table_type")?,
        );
        for ((s, n), k) in schemas.into_iter().zip(names).zip(kinds) {
            let kind = match k.as_str() {
                "BASE TABLE" => "table",
                "VIEW" => "view",
                other => other,
            };
            out.push((s, n, kind.to_string()));
        }
    }
    Ok(out)
}

/// The columns of `name` as the session has them, with what each means
/// where `schemas/` says.
async fn columns(ctx: &SessionContext, name: &str) -> anyhow::Result<Table> {
    let provider = ctx.table_provider(name).await?;
    let docs = crate::lake::table_schema(name)
        .map(|s| s.column_docs)
        .unwrap_or_default();
    let mut t = table();
    t.set_header(vec!["column", "type", "null", "meaning"]);
    for f in provider.schema().fields() {
        t.add_row(vec![
            f.name().clone(),
            f.data_type().to_string(),
            if f.is_nullable() { "yes" } else { "no" }.to_string(),
            docs.get(f.name()).cloned().unwrap_or_default(),
        ]);
    }
    Ok(t)
}

/// turnlake's functions, each with its call and what it gives.
fn functions(ctx: &SessionContext) -> Table {
    let mut t = table();
    t.set_header(vec!["function", "gives"]);
    let state = ctx.state();
    for udf in crate::udf::all() {
        let name = udf.name().to_string();
        let doc = state
            .scalar_functions()
            .get(&name)
            .and_then(|f| f.documentation())
            .map(|d| (d.syntax_example.clone(), d.description.clone()))
            .unwrap_or((name, String::new()));
        t.add_row(vec![doc.0, doc.1]);
    }
    t
}

/// What completion offers: the session's tables and their columns, every
/// function, SQL keywords and the backslash commands.
async fn names(ctx: &SessionContext) -> Vec<String> {
    let mut words: Vec<String> = ["\\d", "\\df", "\\timing", "\\q", "\\?"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    words.extend(
        datafusion::sql::sqlparser::keywords::ALL_KEYWORDS
            .iter()
            .map(|k| k.to_string()),
    );
    words.extend(ctx.state().scalar_functions().keys().cloned());
    words.extend(ctx.state().aggregate_functions().keys().cloned());
    for (_, table, _) in table_list(ctx).await.unwrap_or_default() {
        // A lake table's columns from its schema file: naming them opens nothing.
        match crate::lake::table_schema(&table) {
            Ok(s) => words.extend(s.schema.fields().iter().map(|f| f.name().clone())),
            Err(_) => {
                if let Ok(p) = ctx.table_provider(table.as_str()).await {
                    words.extend(p.schema().fields().iter().map(|f| f.name().clone()));
                }
            }
        }
        words.push(table);
    }
    words.sort();
    words.dedup();
    words
}

/// The line editor's helper: completion and where a statement ends.
struct Shell {
    words: Arc<Mutex<Vec<String>>>,
}

impl Completer for Shell {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '\\'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &before[start..];
        if word.is_empty() {
            return Ok((pos, Vec::new()));
        }
        let lower = word.to_lowercase();
        let words = self.words.lock().expect("words");
        let found = words
            .iter()
            .filter(|w| w.to_lowercase().starts_with(&lower))
            .map(|w| {
                // Keywords come upper case; typed lower case, they stay so.
                let replacement = match w.chars().all(|c| !c.is_lowercase())
                    && word.chars().any(char::is_lowercase)
                {
                    true => w.to_lowercase(),
                    false => w.clone(),
                };
                Pair {
                    display: w.clone(),
                    replacement,
                }
            })
            .collect();
        Ok((start, found))
    }
}

impl Hinter for Shell {
    type Hint = String;
}

impl Highlighter for Shell {}

impl Validator for Shell {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(match complete(ctx.input()) {
            true => ValidationResult::Valid(None),
            false => ValidationResult::Incomplete,
        })
    }
}

impl Helper for Shell {}

/// Whether `input` is ready to run: a backslash command, or SQL whose last
/// token (comments and spaces aside) is a `;` outside any string or comment.
fn complete(input: &str) -> bool {
    let input = input.trim();
    if input.is_empty() || input.starts_with('\\') {
        return true;
    }
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, input).tokenize() else {
        // An open string or comment: more is coming.
        return false;
    };
    tokens
        .iter()
        .rev()
        .find(|t| {
            !matches!(
                t,
                Token::Whitespace(
                    Whitespace::Space
                        | Whitespace::Newline
                        | Whitespace::Tab
                        | Whitespace::SingleLineComment { .. }
                        | Whitespace::MultiLineComment(_)
                )
            )
        })
        .is_some_and(|t| *t == Token::SemiColon)
}

#[cfg(test)]
mod tests {
    use super::complete;

    #[test]
    fn a_statement_is_complete_when_a_semicolon_outside_strings_ends_it() {
        assert!(complete("SELECT 1;"));
        assert!(complete("SELECT 1; -- done"));
        assert!(complete("\\d turns"));
        assert!(!complete("SELECT 1"));
        assert!(!complete("SELECT 'a;"));
        assert!(!complete("SELECT ';'"));
        assert!(!complete("SELECT 1 /* ; */"));
        assert!(complete("SELECT 1\nFROM t;"));
    }
}
