//! Decoupled look-back between tiles (Merrill & Garland 2016, on threads).
//!
//! Each tile publishes its aggregate (the combination of its own items) as soon
//! as it has scanned itself, and its inclusive prefix once it knows it. A tile
//! finds its prefix by walking back over its predecessors until it meets an
//! inclusive prefix; it only waits on a predecessor that has published nothing
//! yet, which is being scanned right now by another thread (tiles are claimed
//! in order).
//!
//! The walk then combines forward, from that prefix through the aggregates
//! after it, in tile order: `((p_j ∘ a_{j+1}) ∘ a_{j+2}) ∘ …`. That is the
//! grouping of one thread carrying its prefix from tile to tile, whichever
//! tile the walk stopped at (every published prefix is grouped so, by
//! induction from tile 0), so float results are the same bits for every
//! thread count and every schedule. (CUB's look-back, and the GPU's,
//! combine backwards, `p_j ∘ (a_{j+1} ∘ (… ∘ a_{b-1}))`, whose grouping
//! depends on where the walk stopped.)

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

// State bits: a tile after 0 publishes its aggregate, then its inclusive
// prefix (state 1, then 3); tile 0 only its inclusive prefix (state 2).
const EMPTY: u8 = 0;
const AGGREGATE: u8 = 1;
const INCLUSIVE: u8 = 2;

