//! The generative model's parameters, read from TOML (`data/synth.toml` is
//! the default and is embedded in the binary).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::turn::CmdKind;

pub const DEFAULT_TOML: &str = include_str!("../../data/synth.toml");

/// The command kinds a generated turn can have: every kind but submit
/// (planted separately), in [`CmdKind::ALL`]'s order.
pub const KINDS: [CmdKind; CmdKind::ALL.len() - 1] = {
    let mut kinds = [CmdKind::Other; CmdKind::ALL.len() - 1];
    let (mut i, mut j) = (0, 0);
    while i < CmdKind::ALL.len() {
        if !matches!(CmdKind::ALL[i], CmdKind::Submit) {
            kinds[j] = CmdKind::ALL[i];
            j += 1;
        }
        i += 1;
    }
    kinds
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Model {
    pub turn_decay: f64,
    pub fail_factor: f64,
    pub repeat_rate: f64,
    pub mini_repeat_rate: f64,
    pub malformed_rate: f64,
    pub think_unclosed_rate: f64,
    pub long_output_rate: f64,
    pub looped_side_rate: f64,
    pub submit_last_rate: f64,
    pub verified_rate: f64,
    pub yes_uncited_min: f64,
    pub yes_uncited_max: f64,
    pub blame_rate: f64,
    pub questions_min: u32,
    pub economy_questions_min: u32,
    pub economy_questions_max: u32,
    pub economy_flip: f64,
    pub cut_max: u32,
    pub scored_per_side: u32,
    pub mini_turns_min: u32,
    pub mini_turns_max: u32,
    pub mini_submit_rate: f64,
    pub mswea_turns_min: u32,
    pub mswea_turns_max: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    pub mix: BTreeMap<String, f64>,
    pub fail: BTreeMap<String, f64>,
    pub earn: BTreeMap<String, f64>,
    pub extra_citations: BTreeMap<String, f64>,
    pub model: Model,
    /// A mixture effect for `mix sweep` to find (off unless the file turns it on).
    #[serde(default, skip_serializing_if = "Plant::is_off")]
    pub plant: Plant,
}

/// A planted mixture effect, so tests know the answer `mix sweep` should
/// give. With `mixture`, two dialects of thought (text::Dialect) are planted:
/// a fluent side (a share of the Albedo sides, drawn at random) thinks in
/// either one, a turn at a time, and the judge finds it diligent and every
/// other side not, so the credit rows, gated on the judge's score, are
/// nearly all fluent; the mini-coder runs where a command repeats the one
/// before (escape_mini's) think in the first dialect, every other run
/// (finish_mini's) in the second. The held-out credit rows are then learned
/// best from escape_mini and finish_mini half and half (either alone leaves
/// one dialect unseen), and within escape_duel from the rows of the sides
/// the judge scored highest, which a score-ranked selection takes first.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Plant {
    #[serde(default)]
    pub mixture: bool,
}

impl Plant {
    pub fn is_off(&self) -> bool {
        *self == Plant::default()
    }
}

/// Per-kind parameters in `KINDS` order.
#[derive(Debug, Clone)]
pub struct KindTable {
    pub mix: [f64; 9],
    pub fail: [f64; 9],
    pub earn: [f64; 9],
    pub extra: [f64; 9],
}

impl Params {
    pub fn from_toml(text: &str) -> Result<Params, String> {
        let p: Params = toml::from_str(text).map_err(|e| e.to_string())?;
        p.kinds()?;
        Ok(p)
    }

    pub fn default_params() -> Params {
        Params::from_toml(DEFAULT_TOML).expect("data/synth.toml is valid")
    }

    pub fn kinds(&self) -> Result<KindTable, String> {
        let get = |m: &BTreeMap<String, f64>, table: &str, k: CmdKind| {
            m.get(k.as_str())
                .copied()
                .ok_or_else(|| format!("[{table}] has no entry for {:?}", k.as_str()))
        };
        let mut t = KindTable {
            mix: [0.0; 9],
            fail: [0.0; 9],
            earn: [0.0; 9],
            extra: [0.0; 9],
        };
        for (i, k) in KINDS.iter().enumerate() {
            t.mix[i] = get(&self.mix, "mix", *k)?;
            t.fail[i] = get(&self.fail, "fail", *k)?;
            t.earn[i] = get(&self.earn, "earn", *k)?;
            t.extra[i] = get(&self.extra_citations, "extra_citations", *k)?;
        }
        Ok(t)
    }
}
