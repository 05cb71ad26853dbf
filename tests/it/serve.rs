//! `turnlake serve` over HTTP: the token rule, the lake page, the
//! trajectory list's filters and a trajectory page whose credit is SQL's.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use crate::common::*;

/// A running `serve`, stopped when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `serve` on a free loopback port over `lake`; its URL from the line it prints.
pub fn start(lake: &Path) -> Server {
    let mut child = bin()
        .arg("--lake")
        .arg(lake)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start turnlake serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    let (base, token) = url.split_once("/?token=").unwrap();
    Server {
        child,
        base: base.to_string(),
        token: token.to_string(),
    }
}

/// GET `path` (with the token cookie when `token` is given): status and body.
pub fn get(server: &Server, path: &str, token: Option<&str>) -> (u16, String) {
    let (status, body) = get_bytes(server, path, token);
    (status, String::from_utf8(body).expect("a UTF-8 page"))
}

pub fn get_bytes(server: &Server, path: &str, token: Option<&str>) -> (u16, Vec<u8>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut req = reqwest::Client::new().get(format!("{}{path}", server.base));
        if let Some(t) = token {
            req = req.header("Cookie", format!("turnlake_token={t}"));
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.bytes().await.unwrap().to_vec())
    })
}

/// The SQL page's path for `sql` (and `extra` parameters).
fn sql_path(sql: &str, extra: &[(&str, &str)]) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("q", sql);
    for (k, v) in extra {
        q.append_pair(k, v);
    }
    format!("/sql?{}", q.finish())
}

/// The text of the first element after `marker` in `html`, tags dropped.
fn text_after(html: &str, marker: &str) -> Option<String> {
    let at = html.find(marker)? + marker.len();
    let rest = &html[at..];
    let end = rest.find('<')?;
    Some(rest[..end].to_string())
}

/// A credited turn of the demo lake, as SQL sees it, with one question citing it.
pub struct Credited {
    pub traj_id: String,
    pub t: i64,
    pub credit: f64,
    pub command: String,
    pub question_id: String,
    pub question: String,
}

/// A small lake with credit and products, and a credited turn of it that the mix trains.
pub fn demo_lake(root: &Path) -> (std::path::PathBuf, Credited) {
    let corpus = root.join("corpus");
    synth_corpus(&corpus, 5, (2, 8, 60, 2), None);
    let lake = root.join("lake");
    ingest_corpus(&lake, &corpus);
    for step in ["credit", "select", "mix"] {
        ok(run(&lake, &[step]));
    }
    let o = ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "json",
            "SELECT c.traj_id, c.t, c.credit, t.command, q.question_id, q.text \
             FROM turn_credit c \
             JOIN turns t ON t.traj_id = c.traj_id AND t.t = c.t \
             JOIN credit_citations cc ON cc.traj_id = c.traj_id AND cc.t = c.t AND cc.valid AND cc.answer = 1 \
             JOIN questions q ON q.eval_run_id = cc.eval_run_id AND q.sample_id = cc.sample_id \
               AND q.question_id = cc.question_id \
             JOIN sft_mix m ON m.traj_id = c.traj_id AND array_has(m.train_turns, c.t) \
             WHERE c.credit > 0 AND t.command IS NOT NULL \
             ORDER BY c.credit DESC, c.traj_id, c.t, q.question_id LIMIT 1",
        ],
    ));
    let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &rows[0];
    let text = |k: &str| {
        r[k].as_str()
            .unwrap_or_else(|| panic!("{k}: {r}"))
            .to_string()
    };
    let credited = Credited {
        traj_id: text("traj_id"),
        t: r["t"].as_i64().unwrap(),
        credit: r["credit"].as_f64().unwrap(),
        command: text("command"),
        question_id: text("question_id"),
        question: text("text"),
    };
    (lake, credited)
}

