//! `turnlake sql` as people from DuckDB's shell and datafusion-cli use it:
//! `-c`, several `-f`, SQL on standard input, every result in order,
//! information_schema, the row cap and the per-statement timing.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::common::*;

/// A small lake: the two mini-swe-agent fixture runs.
fn lake(dir: &Path) -> std::path::PathBuf {
    let lake = dir.join("lake");
    let mswea = fixtures().join("mswea");
    ok(run(&lake, &["ingest", "mswea", mswea.to_str().unwrap()]));
    lake
}

#[test]
fn every_statement_of_every_source_prints_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let a = tmp.path().join("a.sql");
    let b = tmp.path().join("b.sql");
    // A `;` inside a string literal or a comment does not end a statement.
    std::fs::write(
        &a,
        "CREATE VIEW v AS SELECT 'x;y' AS s; -- a; comment\nSELECT s FROM v;\n",
    )
    .unwrap();
    std::fs::write(&b, "SELECT 'b' AS f;").unwrap();
    let o = ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "-f",
            a.to_str().unwrap(),
            "-f",
            b.to_str().unwrap(),
            "-c",
            "SELECT 1 AS c1",
            "-c",
            "SELECT 2 AS c2; SELECT s || '!' AS q FROM v",
            "SELECT count(*) AS trajectories FROM trajectories",
        ],
    ));
    assert_eq!(
        stdout(&o),
        "s\nx;y\nf\nb\nc1\n1\nc2\n2\nq\nx;y!\ntrajectories\n2\n"
    );
}

#[test]
fn sql_on_standard_input_runs_when_no_query_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let mut child = bin()
        .arg("--lake")
        .arg(&lake)
        .args(["sql", "--format", "ndjson"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"SELECT 'semi;colon' AS s;\nSELECT 2 AS n\n")
        .unwrap();
    let o = ok(child.wait_with_output().unwrap());
    assert_eq!(stdout(&o), "{\"s\":\"semi;colon\"}\n{\"n\":2}\n");
    // Nothing on standard input is an error that says what to give.
    let o = run(&lake, &["sql"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("no SQL statement in standard input"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn information_schema_answers_show_tables_and_describe() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let tables = sql(&lake, "SHOW TABLES");
    assert!(
        tables.iter().any(|r| r[1] == "public" && r[2] == "turns"),
        "{tables:?}"
    );
    let columns = sql(&lake, "SHOW COLUMNS FROM turns");
    assert!(
        columns.iter().any(|r| r.contains(&"cmd_kind".to_string())),
        "{columns:?}"
    );
    let described = sql(&lake, "DESCRIBE turns");
    assert_eq!(described.len(), columns.len());
}

#[test]
fn the_table_format_caps_its_rows_and_says_how_many_it_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let q = "SELECT value FROM range(100) ORDER BY value";
    let shown = |o: &std::process::Output| {
        stdout(o)
            .lines()
            .filter(|l| l.starts_with("| ") && !l.contains("value"))
            .count()
    };
    let o = ok(run(&lake, &["sql", q]));
    assert_eq!(shown(&o), 40, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("100 rows, 60 not shown"),
        "{}",
        stdout(&o)
    );
    let o = ok(run(&lake, &["sql", q, "--maxrows", "0"]));
    assert_eq!(shown(&o), 100);
    assert!(!stdout(&o).contains("not shown"));
    // The cap is the terminal table's: csv gives every row.
    assert_eq!(sql(&lake, q).len(), 100);
}

/// A cell longer than the table's character cap is cut at a character
/// (never inside one) with a mark of what it left out; csv gives it whole.
#[test]
fn the_table_format_cuts_a_long_cell_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let q = "SELECT repeat('é', 5000) AS long, 'short' AS s";
    let o = ok(run(&lake, &["sql", q, "--maxchars", "100"]));
    let out = stdout(&o);
    assert!(
        out.contains(&format!("| {}… (+4900 chars) | short |", "é".repeat(100))),
        "{out}"
    );
    assert!(
        out.contains("1 cell(s) cut at 100 characters (--maxchars"),
        "{out}"
    );
    let o = ok(run(&lake, &["sql", q]));
    assert!(stdout(&o).contains(&format!("{}… (+4000 chars)", "é".repeat(1000))));
    let o = ok(run(&lake, &["sql", q, "--maxchars", "0"]));
    assert!(stdout(&o).contains(&"é".repeat(5000)));
    assert!(!stdout(&o).contains("cut at"));
    assert_eq!(sql(&lake, q)[0][0], "é".repeat(5000));
}

#[test]
fn timing_explain_and_out_take_the_last_result() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let o = ok(run(
        &lake,
        &[
            "sql",
            "--timing",
            "-c",
            "SELECT 1 AS a; CREATE VIEW w AS SELECT 1 AS b",
        ],
    ));
    let err = stderr(&o);
    assert!(
        err.contains("1 row in ") && err.contains("done in "),
        "{err}"
    );
    let plan = stdout(&ok(run(
        &lake,
        &["sql", "EXPLAIN SELECT count(*) FROM turns"],
    )));
    assert!(
        plan.contains("logical_plan") && plan.contains("physical_plan"),
        "{plan}"
    );
    let analyzed = stdout(&ok(run(
        &lake,
        &["sql", "EXPLAIN ANALYZE SELECT count(*) FROM turns"],
    )));
    assert!(analyzed.contains("output_rows"), "{analyzed}");
    let out = tmp.path().join("last.csv");
    let o = ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "--out",
            out.to_str().unwrap(),
            "-c",
            "SELECT 1 AS first",
            "-c",
            "SELECT traj_id FROM trajectories ORDER BY 1",
        ],
    ));
    assert_eq!(stdout(&o), "");
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.starts_with("traj_id\n"), "{text}");

    // Without --format, --out's extension names the format.
    let out = tmp.path().join("turns.parquet");
    ok(run(
        &lake,
        &["sql", "--out", out.to_str().unwrap(), "SELECT * FROM turns"],
    ));
    let file = std::fs::File::open(&out).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    let rows = parquet::file::reader::FileReader::metadata(&reader)
        .file_metadata()
        .num_rows();
    assert_eq!(
        rows.to_string(),
        scalar(&lake, "SELECT count(*) FROM turns")
    );
}

