//! Train / validation / test split by eval run, so evaluation never sees a
//! duel the model was fit on. Runs are ordered by a seeded hash of their id
//! and dealt out by share: the same runs and seed give the same split.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

use crate::digest::sha256_hex;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    pub seed: u64,
    pub train: BTreeSet<String>,
    pub validation: BTreeSet<String>,
    pub test: BTreeSet<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Train,
    Validation,
    Test,
}

impl Split {
    /// Deal `runs` out: `test_share` to test, `validation_share` to
    /// validation (each at least one run), the rest to train. Needs 3 runs.
    pub fn by_run(
        runs: impl IntoIterator<Item = String>,
        seed: u64,
        test_share: f64,
        validation_share: f64,
    ) -> Result<Split, String> {
        let runs: BTreeSet<String> = runs.into_iter().collect();
        if runs.len() < 3 {
            return Err(format!(
                "{} eval run(s): a split by eval run needs at least 3 (train, validation, test)",
                runs.len()
            ));
        }
        let mut order: Vec<(String, String)> = runs
            .into_iter()
            .map(|r| (sha256_hex(format!("{seed}\0{r}").as_bytes()), r))
            .collect();
        order.sort();
        let n = order.len();
        let take = |share: f64| ((n as f64 * share).round() as usize).max(1);
        let n_test = take(test_share).min(n - 2);
        let n_val = take(validation_share).min(n - 1 - n_test);
        let mut split = Split {
            seed,
            train: BTreeSet::new(),
            validation: BTreeSet::new(),
            test: BTreeSet::new(),
        };
        for (i, (_, run)) in order.into_iter().enumerate() {
            if i < n_test {
                split.test.insert(run);
            } else if i < n_test + n_val {
                split.validation.insert(run);
            } else {
                split.train.insert(run);
            }
        }
        Ok(split)
    }

    /// Which part a run is in; a run the split never saw is test (unseen data).
    pub fn part(&self, run: &str) -> Part {
        if self.train.contains(run) {
            Part::Train
        } else if self.validation.contains(run) {
            Part::Validation
        } else {
            Part::Test
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_in_exactly_one_part_and_seeded() {
        let runs: Vec<String> = (0..20).map(|i| format!("run-{i}")).collect();
        let a = Split::by_run(runs.clone(), 7, 0.25, 0.15).unwrap();
        assert_eq!(
            (a.test.len(), a.validation.len(), a.train.len()),
            (5, 3, 12)
        );
        assert!(a.train.is_disjoint(&a.test) && a.train.is_disjoint(&a.validation));
        assert!(a.validation.is_disjoint(&a.test));
        assert_eq!(
            a,
            Split::by_run(runs.iter().rev().cloned(), 7, 0.25, 0.15).unwrap()
        );
        assert_ne!(a.test, Split::by_run(runs, 8, 0.25, 0.15).unwrap().test);
        let small = Split::by_run(["a".into(), "b".into(), "c".into()], 1, 0.25, 0.15).unwrap();
        assert_eq!(
            (small.test.len(), small.validation.len(), small.train.len()),
            (1, 1, 1)
        );
        assert!(Split::by_run(["a".into(), "b".into()], 1, 0.25, 0.15).is_err());
    }
}
