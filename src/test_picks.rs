//! Deterministic pseudo-random picks (xorshift64) for the tests that compare
//! a hand-written matcher with its reference on random text.

pub struct Picks(u64);

impl Picks {
    pub fn new(seed: u64) -> Picks {
        Picks(seed)
    }

    /// The next index below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}
