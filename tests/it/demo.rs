//! `turnlake demo`, the README's main job, runs every step end to end.

use crate::common::*;

#[test]
fn demo_runs_the_whole_pipeline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = bin()
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    for section in [
        "== synth",
        "== ingest albedo",
        "== credit",
        "== stats",
        "== select",
        "== mix",
        "== export sft",
        "== validate",
        "== export verl",
    ] {
        assert!(out.contains(section), "missing {section}:\n{out}");
    }
    // It ends by saying how to look at what it built.
    let serve = format!("turnlake --lake {} serve", dir.join("lake").display());
    assert!(out.contains(&serve), "{out}");
    // Each heavy sink runs when built, and is named as skipped when not.
    for (built, feature, sections) in [
        (cfg!(feature = "train"), "train", &["== train"][..]),
        (
            cfg!(feature = "scorer"),
            "scorer",
            &["== scorer eval", "== scorer score"][..],
        ),
    ] {
        let skipped = format!("skipped {feature}: this build left out the `{feature}` feature");
        assert_eq!(out.contains(&skipped), !built, "{out}");
        for section in sections {
            assert_eq!(out.contains(section), built, "{section}:\n{out}");
        }
    }
    assert!(out.contains("100.00% decode back exactly"), "{out}");
    assert!(dir.join("plots/credit_by_kind.png").exists());
    assert_eq!(
        dir.join("lake/models/checklist/report.json").exists(),
        cfg!(feature = "scorer")
    );
    assert!(dir.join("verl/manifest.json").exists());
    let jsonl = std::fs::read_to_string(dir.join("sft_mix.jsonl")).unwrap();
    assert!(jsonl.lines().count() > 10);

    // A second run reuses its own folder; a folder with other files is refused.
    assert!(bin()
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap()
        .status
        .success());
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let o = bin()
        .args(["demo", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(dir.join("notes.txt").exists());
}
