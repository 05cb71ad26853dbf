//! The pages' templates (embedded, HTML-escaped by minijinja) and the text
//! shaping they need: a message split around its code blocks, an
//! observation folded past a few lines.

use axum::http::StatusCode;
use minijinja::Environment;
use serde::Serialize;

const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../../data/web/base.html")),
    ("lake.html", include_str!("../../data/web/lake.html")),
    (
        "trajectories.html",
        include_str!("../../data/web/trajectories.html"),
    ),
    (
        "trajectory.html",
        include_str!("../../data/web/trajectory.html"),
    ),
    ("mix.html", include_str!("../../data/web/mix.html")),
    ("sql.html", include_str!("../../data/web/sql.html")),
    ("credit.html", include_str!("../../data/web/credit.html")),
];

pub fn templates() -> Environment<'static> {
    let mut env = Environment::new();
    for (name, text) in TEMPLATES {
        env.add_template(name, text)
            .expect("the embedded templates parse");
    }
    env
}

/// A page for an error, without templates (the error may be theirs).
pub fn error_page(status: StatusCode, message: &str) -> String {
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>turnlake: {status}</title>\
         <p><a href=\"/\">turnlake</a></p><h1>{status}</h1><pre id=\"error\">{}</pre>",
        escape(message)
    )
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A stretch of a message: prose, or the inside of a fenced code block
/// (`lang` its info string, "bash" for the action).
#[derive(Debug, Serialize, PartialEq)]
pub struct Segment {
    pub text: String,
    pub lang: Option<String>,
}

/// `content` split around its fenced code blocks (an unclosed fence runs to
/// the end). The fences are ASCII, so every cut is at a character boundary.
pub fn segments(content: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = content;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let Some(eol) = after.find('\n') else { break };
        if open > 0 {
            out.push(Segment {
                text: rest[..open].to_string(),
                lang: None,
            });
        }
        let lang = after[..eol].trim().to_string();
        let body = &after[eol + 1..];
        let (code, next) = match body.find("```") {
            Some(close) => (&body[..close], &body[close + 3..]),
            None => (body, ""),
        };
        out.push(Segment {
            text: code.strip_suffix('\n').unwrap_or(code).to_string(),
            lang: Some(lang),
        });
        rest = next;
    }
    if !rest.is_empty() {
        out.push(Segment {
            text: rest.to_string(),
            lang: None,
        });
    }
    out
}

/// An observation as a page shows it: its first lines, and how many more
/// the expanded view holds.
#[derive(Debug, Serialize, PartialEq)]
pub struct Folded {
    pub head: String,
    pub full: String,
    pub more_lines: usize,
}

pub fn fold(text: &str, lines: usize) -> Folded {
    let total = text.lines().count();
    Folded {
        head: text.lines().take(lines).collect::<Vec<_>>().join("\n"),
        full: text.to_string(),
        more_lines: total.saturating_sub(lines),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_around_its_bash_block() {
        let s = segments("THOUGHT: read é first.\n\n```bash\ncat -n a.py\n```\nafter");
        assert_eq!(
            s,
            vec![
                Segment {
                    text: "THOUGHT: read é first.\n\n".into(),
                    lang: None
                },
                Segment {
                    text: "cat -n a.py".into(),
                    lang: Some("bash".into())
                },
                Segment {
                    text: "\nafter".into(),
                    lang: None
                },
            ]
        );
        let open = segments("x ```bash\nls");
        assert_eq!(open[1].text, "ls");
        assert_eq!(segments("no fence ``` here").len(), 1);
    }

    #[test]
    fn an_observation_folds_past_its_first_lines() {
        let f = fold("1\n2\n3\n4", 2);
        assert_eq!((f.head.as_str(), f.more_lines), ("1\n2", 2));
        assert_eq!(fold("1", 2).more_lines, 0);
    }

    #[test]
    fn templates_parse_and_error_pages_escape() {
        templates();
        assert!(error_page(StatusCode::NOT_FOUND, "<script>").contains("&lt;script&gt;"));
    }
}
