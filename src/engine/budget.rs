//! The memory pool of a session whose sorts must not grow with their input.

use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};

/// A memory pool that holds to a budget what can spill (sorts; in a stream's
/// session also its aggregates and nested-loop joins) and the merges of what
/// sorts spilled (a merge reads as many spill files at once as its
/// reservation allows: unbudgeted, all of them, so its memory would grow
/// with the input), and lets the rest take what it needs: hash-join build
/// sides (a chunk's rows or the rows being streamed, never a table); a
/// budget on those would only turn a large mix into an error. A step's
/// session (`mix`) holds only its sorts to the budget: its report's
/// aggregates, on the same runtime, failed rather than spilled once sorts
/// had filled it.
///
/// One sort alone has the whole budget, the start of its merge included.
/// Sorts running together each hold at most an even share of it (as
/// DataFusion's fair pool does), so that one cannot fill the budget before
/// another has reserved the start of its merge, which it does before it
/// takes its first row.
#[derive(Debug)]
pub struct SpillingBudget {
    budget: usize,
    sorts_only: bool,
    /// Sorts registered now.
    sorts: AtomicUsize,
    /// Bytes held by what the budget holds.
    held: AtomicUsize,
    other: AtomicUsize,
}

impl SpillingBudget {
    /// A budget for everything that can spill.
    pub fn new(budget: usize) -> SpillingBudget {
        Self::with(budget, false)
    }

    /// A budget for sorts only.
    pub fn for_sorts(budget: usize) -> SpillingBudget {
        Self::with(budget, true)
    }

    fn with(budget: usize, sorts_only: bool) -> SpillingBudget {
        SpillingBudget {
            budget,
            sorts_only,
            sorts: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
            other: AtomicUsize::new(0),
        }
    }

    fn is_sort(consumer: &MemoryConsumer) -> bool {
        consumer.can_spill() && consumer.name().starts_with("ExternalSorter")
    }

    /// Whether `consumer` is held to the budget.
    fn budgeted(&self, consumer: &MemoryConsumer) -> bool {
        let spills = if self.sorts_only {
            Self::is_sort(consumer)
        } else {
            consumer.can_spill()
        };
        spills || consumer.name().starts_with("ExternalSorterMerge")
    }

    fn counter(&self, consumer: &MemoryConsumer) -> &AtomicUsize {
        if self.budgeted(consumer) {
            &self.held
        } else {
            &self.other
        }
    }

    fn exhausted(
        &self,
        consumer: &MemoryConsumer,
        additional: usize,
        free: usize,
    ) -> DataFusionError {
        DataFusionError::ResourcesExhausted(format!(
            "{} needs {additional} more bytes; {free} of the {}-byte budget are free to it",
            consumer.name(),
            self.budget
        ))
    }
}

impl std::fmt::Display for SpillingBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "spilling budget (held: {} of {} bytes, {} sorts; other: {} bytes)",
            self.held.load(Ordering::Relaxed),
            self.budget,
            self.sorts.load(Ordering::Relaxed),
            self.other.load(Ordering::Relaxed)
        )
    }
}

impl MemoryPool for SpillingBudget {
    fn name(&self) -> &str {
        "spilling budget"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        if Self::is_sort(consumer) {
            self.sorts.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        if Self::is_sort(consumer) {
            self.sorts.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.counter(reservation.consumer())
            .fetch_add(additional, Ordering::Relaxed);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.counter(reservation.consumer())
            .fetch_sub(shrink, Ordering::Relaxed);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        let consumer = reservation.consumer();
        if !self.budgeted(consumer) {
            self.other.fetch_add(additional, Ordering::Relaxed);
            return Ok(());
        }
        if Self::is_sort(consumer) {
            let share = self.budget / self.sorts.load(Ordering::Relaxed).max(1);
            if reservation.size() + additional > share {
                return Err(self.exhausted(
                    consumer,
                    additional,
                    share.saturating_sub(reservation.size()),
                ));
            }
        }
        self.held
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used + additional <= self.budget).then_some(used + additional)
            })
            .map(|_| ())
            .map_err(|used| self.exhausted(consumer, additional, self.budget.saturating_sub(used)))
    }

    fn reserved(&self) -> usize {
        self.held.load(Ordering::Relaxed) + self.other.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn sorts_share_the_budget_with_their_merges_and_the_rest_is_free() {
        let pool: Arc<dyn MemoryPool> = Arc::new(SpillingBudget::for_sorts(100));
        let sort = |name: &str| {
            MemoryConsumer::new(name)
                .with_can_spill(true)
                .register(&pool)
        };
        let merge = |name: &str| MemoryConsumer::new(name).register(&pool);
        let mut a = sort("ExternalSorter[0]");
        let mut a_merge = merge("ExternalSorterMerge[0]");
        a_merge.try_grow(10).unwrap();
        a.try_grow(90).unwrap();
        assert!(
            a.try_grow(1).is_err(),
            "a sort and its merge share the budget"
        );
        a.shrink(90);
        // With a second sort, each holds at most half, and the second can
        // still reserve the start of its merge.
        let mut b = sort("ExternalSorter[1]");
        a.try_grow(50).unwrap();
        assert!(a.try_grow(1).is_err());
        let mut b_merge = merge("ExternalSorterMerge[1]");
        b_merge.try_grow(10).unwrap();
        b.try_grow(30).unwrap();
        assert!(b.try_grow(1).is_err(), "the budget is full");
        // A sort that ended leaves its share to those still running.
        drop(b);
        drop(b_merge);
        a.try_grow(40).unwrap();
        // Hash-join build sides are not held to the budget, nor are
        // aggregates, which can spill only in some modes.
        let mut join = MemoryConsumer::new("HashJoinInput").register(&pool);
        join.try_grow(1_000).unwrap();
        let mut groups = MemoryConsumer::new("GroupedHashAggregateStream[0]")
            .with_can_spill(true)
            .register(&pool);
        groups.try_grow(1_000).unwrap();
        assert_eq!(pool.reserved(), 100 + 2_000);
    }

    #[test]
    fn a_streams_budget_holds_its_aggregates_too() {
        let pool: Arc<dyn MemoryPool> = Arc::new(SpillingBudget::new(100));
        let mut groups = MemoryConsumer::new("GroupedHashAggregateStream[0]")
            .with_can_spill(true)
            .register(&pool);
        groups.try_grow(100).unwrap();
        assert!(groups.try_grow(1).is_err());
        let mut join = MemoryConsumer::new("HashJoinInput").register(&pool);
        join.try_grow(1_000).unwrap();
    }
}