#[test]
fn writes_are_refused_unless_allowed_and_never_reach_the_lake() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = lake(tmp.path());
    let copied = tmp.path().join("copied.csv");
    let copy = format!(
        "COPY (SELECT 1 AS n) TO '{}' STORED AS CSV",
        copied.display()
    );
    let session =
        "CREATE TABLE t AS SELECT 1 AS n; INSERT INTO t VALUES (2); SELECT count(*) AS n FROM t";

    // Read-only by default: the error names the statement and the flag.
    for sql in [copy.as_str(), session] {
        let o = run(&lake, &["sql", "--format", "csv", sql]);
        assert!(!o.status.success(), "{sql} ran read-only");
        let err = stderr(&o);
        assert!(
            err.contains("read-only") && err.contains("--allow-writes"),
            "{err}"
        );
    }
    assert!(!copied.exists());

    // Session DDL needs no flag.
    let o = ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "CREATE VIEW v AS SELECT 3 AS n; SELECT n FROM v",
        ],
    ));
    assert_eq!(stdout(&o), "n\n3\n");

    // --allow-writes: session tables and COPY are written ...
    let o = ok(run(
        &lake,
        &["sql", "--allow-writes", "--format", "csv", session],
    ));
    assert!(stdout(&o).ends_with("n\n2\n"), "{}", stdout(&o));
    ok(run(&lake, &["sql", "--allow-writes", &copy]));
    assert_eq!(std::fs::read_to_string(&copied).unwrap(), "n\n1\n");

    // ... but a lake table never is.
    let before = stdout(&ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n FROM trajectories",
        ],
    )));
    let o = run(
        &lake,
        &[
            "sql",
            "--allow-writes",
            "INSERT INTO trajectories SELECT * FROM trajectories",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("trajectories is a lake table"),
        "{}",
        stderr(&o)
    );
    let after = stdout(&ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n FROM trajectories",
        ],
    )));
    assert_eq!(before, after);
}
