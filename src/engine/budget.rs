//! The memory pool of a session whose sorts must not grow with their input.

use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};

/// A memory pool that holds to a budget what can spill (sorts; in a stream's
/// session also its aggregates, nested-loop joins and repartitions' queues)
/// and the merges of what sorts spilled (a merge reads as many spill files
/// at once as its reservation allows: unbudgeted, all of them, so its memory
/// would grow with the input), and lets the rest take what it needs:
/// hash-join build sides (a chunk's rows or the rows being streamed, never a table); a
/// budget on those would only turn a large mix into an error. A step's
/// session (`mix`) holds only its sorts to the budget: its report's
/// aggregates, on the same runtime, failed rather than spilled once sorts
/// had filled it.
///
/// The sorts running hold at most an even share each of what the budget
/// leaves after the start of every sort's merge (`merge_reserve` each, which
/// a sort reserves before its first row and frees and takes again around
/// each spill): so no sort can take the room another needs to merge.
#[derive(Debug)]
pub struct SpillingBudget {
    budget: usize,
    merge_reserve: usize,
    sorts_only: bool,
    /// Sorts registered now.
    sorts: AtomicUsize,
    /// Bytes held by what the budget holds.
    held: AtomicUsize,
    other: AtomicUsize,
}

impl SpillingBudget {
    /// A budget for everything that can spill.
    pub fn new(budget: usize, merge_reserve: usize) -> SpillingBudget {
        Self::with(budget, merge_reserve, false)
    }

    /// A budget for sorts only.
    pub fn for_sorts(budget: usize, merge_reserve: usize) -> SpillingBudget {
        Self::with(budget, merge_reserve, true)
    }

    fn with(budget: usize, merge_reserve: usize, sorts_only: bool) -> SpillingBudget {
        SpillingBudget {
            budget,
            merge_reserve,
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
            let sorts = self.sorts.load(Ordering::Relaxed).max(1);
            let share = self.budget.saturating_sub(sorts * self.merge_reserve) / sorts;
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
        let pool: Arc<dyn MemoryPool> = Arc::new(SpillingBudget::for_sorts(100, 10));
        let sort = |name: &str| {
            MemoryConsumer::new(name)
                .with_can_spill(true)
                .register(&pool)
        };
        let merge = |name: &str| MemoryConsumer::new(name).register(&pool);
        let a = sort("ExternalSorter[0]");
        let a_merge = merge("ExternalSorterMerge[0]");
        a_merge.try_grow(10).unwrap();
        a.try_grow(90).unwrap();
        assert!(
            a.try_grow(1).is_err(),
            "a sort and its merge share the budget"
        );
        a.shrink(90);
        // With a second sort, each holds at most half of what the starts of
        // both merges leave, so the second can still reserve its merge's.
        let b = sort("ExternalSorter[1]");
        a.try_grow(40).unwrap();
        assert!(a.try_grow(1).is_err());
        let b_merge = merge("ExternalSorterMerge[1]");
        b_merge.try_grow(10).unwrap();
        b.try_grow(40).unwrap();
        // A sort that frees its merge's start around a spill takes it again.
        b_merge.free();
        assert!(a.try_grow(10).is_err(), "the room is the other merge's");
        b_merge.try_grow(10).unwrap();
        assert!(b.try_grow(1).is_err(), "each holds at most its share");
        // A sort that ended leaves its share to those still running.
        drop(b);
        drop(b_merge);
        a.try_grow(50).unwrap();
        // Hash-join build sides are not held to the budget, nor are
        // aggregates, which can spill only in some modes.
        let join = MemoryConsumer::new("HashJoinInput").register(&pool);
        join.try_grow(1_000).unwrap();
        let groups = MemoryConsumer::new("GroupedHashAggregateStream[0]")
            .with_can_spill(true)
            .register(&pool);
        groups.try_grow(1_000).unwrap();
        assert_eq!(pool.reserved(), 100 + 2_000);
    }

    #[test]
    fn a_streams_budget_holds_its_aggregates_too() {
        let pool: Arc<dyn MemoryPool> = Arc::new(SpillingBudget::new(100, 10));
        let groups = MemoryConsumer::new("GroupedHashAggregateStream[0]")
            .with_can_spill(true)
            .register(&pool);
        groups.try_grow(100).unwrap();
        assert!(groups.try_grow(1).is_err());
        let join = MemoryConsumer::new("HashJoinInput").register(&pool);
        join.try_grow(1_000).unwrap();
    }
}