/// `html`'s text with the escapes the templates write undone.
fn unescape(html: &str) -> String {
    html.replace("&#x2f;", "/")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[test]
fn serve_needs_its_token_and_shows_a_trajectory_with_sqls_credit() {
    let tmp = tempfile::tempdir().unwrap();
    let (lake, c) = demo_lake(tmp.path());
    let (traj, t, credit) = (c.traj_id.clone(), c.t, c.credit);
    ok(run(&lake, &["validate"]));
    let server = start(&lake);

    // No token, a wrong one: refused. The printed one: the lake page.
    assert_eq!(get(&server, "/", None).0, 403);
    assert_eq!(get(&server, "/", Some("0123")).0, 403);
    let (status, page) = get(&server, &format!("/?token={}", server.token), None);
    assert_eq!(status, 200, "{page}");
    for table in ["trajectories", "turn_credit", "sft_mix"] {
        assert!(page.contains(&format!("<td>{table}</td>")), "{table}");
    }
    let token = Some(server.token.as_str());

    // Two lake commits compared, as `snapshot diff` does: the first
    // ingest's commit and a snapshot of the built lake.
    ok(run(&lake, &["snapshot", "create", "built"]));
    let (status, page) = get(&server, "/?a=0&b=built", token);
    assert_eq!(status, 200, "{page}");
    let diff = &page[page.find("id=\"diff\"").expect("a diff table")..];
    assert!(
        diff.contains("<td>sft_mix</td><td class=\"num\">—</td>"),
        "{diff}"
    );
    assert!(diff.contains("<td>new</td>"), "{diff}");
    assert_eq!(get(&server, "/?a=0&b=nosuch", token).0, 400);

    // The list filtered by source, looped and a piece of the turn's command
    // holds the trajectory; a filter it fails leaves it out.
    let piece = c.command.split_whitespace().last().unwrap();
    let query = |extra: &str| {
        let q = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("source", "albedo")
            .append_pair("looped", "no")
            .append_pair("q", piece)
            .finish();
        format!("/trajectories?{q}{extra}")
    };
    let (status, list) = get(&server, &query(""), token);
    assert_eq!(status, 200, "{list}");
    let shown = traj.replace('/', "&#x2f;");
    assert!(list.contains(&shown), "{traj} not in\n{list}");
    let (_, none) = get(&server, &query("&score_min=2"), token);
    assert!(!none.contains(&shown) && none.contains("No trajectory matches"));
    assert_eq!(get(&server, &query("&score_min=high"), token).0, 400);

    // Its page: the turn's credit is SQL's, its command is in a bash block,
    // and the other side of the sample is linked.
    let link = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("id", &traj)
        .finish();
    let (status, page) = get(&server, &format!("/trajectory?{link}"), token);
    assert_eq!(status, 200, "{page}");
    let section = &page[page.find(&format!("id=\"turn-{t}\"")).unwrap()..];
    let shown_credit: f64 = text_after(section, "<span class=\"credit\">")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(shown_credit, credit);
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains("<pre class=\"bash\">"));
    assert!(page.contains("id=\"other_side\""));
    // The citing question's text, and the judge's answer, beside the turn.
    let row = &section[section
        .find(&format!("data-question=\"{}\"", c.question_id))
        .unwrap_or_else(|| panic!("{} not in {section}", c.question_id))..];
    let question = text_after(row, "<td class=\"question_text\">").unwrap();
    assert_eq!(unescape(&question), c.question);
    // A product row it trains leads to the mix page, showing that row.
    let link = text_after(section, "class=\"product_row\" href=\"")
        .map(|rest| unescape(rest.split('"').next().unwrap()));
    let link = link.expect("the credited turn trains a product row");
    let (status, mix) = get(&server, &link, token);
    assert_eq!(status, 200, "{mix}");
    assert!(mix.contains("id=\"chosen_row\"") && mix.contains("id=\"mixes\""));
    // With the last validation's summary: the current sft_mix, nothing left out.
    let validation = &mix[mix
        .find("<table id=\"validation\">")
        .expect("a validation summary")..];
    assert!(validation.contains("(the current one)"), "{validation}");
    assert!(
        validation.contains("<th>rows left out (failing or over the limit)</th><td>0</td>"),
        "{validation}"
    );
    assert_eq!(get(&server, "/trajectory?id=nope", token).0, 404);
}