/// What one tile has published. Each value is written once, by the tile's
/// owner, before the state says it is there (release); readers read a value
/// only after seeing that state (acquire). The aggregate stays valid after
/// the inclusive prefix arrives, so a reader that saw AGGREGATE may read it late.
pub(crate) struct Slot<T> {
    state: AtomicU8,
    aggregate: UnsafeCell<MaybeUninit<T>>,
    inclusive: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the values are written by one thread before a release store of
// `state` and read by others only after an acquire load that saw it, so no
// access races; `T: Send + Sync` lets the values move between threads.
unsafe impl<T: Send + Sync> Sync for Slot<T> {}

impl<T: Copy> Slot<T> {
    pub fn new() -> Self {
        Slot {
            state: AtomicU8::new(EMPTY),
            aggregate: UnsafeCell::new(MaybeUninit::uninit()),
            inclusive: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// Publishes the tile's aggregate. Only the tile's owner calls this, once.
    pub fn publish_aggregate(&self, value: T) {
        // SAFETY: nobody reads `aggregate` before `state` says AGGREGATE below,
        // and only the owner writes it, once.
        unsafe { (*self.aggregate.get()).write(value) };
        self.state.store(AGGREGATE, Ordering::Release);
    }

    /// Publishes the tile's inclusive prefix. Only the tile's owner calls this, once.
    pub fn publish_inclusive(&self, value: T) {
        // SAFETY: as in `publish_aggregate`, for `inclusive` and INCLUSIVE.
        unsafe { (*self.inclusive.get()).write(value) };
        self.state.fetch_or(INCLUSIVE, Ordering::Release);
    }

    fn poll(&self) -> Option<Published<T>> {
        let state = self.state.load(Ordering::Acquire);
        if state & INCLUSIVE != 0 {
            // SAFETY: the acquire load saw the bit set after the write.
            Some(Published::Inclusive(unsafe { (*self.inclusive.get()).assume_init() }))
        } else if state & AGGREGATE != 0 {
            Some(Published::Aggregate)
        } else {
            None
        }
    }

    /// The aggregate, once published (an inclusive prefix published since
    /// does not hide it; tile 0 has none).
    fn aggregate(&self) -> Option<T> {
        // SAFETY: the acquire load saw the bit set after the write, and the
        // aggregate is never written again.
        (self.state.load(Ordering::Acquire) & AGGREGATE != 0).then(|| unsafe { (*self.aggregate.get()).assume_init() })
    }
}

enum Published<T> {
    Aggregate,
    Inclusive(T),
}

/// The combination of every tile before `tile` (which must be > 0), grouped
/// as the module says, or `None` when `abort` is raised while waiting
/// (another worker panicked).
///
/// Tile 0 must publish only its inclusive prefix, which ends every walk.
pub(crate) fn exclusive_prefix<T: Copy>(
    slots: &[Slot<T>],
    tile: usize,
    abort: &AtomicBool,
    combine: impl Fn(T, T) -> T,
) -> Option<T> {
    for (j, slot) in slots[..tile].iter().enumerate().rev() {
        if let Published::Inclusive(prefix) = wait_for(slot, abort)? {
            return Some(fold_forward(&slots[j + 1..tile], prefix, combine));
        }
    }
    // Unreachable when tile 0 publishes an inclusive prefix; a caller bug
    // must not turn into a wrong answer.
    unreachable!("look-back walked past tile 0")
}

/// The same if every tile it needs has published already; `None` (at once,
/// without waiting) otherwise.
pub(crate) fn ready_prefix<T: Copy>(slots: &[Slot<T>], tile: usize, combine: impl Fn(T, T) -> T) -> Option<T> {
    for (j, slot) in slots[..tile].iter().enumerate().rev() {
        if let Published::Inclusive(prefix) = slot.poll()? {
            return Some(fold_forward(&slots[j + 1..tile], prefix, combine));
        }
    }
    unreachable!("look-back walked past tile 0")
}

/// `prefix` combined with the aggregates of `after`, in order, each as the
/// right operand. Every slot of `after` has published its aggregate (the
/// walk saw them all, and none is tile 0).
fn fold_forward<T: Copy>(after: &[Slot<T>], prefix: T, combine: impl Fn(T, T) -> T) -> T {
    after.iter().fold(prefix, |acc, slot| match slot.aggregate() {
        Some(aggregate) => combine(acc, aggregate),
        None => unreachable!("a tile the look-back walked over has no aggregate"),
    })
}

/// Spins briefly, then yields, until `slot` has published something.
fn wait_for<T: Copy>(slot: &Slot<T>, abort: &AtomicBool) -> Option<Published<T>> {
    let mut spins = 0u32;
    loop {
        if let Some(published) = slot.poll() {
            return Some(published);
        }
        if abort.load(Ordering::Relaxed) {
            return None;
        }
        // The predecessor is being scanned by a running thread and is usually
        // a few microseconds from publishing; past that, leave the core to it
        // (the machine may have fewer free cores than workers).
        if spins < 256 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// Raises `abort` if the thread holding it unwinds, so that the other workers
/// stop waiting for tiles this one will never publish.
pub(crate) struct AbortOnUnwind<'a>(pub &'a AtomicBool);

impl Drop for AbortOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// 2x2 integer matrix product: associative, not commutative.
    fn mul(l: [i64; 4], r: [i64; 4]) -> [i64; 4] {
        [l[0] * r[0] + l[1] * r[2], l[0] * r[1] + l[1] * r[3], l[2] * r[0] + l[3] * r[2], l[2] * r[1] + l[3] * r[3]]
    }
    const M: [[i64; 4]; 4] = [[1, 1, 0, 1], [1, 0, 1, 1], [2, 1, 1, 1], [0, 1, 1, 3]];

    #[test]
    fn the_walk_combines_aggregates_in_order_up_to_the_first_inclusive_prefix() {
        let slots: Vec<Slot<[i64; 4]>> = (0..4).map(|_| Slot::new()).collect();
        slots[0].publish_inclusive(M[0]);
        slots[1].publish_aggregate(M[1]);
        slots[2].publish_aggregate(M[2]);
        let abort = AtomicBool::new(false);
        let got = exclusive_prefix(&slots, 3, &abort, mul);
        assert_eq!(got, Some(mul(mul(M[0], M[1]), M[2])));
        // An inclusive prefix further down ends the walk there, and its
        // aggregate is no longer used.
        slots[1].publish_inclusive(mul(M[0], M[1]));
        assert_eq!(exclusive_prefix(&slots, 3, &abort, mul), Some(mul(mul(M[0], M[1]), M[2])));
        assert_eq!(exclusive_prefix(&slots, 2, &abort, mul), Some(mul(M[0], M[1])));
    }

    /// Floats where the grouping shows: (1e8 + -1e8) + 1 = 1, but
    /// 1e8 + (-1e8 + 1) = 0 in f32.
    #[test]
    fn the_walk_combines_forward_from_the_prefix_it_met() {
        let slots: Vec<Slot<f32>> = (0..3).map(|_| Slot::new()).collect();
        slots[0].publish_inclusive(1e8);
        slots[1].publish_aggregate(-1e8);
        slots[2].publish_aggregate(1.0);
        let add = |a: f32, b: f32| a + b;
        let abort = AtomicBool::new(false);
        assert_eq!(exclusive_prefix(&slots, 3, &abort, add), Some(1.0));
        assert_eq!(ready_prefix(&slots, 3, add), Some(1.0));
        // Meeting tile 1's inclusive prefix instead gives the same bits.
        slots[1].publish_inclusive(0.0);
        assert_eq!(exclusive_prefix(&slots, 3, &abort, add), Some(1.0));
        assert_eq!(slots[1].aggregate(), Some(-1e8), "the aggregate outlives the inclusive prefix");
    }

    #[test]
    fn the_non_blocking_walk_answers_only_when_every_needed_tile_has_published() {
        let slots: Vec<Slot<[i64; 4]>> = (0..4).map(|_| Slot::new()).collect();
        slots[0].publish_inclusive(M[0]);
        slots[2].publish_aggregate(M[2]);
        assert_eq!(ready_prefix(&slots, 3, mul), None, "tile 1 has published nothing");
        assert_eq!(ready_prefix(&slots, 1, mul), Some(M[0]));
        slots[1].publish_aggregate(M[1]);
        assert_eq!(ready_prefix(&slots, 3, mul), Some(mul(mul(M[0], M[1]), M[2])));
    }

    #[test]
    fn the_walk_waits_for_a_predecessor_that_publishes_late() {
        let slots: Vec<Slot<[i64; 4]>> = (0..3).map(|_| Slot::new()).collect();
        slots[0].publish_inclusive(M[0]);
        let abort = AtomicBool::new(false);
        let got = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                slots[1].publish_aggregate(M[1]);
            });
            exclusive_prefix(&slots, 2, &abort, mul)
        });
        assert_eq!(got, Some(mul(M[0], M[1])));
    }

    #[test]
    fn the_walk_gives_up_when_aborted() {
        let slots: Vec<Slot<[i64; 4]>> = (0..2).map(|_| Slot::new()).collect();
        let abort = AtomicBool::new(false);
        let got = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                abort.store(true, Ordering::Relaxed);
            });
            exclusive_prefix(&slots, 1, &abort, mul)
        });
        assert_eq!(got, None);
    }
}
