//! The reproduction table: each figure the reference pipeline publishes
//! (`data/reference.toml`, from mission.md) beside the lake's own figure and
//! their difference, plus, for a synthetic corpus, the figure as planted.
//! `stats`, `select`, `mix` and `validate` each fill the part they compute.

use comfy_table::Table;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::sync::LazyLock;

pub const REFERENCE_TOML: &str = include_str!("../../data/reference.toml");

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Count,
    /// Stored in percent (19.2 means 19.2%); differences are percentage points.
    Percent,
    Number,
}

#[derive(Debug, Clone, Deserialize)]
struct ReferenceFigure {
    key: String,
    label: String,
    value: f64,
    unit: Unit,
}

#[derive(Debug, Deserialize)]
struct ReferenceFile {
    figure: Vec<ReferenceFigure>,
}

static REFERENCE: LazyLock<Vec<ReferenceFigure>> = LazyLock::new(|| {
    toml::from_str::<ReferenceFile>(REFERENCE_TOML)
        .expect("data/reference.toml is valid")
        .figure
});

/// The reference value of `key`, if the reference publishes one.
pub fn reference(key: &str) -> Option<f64> {
    REFERENCE.iter().find(|f| f.key == key).map(|f| f.value)
}

/// One row of the table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figure {
    pub key: String,
    pub label: String,
    pub unit: Unit,
    pub lake: Option<f64>,
    pub reference: Option<f64>,
    /// lake - reference (percentage points for percentages).
    pub diff: Option<f64>,
    /// The figure as planted in a synthetic corpus, when its truth was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planted: Option<f64>,
}

/// The figures one step reports, in order.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Reproduction {
    pub title: String,
    pub figures: Vec<Figure>,
    /// How an ambiguous definition was read, said once under the table.
    pub notes: Vec<String>,
}

impl Reproduction {
    pub fn new(title: &str) -> Reproduction {
        Reproduction {
            title: title.to_string(),
            ..Default::default()
        }
    }

    /// A figure the reference publishes under `key` (data/reference.toml).
    pub fn add(&mut self, key: &str, lake: Option<f64>) -> &mut Figure {
        let r = REFERENCE
            .iter()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("data/reference.toml has no figure {key}"));
        self.push(key, &r.label.clone(), r.unit, lake, Some(r.value))
    }

    /// A figure the reference does not publish, shown for completeness.
    pub fn add_own(
        &mut self,
        key: &str,
        label: &str,
        unit: Unit,
        lake: Option<f64>,
    ) -> &mut Figure {
        self.push(key, label, unit, lake, None)
    }

    fn push(
        &mut self,
        key: &str,
        label: &str,
        unit: Unit,
        lake: Option<f64>,
        reference: Option<f64>,
    ) -> &mut Figure {
        let lake = lake.filter(|v| v.is_finite());
        self.figures.push(Figure {
            key: key.to_string(),
            label: label.to_string(),
            unit,
            lake,
            reference,
            diff: lake.zip(reference).map(|(l, r)| l - r),
            planted: None,
        });
        self.figures.last_mut().expect("just pushed")
    }

    pub fn note(&mut self, text: &str) {
        self.notes.push(text.to_string());
    }

    /// Set the planted value of `key` (ignored when the table lacks it).
    pub fn plant(&mut self, key: &str, planted: Option<f64>) {
        if let Some(f) = self.figures.iter_mut().find(|f| f.key == key) {
            f.planted = planted.filter(|v| v.is_finite());
        }
    }

    pub fn get(&self, key: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.key == key)
    }

    fn has_planted(&self) -> bool {
        self.figures.iter().any(|f| f.planted.is_some())
    }

    /// Header and display rows.
    /// The table as header and formatted rows (the terminal, markdown and the web app draw it).
    pub fn rows(&self) -> (Vec<&'static str>, Vec<Vec<String>>) {
        let mut header = vec!["figure", "lake", "reference", "lake - reference"];
        let planted = self.has_planted();
        if planted {
            header.push("planted");
        }
        let rows = self
            .figures
            .iter()
            .map(|f| {
                let mut row = vec![
                    f.label.clone(),
                    show(f.lake, f.unit),
                    show(f.reference, f.unit),
                    show_diff(f.diff, f.unit),
                ];
                if planted {
                    row.push(show(f.planted, f.unit));
                }
                row
            })
            .collect();
        (header, rows)
    }

    pub fn render_table<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        let (header, rows) = self.rows();
        let mut t = Table::new();
        t.load_preset(comfy_table::presets::ASCII_FULL_CONDENSED);
        t.set_header(header);
        for r in rows {
            t.add_row(r);
        }
        writeln!(w, "{}\n{t}", self.title)?;
        for n in &self.notes {
            writeln!(w, "  note: {n}")?;
        }
        writeln!(w)
    }

    pub fn render_markdown<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        let (header, rows) = self.rows();
        writeln!(
            w,
            "## {}\n\n| {} |\n|{}|",
            self.title,
            header.join(" | "),
            header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
        )?;
        for r in rows {
            writeln!(w, "| {} |", r.join(" | "))?;
        }
        for n in &self.notes {
            writeln!(w, "\n_{n}_")?;
        }
        writeln!(w)
    }
}

fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

fn show(v: Option<f64>, unit: Unit) -> String {
    match v {
        None => "—".into(),
        Some(x) => match unit {
            Unit::Count if x.fract() == 0.0 => group_thousands(x as i64),
            Unit::Count | Unit::Number => format!("{x:.3}"),
            Unit::Percent => format!("{x:.1}%"),
        },
    }
}

fn show_diff(v: Option<f64>, unit: Unit) -> String {
    match v {
        None => "—".into(),
        Some(x) => {
            let sign = if x > 0.0 { "+" } else { "" };
            match unit {
                Unit::Percent => format!("{sign}{x:.1} pp"),
                _ => format!("{sign}{}", show(Some(x), unit)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reference_key_is_unique_and_figures_pair_up() {
        let mut keys: Vec<&str> = REFERENCE.iter().map(|f| f.key.as_str()).collect();
        let n = keys.len();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), n, "duplicate keys in data/reference.toml");

        let mut r = Reproduction::new("t");
        r.add("stats.failed_own", Some(21.3));
        r.add("select.escape_duel.rows", Some(14000.0));
        r.add_own("x", "own figure", Unit::Count, Some(3.0));
        r.plant("stats.failed_own", Some(21.0));
        let f = r.get("stats.failed_own").unwrap();
        assert_eq!(f.reference, Some(19.2));
        assert!((f.diff.unwrap() - 2.1).abs() < 1e-9);
        let mut out = Vec::new();
        r.render_table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for want in [
            "21.3%", "19.2%", "+2.1 pp", "14,000", "13,979", "+21", "planted", "21.0%",
        ] {
            assert!(text.contains(want), "{want} in\n{text}");
        }
        assert_eq!(r.get("x").unwrap().diff, None);
    }
}
