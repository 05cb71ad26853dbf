//! A small seeded generator (SplitMix64): stable across platforms and crate
//! versions, so a seed names the same corpus forever.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// An independent stream for a sub-part (a run, a shard, a file).
    pub fn fork(&self, label: u64) -> Rng {
        let mut r = Rng(self.0 ^ label.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64();
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// Uniform in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.next_u64() as usize % items.len()]
    }

    /// Index drawn with the given weights.
    pub fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.f64() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }

    /// Poisson(lambda) by inversion (lambda is small here).
    pub fn poisson(&mut self, lambda: f64) -> u32 {
        let mut k = 0;
        let mut p = (-lambda).exp();
        let mut cdf = p;
        let u = self.f64();
        while u > cdf && k < 64 {
            k += 1;
            p *= lambda / k as f64;
            cdf += p;
        }
        k
    }

    pub fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from_digit((self.next_u64() % 16) as u32, 16).unwrap())
            .collect()
    }

    pub fn uuid(&mut self) -> String {
        format!(
            "{}-{}-{}-{}-{}",
            self.hex(8),
            self.hex(4),
            self.hex(4),
            self.hex(4),
            self.hex(12)
        )
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.next_u64() as usize % (i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_forks_differ() {
        let a: Vec<u64> = (0..5)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..5)
            .map({
                let mut r = Rng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(
            Rng::new(7).fork(1).next_u64(),
            Rng::new(7).fork(2).next_u64()
        );
        let mut r = Rng::new(1);
        let mean = (0..20000).map(|_| r.poisson(2.0) as f64).sum::<f64>() / 20000.0;
        assert!((mean - 2.0).abs() < 0.05, "{mean}");
    }
}
