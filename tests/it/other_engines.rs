//! The README's recipe for reading the lake with polars, Python `deltalake`
//! and DuckDB, run as written with the project venv, against a lake whose
//! last write was killed before its lake commit: each engine reads the
//! committed rows, not the newer ones.

use std::path::Path;

use crate::common::*;

/// The Python block that follows the recipe marker in README.md.
fn readme_recipe() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let after = readme
        .split("<!-- recipe: other-engines")
        .nth(1)
        .expect("the recipe marker in README.md");
    let code = after
        .split("```python\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a python block after the recipe marker");
    code.to_string()
}

#[test]
fn polars_deltalake_and_duckdb_read_the_commit_turnlake_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "albedo",
            "--no-verify",
            fixtures().join("albedo").to_str().unwrap(),
        ],
    ));
    let committed = sql(&lake, "SELECT count(*) AS n FROM turns")[0][0].clone();
    ok(run(&lake, &["snapshot", "create", "first"]));
    // Killed after writing `turns`, before the lake commit.
    let o = bin()
        .arg("--lake")
        .arg(&lake)
        .args(["ingest", "mswea"])
        .arg(fixtures().join("mswea"))
        .env("TURNLAKE_FAILPOINT", "after-table-write:turns")
        .output()
        .unwrap();
    assert!(!o.status.success());

    let latest = stdout(&ok(run(&lake, &["snapshot", "show", "--latest", "--json"])));
    // The snapshot names the same commit.
    let named = stdout(&ok(run(&lake, &["snapshot", "show", "first", "--json"])));
    assert_eq!(latest, named);
    let shown: serde_json::Value = serde_json::from_str(&latest).unwrap();
    let turns = &shown["tables"]["turns"];
    assert_eq!(turns["rows"].to_string(), committed);
    assert_eq!(turns["version"], 0, "{latest}");
    for f in turns["files"].as_array().unwrap() {
        assert!(Path::new(f.as_str().unwrap()).is_file(), "{f}");
    }

    // The recipe as the README writes it, then the newest Delta version for contrast.
    let script = tmp.path().join("recipe.py");
    std::fs::write(
        &script,
        readme_recipe() + "print(pl.read_delta(turns[\"path\"]).height)\n",
    )
    .unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_turnlake")).parent().unwrap();
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let o = venv()
        .arg(&script)
        .env("PATH", path)
        .env("TURNLAKE_LAKE", &lake)
        .output()
        .unwrap();
    let out = stdout(&ok(o));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{committed} {committed} {committed}"));
    let newest: u64 = lines[1].parse().unwrap();
    assert!(
        newest > committed.parse().unwrap(),
        "the killed write added no rows: {out}"
    );
}
