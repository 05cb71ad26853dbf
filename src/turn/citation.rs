//! Judge citations: which `CANDIDATE OUTPUT N` blocks an explanation names.
//!
//! Forms seen in real judge text: `CANDIDATE OUTPUT 3`, `CANDIDATE OUTPUTS 1-2`,
//! `CANDIDATE OUTPUTS 1-5, 7-8`, `CANDIDATE OUTPUTS 3,4,5,6,7,8`,
//! `CANDIDATE OUTPUTS 3 and 5`, and in any case (`Candidate output 8`,
//! `CANDIDATE OUTPUTs 2 and 4`, `candidate outputs 1-2`). The judge's
//! shorthand drops the `CANDIDATE` word: a bare `OUTPUT 7` / `OUTPUTS 7-8`
//! counts only in upper case, since lower-case "output 3" is ordinary prose.
//! Ranges may use `-`, `–`, `through` or `to`. A number must follow the
//! words directly, so measurement phrases (`CANDIDATE OUTPUT is measured at
//! 290 words`) cite nothing.

use regex::Regex;
use std::sync::LazyLock;

/// A range wider than this is read as a typo and clipped, so one bad
/// explanation cannot credit thousands of turns.
pub const MAX_RANGE_SPAN: u32 = 64;

const ITEM: &str = r"\d+\b(?:\s*(?i:-|–|through|to)\s*\d+\b)?";
const SEP: &str = r"(?:\s*,\s*(?i:and\s+)?|\s+(?i:and)\s+|\s*&\s*)";

static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"\b(?:(?i:candidate\s+outputs?)|OUTPUTS?)\s+({ITEM}(?:{SEP}{ITEM})*)"
    ))
    .expect("citation regex")
});
static ITEM_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\d+)(?:\s*(?i:-|–|through|to)\s*(\d+))?").expect("citation item regex")
});

/// The distinct output numbers cited in `text`, ascending.
pub fn parse_citations(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for cap in CITATION.captures_iter(text) {
        for item in ITEM_RE.captures_iter(&cap[1]) {
            let Ok(start) = item[1].parse::<u32>() else {
                continue;
            };
            let end = item
                .get(2)
                .and_then(|m| m.as_str().parse::<u32>().ok())
                .unwrap_or(start);
            let (lo, hi) = if start <= end {
                (start, end)
            } else {
                (end, start)
            };
            out.extend(lo..=hi.min(lo.saturating_add(MAX_RANGE_SPAN - 1)));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, &[u32])] = &[
            ("CANDIDATE OUTPUT 3 uses `nl -ba ... | sed -n '208,250p'` to read", &[3]),
            ("positioned by the prior grep results in CANDIDATE OUTPUTS 1-2 that located", &[1, 2]),
            ("CANDIDATE OUTPUTS 1-5, 7-8 all read files", &[1, 2, 3, 4, 5, 7, 8]),
            ("see CANDIDATE OUTPUTS 3,4,5,6,7,8.", &[3, 4, 5, 6, 7, 8]),
            ("CANDIDATE OUTPUTS 3 and 5 repeat", &[3, 5]),
            ("OUTPUTS 1-2 grep", &[1, 2]),
            ("CANDIDATE OUTPUT 7 runs sed -n '217,244p' using lines 217, 235, 240 that the grep observation in CANDIDATE OUTPUT 6 returned.", &[6, 7]),
            ("CANDIDATE OUTPUT 3, lines 208-250", &[3]),
            ("CANDIDATE OUTPUTS 2 through 4", &[2, 3, 4]),
            ("CANDIDATE OUTPUTS 4–6", &[4, 5, 6]),
            ("CANDIDATE OUTPUTS 1, 2, and 4", &[1, 2, 4]),
            ("Total CANDIDATE OUTPUT words measure 313, which is not at most 210.", &[]),
            ("The candidate never reads autode/units.py at all.", &[]),
            ("Candidate output 8 commits to the target", &[8]),
            ("Candidate Output 1 lists the tree", &[1]),
            ("CANDIDATE OUTPUTs 2 and 4 both grep", &[2, 4]),
            ("candidate outputs 1-2 locate it", &[1, 2]),
            ("Candidate outputs 1, 2, and 4 read files", &[1, 2, 4]),
            ("the edit in OUTPUT 7 follows the read in OUTPUTS 5-6", &[5, 6, 7]),
            ("OUTPUTS 7-8 rerun the test", &[7, 8]),
            ("the output 3 lines below is prose", &[]),
            ("outputs 2 and 4 in lower case without CANDIDATE are prose", &[]),
            ("CANDIDATE OUTPUT is measured at 290 words, which is at most 300", &[]),
            ("Candidate output words total 261", &[]),
            ("OUTPUT: 3 files changed", &[]),
            ("CANDIDATE OUTPUT 3.5 is not a number we cite twice", &[3]),
            ("CANDIDATE OUTPUTS 5-3 reversed", &[3, 4, 5]),
            ("CANDIDATE OUTPUTS 1-1000", &(1..=64).collect::<Vec<u32>>()),
            ("CANDIDATE OUTPUT 2 and CANDIDATE OUTPUT 2 again", &[2]),
        ];
        for (text, want) in cases {
            assert_eq!(&parse_citations(text), want, "{text:?}");
        }
    }
}
