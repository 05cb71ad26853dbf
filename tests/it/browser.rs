//! The web app in a real browser (headless Chromium over WebDriver): the
//! list filters to a known trajectory, its page shows SQL's credit and the
//! citing question's text, an observation expands, a product row leads to
//! the mix page, the SQL box answers as `turnlake sql` and refuses a write.
//! Screenshots of the main pages are written under the test's target
//! folder (`CARGO_TARGET_TMPDIR/screenshots`).

use crate::common::*;
use crate::serve::{demo_lake, start};
use crate::webdriver::Browser;

#[test]
fn the_web_app_in_a_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let (lake, c) = demo_lake(tmp.path());
    let server = start(&lake);
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let b = Browser::start();

    // Without the token: refused. With it: the lake page, and a cookie.
    b.goto(&format!("{}/trajectories", server.base));
    assert!(b.text().contains("wrong token"), "{}", b.text());
    b.goto(&format!("{}/?token={}", server.base, server.token));
    assert!(b.find("#tables").text().contains("turn_credit"));
    b.screenshot(&shots.join("lake.png"));

    // The list, filtered through its form, leads to the known trajectory.
    b.find("nav a[href='/trajectories']").click();
    b.find("select[name=source] option[value=albedo]").click();
    let piece = c.command.split_whitespace().last().unwrap();
    b.find("#q").type_text(piece);
    b.find("#filter").click();
    let link = format!("a.traj[href*='{}']", url_part(&c.traj_id));
    b.screenshot(&shots.join("trajectories.png"));
    b.find(&link).click();
    assert_eq!(b.find("#traj_id").text(), c.traj_id);

    // The turn's credit is SQL's, beside the citing question's text.
    let turn = format!("#turn-{}", c.t);
    let credit: f64 = b.find(&format!("{turn} .credit")).text().parse().unwrap();
    assert_eq!(credit, c.credit);
    let question = b.find(&format!(
        "{turn} tr[data-question='{}'] .question_text",
        c.question_id
    ));
    assert_eq!(question.text(), c.question);
    b.screenshot(&shots.join("trajectory.png"));

    // A product row it trains opens the mix page at that row.
    b.find(&format!("{turn} a.product_row")).click();
    assert!(b.url().contains("/mix?row="), "{}", b.url());
    assert!(b.find("#chosen_row").text().contains(&c.traj_id));
    b.screenshot(&shots.join("mix.png"));

    // A long observation is folded; a click shows all of it.
    let long = stdout(&ok(run(
        &lake,
        &[
            "sql",
            "--format",
            "csv",
            "SELECT traj_id FROM messages WHERE role = 'user' AND idx > 1 \
             AND array_length(string_to_array(content, chr(10))) > 10 ORDER BY traj_id LIMIT 1",
        ],
    )));
    let long = long.lines().nth(1).expect("a long observation").to_string();
    b.goto(&format!(
        "{}/trajectory?id={}",
        server.base,
        url_part(&long)
    ));
    let full = b.find(".observation details pre.full");
    assert!(!full.displayed());
    b.find(".observation details summary").click();
    assert!(full.displayed());

    // The SQL box answers as `turnlake sql` does, and refuses a write.
    let query = "SELECT source, count(*) AS n FROM trajectories GROUP BY source ORDER BY source";
    let shell = stdout(&ok(run(&lake, &["sql", "--format", "csv", query])));
    b.find("nav a[href='/sql']").click();
    b.find("#sql").type_text(query);
    b.find("#run").click();
    let result = b.find("#result").text();
    for line in shell.lines().skip(1) {
        let (source, n) = line.split_once(',').unwrap();
        assert!(
            result.contains(&format!("{source} {n}")),
            "{source} {n} not in {result}"
        );
    }
    b.screenshot(&shots.join("sql.png"));
    b.find("#sql")
        .type_text("COPY (SELECT 1 AS x) TO '/tmp/turnlake-web-copy.csv'");
    b.find("#run").click();
    assert!(b.find("#error").text().contains("only queries run here"));
    assert!(!std::path::Path::new("/tmp/turnlake-web-copy.csv").exists());

    // The credit report's charts.
    b.find("nav a[href='/credit']").click();
    assert!(b
        .find("#credit_by_kind")
        .attribute("src")
        .unwrap()
        .starts_with("data:image/svg+xml"));
    b.screenshot(&shots.join("credit.png"));
}

/// `text` as it stands in a query string.
fn url_part(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}
