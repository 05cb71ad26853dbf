//! The house rules a reader relies on, checked on the source tree.

use std::path::Path;

/// `cmd/` is a pure adapter under the parser: no command module reaches
/// back into `cli` (the argument types commands share live in `cmd`).
#[test]
fn no_command_module_imports_the_parser() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    let mut offenders = Vec::new();
    for entry in walkdir::WalkDir::new(&dir).into_iter().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(path).unwrap();
            if text.contains("crate::cli") || text.contains("super::cli") {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(offenders.is_empty(), "import cli: {offenders:?}");
}

/// The layer order `docs/architecture.md` states, bottom first: the names
/// in its fenced `layers` block, one per line (text after a `#` is a note).
fn stated_layers() -> Vec<String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md"))
            .unwrap();
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/architecture.md has a ```layers block");
    block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The top-level modules a source file names through `crate::`, including
/// each name of a `use crate::{a, b::c}` group. Comment lines are skipped:
/// a doc link is not a dependency.
fn crate_modules_named(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Names at the group's first depth: after its `{` and each `,`.
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                if item_start && depth == 1 && !c.is_whitespace() {
                    names.push(ident(&group[i..]));
                    item_start = false;
                }
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => break,
                    '}' => depth -= 1,
                    ',' if depth == 1 => item_start = true,
                    _ => {}
                }
            }
        } else {
            names.push(ident(rest));
        }
    }
    names.retain(|n| !n.is_empty() && n != "self");
    names
}

/// No module uses one above it in the stated order, and every top-level
/// module of `src/` has a place in it.
#[test]
fn no_module_imports_a_layer_above_it() {
    let layers = stated_layers();
    let rank = |m: &str| layers.iter().position(|l| l == m);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    for entry in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = top.trim_end_matches(".rs").to_string();
        // The binaries sit above every layer; lib.rs only declares the modules.
        if ["bin", "main", "lib"].contains(&top.as_str()) {
            continue;
        }
        let Some(own) = rank(&top) else {
            offenders.push(format!(
                "{top} has no place in docs/architecture.md's layers"
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for used in crate_modules_named(&text) {
            match rank(&used) {
                Some(r) if r <= own => {}
                Some(_) => offenders.push(format!(
                    "{} uses crate::{used}, a layer above {top}",
                    rel.display()
                )),
                None => offenders.push(format!(
                    "{} uses crate::{used}, which has no layer",
                    rel.display()
                )),
            }
        }
    }
    offenders.sort();
    offenders.dedup();
    assert!(offenders.is_empty(), "{}", offenders.join("\n"));
}

#[test]
fn a_use_group_names_each_module_it_imports() {
    let text = "use crate::{lake::{Lake, LakeError}, turn, engine::x};\nlet _ = crate::udf::all();\n// crate::cli in a comment\n";
    assert_eq!(crate_modules_named(text), ["lake", "turn", "engine", "udf"]);
}

/// Command kinds have one home, `turn::CmdKind`: every kind the SQL names
/// (`cmd_kind = '…'`, `cmd_kind IN ('…', …)`) is one of its labels, so a
/// renamed kind cannot leave a query counting nothing.
#[test]
fn every_command_kind_the_sql_names_is_a_cmd_kind() {
    let labels: Vec<&str> = turnlake::turn::CmdKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    let compared = regex::Regex::new(r"cmd_kind\s*(?:=|<>|!=)\s*'([^']*)'").unwrap();
    let listed = regex::Regex::new(r"cmd_kind\s+(?:NOT\s+)?IN\s*\(([^)]*)\)").unwrap();
    let quoted = regex::Regex::new(r"'([^']*)'").unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let (mut named, mut strays) = (0, Vec::new());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut kinds: Vec<String> = compared
            .captures_iter(&text)
            .map(|c| c[1].to_string())
            .collect();
        for list in listed.captures_iter(&text) {
            kinds.extend(quoted.captures_iter(&list[1]).map(|c| c[1].to_string()));
        }
        named += kinds.len();
        strays.extend(
            kinds
                .into_iter()
                .filter(|k| !labels.contains(&k.as_str()))
                .map(|k| format!("{}: {k:?}", path.display())),
        );
    }
    assert!(
        named > 10,
        "the SQL names {named} kinds: the patterns no longer match it"
    );
    assert!(strays.is_empty(), "not a CmdKind: {strays:?}");
}
