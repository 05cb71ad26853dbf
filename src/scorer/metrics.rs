//! The agreement measures the calibration report uses, on plain slices.
//! Each returns None where it is undefined (no rows, one class, no variance).

/// Share of positions where the two agree.
pub fn accuracy(pred: &[bool], label: &[bool]) -> Option<f64> {
    (!pred.is_empty())
        .then(|| pred.iter().zip(label).filter(|(p, l)| p == l).count() as f64 / pred.len() as f64)
}

/// Average ranks (1-based), ties sharing the mean of their positions.
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// Area under the ROC curve: the chance a random positive scores above a
/// random negative, ties counting half (Mann-Whitney U).
pub fn auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    let pos = labels.iter().filter(|l| **l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    let r = ranks(scores);
    let rank_sum: f64 = r
        .iter()
        .zip(labels)
        .filter(|(_, l)| **l)
        .map(|(r, _)| r)
        .sum();
    let u = rank_sum - (pos * (pos + 1)) as f64 / 2.0;
    Some(u / (pos as f64 * neg as f64))
}

/// Cohen's kappa of two yes/no raters.
pub fn kappa(a: &[bool], b: &[bool]) -> Option<f64> {
    let n = a.len() as f64;
    if a.is_empty() {
        return None;
    }
    let observed = accuracy(a, b)?;
    let pa = a.iter().filter(|x| **x).count() as f64 / n;
    let pb = b.iter().filter(|x| **x).count() as f64 / n;
    let expected = pa * pb + (1.0 - pa) * (1.0 - pb);
    (expected < 1.0).then(|| (observed - expected) / (1.0 - expected))
}

pub fn mean(x: &[f64]) -> Option<f64> {
    (!x.is_empty()).then(|| x.iter().sum::<f64>() / x.len() as f64)
}

/// Sample standard deviation (n - 1).
pub fn std_dev(x: &[f64]) -> Option<f64> {
    let m = mean(x)?;
    (x.len() > 1)
        .then(|| (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt())
}

pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let (mx, my) = (mean(x)?, mean(y)?);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx).powi(2);
        syy += (b - my).powi(2);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&ranks(x), &ranks(y))
}

/// Mean absolute error.
pub fn mae(pred: &[f64], truth: &[f64]) -> Option<f64> {
    mean(
        &pred
            .iter()
            .zip(truth)
            .map(|(p, t)| (p - t).abs())
            .collect::<Vec<_>>(),
    )
}

/// The standard normal quantiles of a two-sided 5% test (z at 0.975) and
/// of 80% power (z at 0.8).
const Z_975: f64 = 1.959_963_984_540_054;
const Z_80: f64 = 0.841_621_233_572_914_3;

/// Paired samples needed to resolve a mean `margin` with a two-sided 5%
/// test at 80% power, given the per-sample standard deviation `sd`:
/// ⌈((z₀.₉₇₅ + z₀.₈)·sd/margin)²⌉. Detecting with only the interval's
/// 1.96 would miss a true margin half the time.
pub fn samples_to_resolve(sd: f64, margin: f64) -> u64 {
    (((Z_975 + Z_80) * sd / margin).powi(2)).ceil() as u64
}

/// Half-width of the 95% normal interval of a mean of `n` draws with this
/// per-draw standard deviation.
pub fn interval95(sd: f64, n: usize) -> f64 {
    1.96 * sd / (n.max(1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reference_needs_539_samples_to_resolve_its_margin() {
        // mission.md: a per-sample error of 0.207 needs "500+ paired samples
        // to resolve 0.025", and gives +/- 0.041 at 100 samples.
        assert_eq!(super::samples_to_resolve(0.207, 0.025), 539);
        assert!((super::interval95(0.207, 100) - 0.041).abs() < 0.0005);
    }

    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.expect("defined");
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn auc_counts_pairs() {
        // Positives 0.9, 0.4; negatives 0.5, 0.1: 3 of 4 pairs ordered.
        close(
            auc(&[0.9, 0.5, 0.4, 0.1], &[true, false, true, false]),
            0.75,
        );
        // A tie counts half.
        close(auc(&[0.5, 0.5], &[true, false]), 0.5);
        assert_eq!(auc(&[0.1, 0.2], &[true, true]), None);
    }

    #[test]
    fn kappa_of_a_two_by_two() {
        // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5, kappa 0.4.
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (x, y, n) in [
            (true, true, 20),
            (true, false, 5),
            (false, true, 10),
            (false, false, 15),
        ] {
            for _ in 0..n {
                a.push(x);
                b.push(y);
            }
        }
        close(kappa(&a, &b), 0.4);
        assert_eq!(kappa(&[true, true], &[true, true]), None);
    }

    #[test]
    fn correlations_and_errors() {
        close(pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]), 1.0);
        close(pearson(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
        close(spearman(&[1.0, 2.0, 3.0, 4.0], &[1.0, 4.0, 9.0, 16.0]), 1.0);
        close(mae(&[0.5, 1.0], &[0.0, 0.0]), 0.75);
        close(std_dev(&[1.0, 3.0]), 2f64.sqrt());
        assert!((interval95(0.5, 100) - 0.098).abs() < 1e-12);
    }
}
