//! The interactive `turnlake sql` driven through a pseudo-terminal (tmux,
//! which setup.sh installs): a statement over two lines, `\d turns` with
//! the column meanings of `schemas/`, Ctrl-C cancelling a long query with
//! the shell still there, completion of a table name, and history
//! recalled after a restart.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

/// A tmux server of its own, with the shell in its one pane.
struct Pane {
    socket: PathBuf,
}

impl Pane {
    fn start(dir: &Path, lake: &Path, history: &Path) -> Pane {
        let pane = Pane {
            socket: dir.join("tmux.sock"),
        };
        let shell = format!(
            "'{}' --lake '{}' sql",
            env!("CARGO_BIN_EXE_turnlake"),
            lake.display()
        );
        let env = format!("TURNLAKE_HISTORY={}", history.display());
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "200",
            "-y",
            "60",
            "-e",
            &env,
            &shell,
        ]);
        pane.wait_for("turnlake> ");
        pane
    }

    fn tmux(&self, args: &[&str]) -> std::process::Output {
        let o = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux (run ./setup.sh)");
        assert!(o.status.success(), "tmux {args:?}: {}", stderr(&o));
        o
    }

    /// Type `text` as it is (tmux reads a trailing `;` as its own separator).
    fn type_text(&self, text: &str) {
        let escaped = text.replace(';', "\\;");
        self.tmux(&["send-keys", "-l", &escaped]);
    }

    fn key(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    fn line(&self, text: &str) {
        self.type_text(text);
        self.key("Enter");
    }

    /// Everything the pane shows, its scrollback included.
    fn screen(&self) -> String {
        stdout(&self.tmux(&["capture-pane", "-p", "-J", "-S", "-2000"]))
    }

    /// Wait until the pane shows `text` `n` times; panics with the screen after 60 s.
    fn wait_for_n(&self, text: &str, n: usize) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= n {
                return screen;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the shell never showed {text:?} {n} times:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_n(text, 1)
    }

    /// Wait until the shell has left (its pane and the server close).
    fn wait_gone(&self) {
        let started = Instant::now();
        loop {
            let alive = Command::new("tmux")
                .arg("-S")
                .arg(&self.socket)
                .arg("has-session")
                .output()
                .is_ok_and(|o| o.status.success());
            if !alive {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the shell did not leave:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// What the pane shows after the last `n_trajectories` header.
fn counted(pane: &Pane) -> String {
    let screen = pane.wait_for("| n_trajectories |");
    let (_, after) = screen.rsplit_once("| n_trajectories |").unwrap();
    after.to_string()
}

#[test]
fn the_shell_runs_statements_cancels_completes_and_remembers() {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    ok(run(
        &lake,
        &[
            "ingest",
            "mswea",
            fixtures().join("mswea").to_str().unwrap(),
        ],
    ));
    let history = tmp.path().join("history");
    let pane = Pane::start(tmp.path(), &lake, &history);

    // A statement over two lines runs when `;` ends it.
    pane.line("SELECT 1 AS a,");
    pane.line("2 AS b;");
    pane.wait_for("| 1 | 2 |");

    // \d TABLE: each column with its meaning from schemas/turns.json.
    pane.line("\\d turns");
    pane.wait_for("1-based position among the trajectory's assistant messages");

    // Ctrl-C cancels a running query; the shell stays and answers the next.
    pane.line("SELECT count(*) FROM range(1000000000000);");
    std::thread::sleep(Duration::from_millis(1500));
    pane.key("C-c");
    pane.wait_for("cancelled");
    pane.line("SELECT 40 + 2 AS answer;");
    pane.wait_for("| 42     |");

    // Tab completes a table name.
    pane.type_text("SELECT count(*) AS n_trajectories FROM trajec");
    pane.key("Tab");
    pane.line(";");
    pane.wait_for("FROM trajectories;");
    let expected = scalar(&lake, "SELECT count(*) FROM trajectories");
    let expected = format!("| {expected:<14} |");
    assert!(counted(&pane).contains(&expected), "{}", pane.screen());

    pane.line("\\q");
    pane.wait_gone();
    drop(pane);

    // A new shell recalls the last session's statements.
    let pane = Pane::start(tmp.path(), &lake, &history);
    pane.key("Up");
    pane.key("Up");
    pane.wait_for("turnlake> SELECT count(*) AS n_trajectories FROM trajectories;");
    pane.key("Enter");
    assert!(counted(&pane).contains(&expected), "{}", pane.screen());
    pane.line("\\q");
    pane.wait_gone();
}
