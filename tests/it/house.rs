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