#[test]
fn the_sql_page_answers_as_turnlake_sql_does_and_cannot_write_or_reach_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (lake, _) = demo_lake(tmp.path());
    let server = start(&lake);
    let token = Some(server.token.as_str());
    let query = "SELECT source, count(*) AS n FROM trajectories GROUP BY source ORDER BY source";

    // The page's table and its CSV download hold what `turnlake sql` gives.
    let shell = stdout(&ok(run(&lake, &["sql", "--format", "csv", query])));
    let (status, csv) = get(&server, &sql_path(query, &[("format", "csv")]), token);
    assert_eq!(status, 200, "{csv}");
    assert_eq!(csv, shell);
    let (status, page) = get(&server, &sql_path(query, &[]), token);
    assert_eq!(status, 200, "{page}");
    let table = &page[page.find("id=\"result\"").expect("a result table")..];
    for line in shell.lines().skip(1) {
        let (source, n) = line.split_once(',').unwrap();
        assert!(
            table.contains(&format!("<td>{source}</td><td>{n}</td>")),
            "{source} {n} not in {table}"
        );
    }
    let (status, parquet) = get_bytes(&server, &sql_path(query, &[("format", "parquet")]), token);
    assert_eq!(status, 200);
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));

    // Nothing that writes or defines: not a copy out, not a table over a
    // file beyond the lake, not an insert.
    let outside = tmp.path().join("copied.csv");
    for statement in [
        format!("COPY (SELECT 1 AS x) TO '{}'", outside.display()),
        "CREATE EXTERNAL TABLE leak STORED AS CSV LOCATION '/etc/passwd'".to_string(),
        "INSERT INTO trajectories SELECT * FROM trajectories".to_string(),
    ] {
        let (status, page) = get(&server, &sql_path(&statement, &[]), token);
        assert_eq!(status, 400, "{statement}: {page}");
        assert!(
            page.contains("only queries run here"),
            "{statement}: {page}"
        );
    }
    assert!(!outside.exists());
    // Two statements, a query that fails: said, not run.
    assert_eq!(
        get(&server, &sql_path("SELECT 1; SELECT 2", &[]), token).0,
        400
    );
    let (status, page) = get(
        &server,
        &sql_path("SELECT nope FROM trajectories", &[]),
        token,
    );
    assert!(status >= 400 && page.contains("nope"), "{status} {page}");

    // The credit report's page draws its charts as SVG.
    let (status, page) = get(&server, "/credit", token);
    assert_eq!(status, 200, "{page}");
    let page = unescape(&page);
    assert!(page.contains("id=\"credit_by_kind\" alt=\"mean credit by command kind\" src=\"data:image/svg+xml;base64,"));
    assert!(page.contains("id=\"exposure_bias\" alt=\"exposure bias"));
    assert!(page.contains("id=\"reproduction\""));
}

#[test]
fn a_lake_holding_only_rejects_says_so_on_the_trajectory_list() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("runs.jsonl");
    std::fs::write(&input, "{\"messages\": []}\n").unwrap();
    let lake = tmp.path().join("lake");
    let ingest = run(&lake, &["ingest", "mini-coder", input.to_str().unwrap()]);
    let rejects = stdout(&ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT count(*) AS n FROM rejects",
        ],
    )));
    assert_eq!(rejects.lines().nth(1), Some("1"), "{}", stderr(&ingest));
    let server = start(&lake);
    let (status, page) = get(&server, "/trajectories", Some(server.token.as_str()));
    assert_eq!(status, 404, "{page}");
    assert!(page.contains("no trajectories yet"), "{page}");
}
