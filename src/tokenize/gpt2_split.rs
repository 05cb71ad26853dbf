//! GPT-2's pre-tokenization pattern, matched by hand.
//!
//! `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
//! needs a backtracking engine for its look-ahead, and that engine was most
//! of `validate`'s encoding time. Every character is a letter, a number,
//! white space or something else, so the pattern's matches tile the text and
//! each is decided by the character classes at its start: a contraction, an
//! optional space and a run of one class, or a run of white space that
//! leaves its last character to the word after it. The tests compare the
//! pieces with the regex's on text of every kind.

use regex::Regex;
use std::sync::LazyLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Number,
    Space,
    Other,
}

/// Each ASCII byte's class.
const ASCII: [Class; 128] = {
    let mut table = [Class::Other; 128];
    let mut b = 0;
    while b < 128 {
        table[b] = match b as u8 {
            b'A'..=b'Z' | b'a'..=b'z' => Class::Letter,
            b'0'..=b'9' => Class::Number,
            b'\t'..=b'\r' | b' ' => Class::Space,
            _ => Class::Other,
        };
        b += 1;
    }
    table
};

/// The pattern's own classes, for the rare character beyond ASCII (the
/// regex crate's Unicode tables, which the pattern's engine uses too).
static UNICODE: LazyLock<[Regex; 3]> = LazyLock::new(|| {
    [r"\A\s", r"\A\p{L}", r"\A\p{N}"].map(|p| Regex::new(p).expect("class regex"))
});

/// The class of the character at byte `at` of `text`, and its length.
fn class_at(text: &str, at: usize) -> (Class, usize) {
    let b = text.as_bytes()[at];
    if b.is_ascii() {
        return (ASCII[usize::from(b)], 1);
    }
    let c = text[at..].chars().next().expect("a character starts here");
    let rest = &text[at..at + c.len_utf8()];
    let [space, letter, number] = &*UNICODE;
    let class = if space.is_match(rest) {
        Class::Space
    } else if letter.is_match(rest) {
        Class::Letter
    } else if number.is_match(rest) {
        Class::Number
    } else {
        Class::Other
    };
    (class, c.len_utf8())
}

/// Where the run of `class` that starts at `at` ends, and where its last
/// character starts.
fn run_end(text: &str, mut at: usize, class: Class) -> (usize, usize) {
    let mut last = at;
    while at < text.len() {
        let (c, len) = class_at(text, at);
        if c != class {
            break;
        }
        last = at;
        at += len;
    }
    (at, last)
}

/// The contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`, `'d`) at `at`: its length.
fn contraction(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = bytes.get(at + 1..)?;
    if bytes[at] != b'\'' {
        return None;
    }
    match rest {
        [b's' | b't' | b'm' | b'd', ..] => Some(2),
        [b'r', b'e', ..] | [b'v', b'e', ..] | [b'l', b'l', ..] => Some(3),
        _ => None,
    }
}

/// The byte ranges GPT-2's pattern splits `text` into, in order.
pub fn pieces(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let start = at;
        let end = if let Some(len) = contraction(bytes, at) {
            at + len
        } else {
            let class = class_at(text, at).0;
            // ` ?X+`: a space joins the run of letters, numbers or other
            // characters right after it.
            let after_space = (bytes[at] == b' ' && at + 1 < text.len())
                .then(|| class_at(text, at + 1).0)
                .filter(|c| *c != Class::Space);
            match (class, after_space) {
                (_, Some(next)) => run_end(text, at + 1, next).0,
                (Class::Space, None) => {
                    // `\s+(?!\S)`, else `\s+`: a run followed by more text
                    // leaves its last character, unless that is all it has.
                    let (end, last) = run_end(text, at, Class::Space);
                    if end < text.len() && last > at {
                        last
                    } else {
                        end
                    }
                }
                (class, None) => run_end(text, at, class).0,
            }
        };
        at = end;
        Some((start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GPT2_PATTERN: &str =
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

    fn by_regex(text: &str) -> Vec<(usize, usize)> {
        let re = fancy_regex::Regex::new(GPT2_PATTERN).unwrap();
        re.find_iter(text)
            .map(|m| {
                let m = m.unwrap();
                (m.start(), m.end())
            })
            .collect()
    }

    fn check(text: &str) {
        assert_eq!(pieces(text).collect::<Vec<_>>(), by_regex(text), "{text:?}");
    }

    #[test]
    fn the_same_pieces_as_the_regex() {
        for text in [
            "",
            " ",
            "  ",
            "\n",
            "a",
            "'",
            "'s",
            "'S",
            "it's they're we've I'm you'll he'd 'tis ''ll '",
            "hello world  two   three\n\n\tx \n y",
            "x = 12345678 + 0.5e-3; y[i] += f(a, b) // ünïcödé\u{a0}nbsp\u{2028}ls",
            "THOUGHT: unicode — naïve café, 你好, emoji 🚀\n\n```bash\ncat -n x.py\n```",
            "\u{feff}bom, 漢字漢字, ̃combining, 🧑‍💻 zwj, \u{0}nul \u{7f}del \u{3000}\u{3000}x",
            "trailing   ",
            " leading",
            " 123 +-* \t\r\n",
            "Ⅻ² ³ ½ ٣ x\u{1680}y\u{85}z",
        ] {
            check(text);
        }
        check(&(0u8..=127).map(char::from).collect::<String>());
    }

    #[test]
    fn the_same_pieces_as_the_regex_on_random_text() {
        let alphabet: Vec<char> = "aZ09 _\n\t\r'.,;:-+éß漢🚀ü\u{a0}\u{300}sSrevlmdt²Ⅻ\u{3000}"
            .chars()
            .collect();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 1..400 {
            let text: String = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            check(&text);
        }
    }
}
