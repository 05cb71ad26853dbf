//! A build without a heavy sink's feature: every command that needs the sink
//! fails at once, naming the feature that builds it, and leaves the lake as
//! it was. (Built with the sink, its own module tests the command.)

#[allow(unused_imports)]
use crate::common::*;

/// `turnlake ARGS` on a fresh lake fails, names `feature`, and writes no lake.
#[allow(dead_code)]
fn refused(args: &[&str], feature: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let lake = tmp.path().join("lake");
    let o = run(&lake, args);
    assert!(!o.status.success(), "{args:?} succeeded:\n{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("needs the `{feature}` feature"))
            && err.contains(&format!("cargo build --features {feature}")),
        "{args:?}: {err}"
    );
    assert!(!lake.exists() || lake.read_dir().unwrap().next().is_none());
}

#[cfg(not(feature = "train"))]
#[test]
fn train_and_mix_sweep_name_the_train_feature() {
    refused(&["train", "--out", "run"], "train");
    refused(
        &["mix", "sweep", "--grid", "credit=1", "--out", "sweep"],
        "train",
    );
}

#[cfg(not(feature = "scorer"))]
#[test]
fn scorer_commands_name_the_scorer_feature() {
    for step in ["fit", "eval", "label"] {
        refused(&["scorer", step], "scorer");
    }
}

#[cfg(not(feature = "cluster"))]
#[test]
fn cluster_and_the_cluster_option_name_the_cluster_feature() {
    refused(&["cluster", "scheduler"], "cluster");
    refused(&["--cluster", "df://127.0.0.1:1", "tables"], "cluster");
}
