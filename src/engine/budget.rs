//! The memory pool of a streaming step's session.

use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::execution::memory_pool::{MemoryPool, MemoryReservation};

/// A memory pool that holds sorts to a budget, both what they can spill and
/// the merge of what they spilled (which reads as many spill files at once
/// as its reservation allows: unbudgeted, all of them, so its memory would
/// grow with the mix), and lets the rest (hash-join build sides: the rows
/// being streamed, never a table) take what it needs: a budget on those
/// would only turn a large mix into an error.
#[derive(Debug)]
pub struct SpillingBudget {
    budget: usize,
    spillable: AtomicUsize,
    other: AtomicUsize,
}

impl SpillingBudget {
    pub fn new(budget: usize) -> SpillingBudget {
        SpillingBudget {
            budget,
            spillable: AtomicUsize::new(0),
            other: AtomicUsize::new(0),
        }
    }

    /// Whether `reservation` counts against the budget: a sort's, or its merge's.
    fn budgeted(reservation: &MemoryReservation) -> bool {
        let consumer = reservation.consumer();
        consumer.can_spill() || consumer.name().starts_with("ExternalSorterMerge")
    }

    fn counter(&self, reservation: &MemoryReservation) -> &AtomicUsize {
        if Self::budgeted(reservation) {
            &self.spillable
        } else {
            &self.other
        }
    }
}

impl std::fmt::Display for SpillingBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "spilling budget (spillable: {} of {} bytes, other: {} bytes)",
            self.spillable.load(Ordering::Relaxed),
            self.budget,
            self.other.load(Ordering::Relaxed)
        )
    }
}

impl MemoryPool for SpillingBudget {
    fn name(&self) -> &str {
        "spilling budget"
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.counter(reservation)
            .fetch_add(additional, Ordering::Relaxed);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.counter(reservation)
            .fetch_sub(shrink, Ordering::Relaxed);
    }

    fn try_grow(
        &self,
        reservation: &MemoryReservation,
        additional: usize,
    ) -> datafusion::error::Result<()> {
        if !Self::budgeted(reservation) {
            self.other.fetch_add(additional, Ordering::Relaxed);
            return Ok(());
        }
        self.spillable
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used + additional <= self.budget).then_some(used + additional)
            })
            .map(|_| ())
            .map_err(|used| {
                datafusion::error::DataFusionError::ResourcesExhausted(format!(
                    "{} needs {additional} more bytes; {} of the {}-byte budget are free",
                    reservation.consumer().name(),
                    self.budget.saturating_sub(used),
                    self.budget
                ))
            })
    }

    fn reserved(&self) -> usize {
        self.spillable.load(Ordering::Relaxed) + self.other.load(Ordering::Relaxed)
    }
}
