//! `turnlake show TRAJ_ID | --sample-id ID --side SIDE [--format table|json|traj.json]`:
//! one trajectory, turn by turn, with what the pipeline made of it. Colour
//! on a terminal, plain when piped.

use clap::{Args, ValueEnum};
use comfy_table::{Cell, Color, Table};
use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cmd::LakeArg;
use crate::pipeline::show::{show, TrajectoryView, TurnView, Which};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ShowFormat {
    Table,
    Json,
    /// A mini-swe-agent trajectory file (for `mini-extra inspector`).
    #[value(name = "traj.json")]
    TrajJson,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The trajectory's traj_id (see `turnlake sql "SELECT traj_id FROM trajectories"`).
    #[arg(required_unless_present = "sample_id")]
    pub traj_id: Option<String>,
    /// An Albedo sample_id; with --side, shows that side.
    #[arg(long, requires = "side", conflicts_with = "traj_id")]
    pub sample_id: Option<String>,
    /// previous_king or challenger.
    #[arg(long)]
    pub side: Option<String>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: ShowFormat,
}

/// At most `n` characters of the command's first line.
fn clip(text: &str, n: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(n).collect();
    if line.chars().count() > n || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

fn observation(t: &TurnView) -> (String, Option<Color>) {
    match (t.obs_failed, t.returncode) {
        (None, _) => ("—".into(), None),
        (Some(true), Some(rc)) => (format!("FAILED ({rc})"), Some(Color::Red)),
        (Some(true), None) => ("FAILED".into(), Some(Color::Red)),
        (Some(false), _) => ("ok".into(), None),
    }
}

fn flags(t: &TurnView) -> String {
    let mut f = Vec::new();
    if t.is_repeat {
        f.push("repeat");
    }
    if t.repeats_prev {
        f.push("= prev");
    }
    if t.after_repeat_run {
        f.push("after run");
    }
    if let Some(s) = &t.submit_signal {
        f.push(match s.as_str() {
            "command" => "submit (command)",
            "observation" => "submit (observation)",
            _ => "submit (exit)",
        });
    }
    f.join(", ")
}

pub fn render(v: &TrajectoryView, colour: bool) -> String {
    let paint = |cell: Cell, c: Option<Color>| match (colour, c) {
        (true, Some(c)) => cell.fg(c),
        _ => cell,
    };
    let mut head = Table::new();
    head.load_preset(comfy_table::presets::ASCII_BORDERS_ONLY_CONDENSED);
    head.add_row(vec!["traj_id", v.traj_id.as_str()]);
    for (k, val) in &v.facts {
        head.add_row(vec![k.as_str(), val.as_str()]);
    }
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "t",
        "N",
        "kind",
        "command",
        "observation",
        "flags",
        "credit",
        "blame",
        "cited by (yes)",
        "blamed by (no)",
        "trains in",
    ]);
    for turn in &v.turns {
        let (obs, obs_colour) = observation(turn);
        let earned = turn.credit.is_some_and(|c| c > 0.0);
        let num = |x: Option<f64>| x.map_or("—".into(), |x| format!("{x:.2}"));
        t.add_row(vec![
            Cell::new(turn.t),
            Cell::new(turn.candidate_n.map_or("".into(), |n| n.to_string())),
            Cell::new(&turn.cmd_kind),
            Cell::new(
                turn.command
                    .as_deref()
                    .map_or("(no bash block)".into(), |c| clip(c, 48)),
            ),
            paint(Cell::new(obs), obs_colour),
            Cell::new(flags(turn)),
            paint(Cell::new(num(turn.credit)), earned.then_some(Color::Green)),
            paint(
                Cell::new(num(turn.blame)),
                turn.blame.is_some_and(|b| b > 0.0).then_some(Color::Yellow),
            ),
            Cell::new(turn.cited_by.join(" ")),
            Cell::new(turn.blamed_by.join(" ")),
            paint(
                Cell::new(turn.trained_in.join("\n")),
                (!turn.trained_in.is_empty()).then_some(Color::Cyan),
            ),
        ]);
    }
    if !colour {
        t.force_no_tty();
        head.force_no_tty();
    }
    format!("{head}\n{t}")
}

/// The local scorer's answers beside the judge's, one row per question.
fn render_answers(answers: &[crate::scorer::jobs::SideAnswer]) -> String {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
    t.set_header(vec![
        "question",
        "tag",
        "judge",
        "scorer P(yes)",
        "scorer",
        "agree",
    ]);
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    for a in answers {
        let judge = a.judge.map(|j| j == 1);
        t.add_row(vec![
            a.question_id.clone(),
            a.tag.clone().unwrap_or_default(),
            judge.map_or("—".into(), |j| yes_no(j).to_string()),
            format!("{:.3}", a.p_yes),
            yes_no(a.predicted).to_string(),
            judge.map_or("".into(), |j| {
                if j == a.predicted { "✓" } else { "✗" }.to_string()
            }),
        ]);
    }
    t.force_no_tty();
    format!("judge's answers and the local scorer's:\n{t}")
}

pub async fn run(lake: &LakeArg, args: ShowArgs) -> anyhow::Result<ExitCode> {
    let which = match (&args.traj_id, &args.sample_id, &args.side) {
        (Some(id), _, _) => Which::TrajId(id.clone()),
        (None, Some(sample_id), Some(side)) => Which::Side {
            sample_id: sample_id.clone(),
            side: side.clone(),
        },
        _ => anyhow::bail!("give a traj_id, or --sample-id with --side"),
    };
    let lake = lake.open().await?;
    let view = show(&lake, &which).await?;
    if args.format == ShowFormat::TrajJson {
        let file = crate::pipeline::show::trajectory_file(&lake, &view.traj_id).await?;
        println!("{}", serde_json::to_string_pretty(&file)?);
        return Ok(ExitCode::SUCCESS);
    }
    let answers = crate::scorer::jobs::side_answers(&lake, &view.traj_id).await?;
    match args.format {
        ShowFormat::Json => {
            let mut value = serde_json::to_value(&view)?;
            value["answers"] = serde_json::to_value(&answers)?;
            println!("{}", serde_json::to_string_pretty(&value)?)
        }
        ShowFormat::TrajJson => unreachable!("written above"),
        ShowFormat::Table => {
            println!("{}", render(&view, std::io::stdout().is_terminal()));
            if let Some(answers) = &answers {
                println!("{}", render_answers(answers));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
