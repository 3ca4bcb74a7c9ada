//! Splitting work over scoped threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

/// Runs `work` on the calling thread and on up to `helpers` more scoped
/// threads (fewer when the OS refuses one, so `work` must claim its share
/// itself), and returns when every one is done. A panic in `work` (user
/// code: an operator, a map) reaches the caller as itself, the caller's own
/// or else the first helper's, not as the scope's "a scoped thread
/// panicked".
pub(crate) fn run_on_threads(helpers: usize, work: impl Fn() + Sync) {
    let work = &work;
    std::thread::scope(|s| {
        let spawned: Vec<_> =
            (0..helpers).map_while(|_| std::thread::Builder::new().spawn_scoped(s, work).ok()).collect();
        work();
        for helper in spawned {
            if let Err(payload) = helper.join() {
                std::panic::resume_unwind(payload);
            }
        }
    });
}

/// How many parts [`for_each_part`] calls `f` on, at most, for `items`
/// items on `threads` threads (per-part resources can be made beforehand).
pub(crate) fn parts(items: usize, threads: usize) -> usize {
    threads.min(items).max(1)
}

/// Runs `f` on up to `threads` contiguous parts of `items`, in parallel.
///
/// Runs inline when one part would do. Parts are claimed from a counter, so if
/// the OS refuses to start a thread the others (the calling thread included)
/// still do every part. A panic in `f` (user code, e.g. a map) reaches the
/// caller as itself, not as the scope's "a scoped thread panicked".
pub(crate) fn for_each_part<X: Send>(items: &mut [X], threads: usize, f: impl Fn(&mut [X]) + Sync) {
    let count = parts(items.len(), threads);
    if count == 1 {
        f(items);
        return;
    }
    let per_part = items.len().div_ceil(count);
    let parts: Vec<Mutex<&mut [X]>> = items.chunks_mut(per_part).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        while let Some(part) = parts.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Each part is claimed once, so the lock is never contended; a
            // poisoned lock means `f` panicked there, and that panic is
            // re-raised by `run_on_threads` anyway.
            if let Ok(mut part) = part.lock() {
                f(&mut part);
            }
        }
    };
    run_on_threads(parts.len() - 1, work);
}

/// Runs `work` on every item of `items` on up to `threads` threads and
/// hands each result to `fold`, in item order: `fold` sees exactly what a
/// sequential loop would give it, whatever the threads, so a sum it keeps
/// is the same to the bit. Items are claimed in order from a counter,
/// `per_claim` consecutive items at a time; a thread that finishes its claim
/// before the claim ahead of it is folded waits for its turn, so at most one
/// claim's results a thread are held at a time (more items a claim: fewer
/// waits, for small items).
///
/// A panic in `work` or `fold` stops the other threads (they stop waiting
/// for a turn that will not come) and is re-raised.
pub(crate) fn map_fold_in_order<X: Send, R: Send, S: Send>(
    items: &mut [X],
    threads: usize,
    per_claim: usize,
    state: &mut S,
    work: impl Fn(&mut X) -> R + Sync,
    fold: impl Fn(&mut S, R) + Sync,
) {
    let per_claim = per_claim.max(1);
    let threads = threads.min(items.len().div_ceil(per_claim)).max(1);
    if threads == 1 {
        for x in items {
            let r = work(x);
            fold(state, r);
        }
        return;
    }
    struct Turn<'s, S> {
        next: usize,
        failed: bool,
        state: &'s mut S,
    }
    /// Marks the run failed if its thread unwinds, so that no one waits on.
    struct Watch<'a, 's, S> {
        turn: &'a Mutex<Turn<'s, S>>,
        bell: &'a Condvar,
    }
    impl<S> Drop for Watch<'_, '_, S> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.turn.lock().unwrap_or_else(PoisonError::into_inner).failed = true;
                self.bell.notify_all();
            }
        }
    }
    let claims: Vec<Mutex<&mut [X]>> = items.chunks_mut(per_claim).map(Mutex::new).collect();
    let claim = AtomicUsize::new(0);
    let turn = Mutex::new(Turn { next: 0, failed: false, state });
    let bell = Condvar::new();
    let worker = || {
        let _watch = Watch { turn: &turn, bell: &bell };
        loop {
            let i = claim.fetch_add(1, Ordering::Relaxed);
            let Some(items) = claims.get(i) else { return };
            // Each claim is taken once: the lock is never contended.
            let results: Vec<R> = items.lock().unwrap_or_else(PoisonError::into_inner).iter_mut().map(&work).collect();
            let mut t = turn.lock().unwrap_or_else(PoisonError::into_inner);
            while t.next != i && !t.failed {
                t = bell.wait(t).unwrap_or_else(PoisonError::into_inner);
            }
            if t.failed {
                return;
            }
            for r in results {
                fold(t.state, r);
            }
            t.next += 1;
            bell.notify_all();
        }
    };
    run_on_threads(threads - 1, worker);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_a_part_reaches_the_caller_as_itself() {
        for round in 0..20 {
            let mut items: Vec<usize> = (0..8).collect();
            let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                for_each_part(&mut items, 8, |part| {
                    // Part 5 panics, on whichever thread claims it.
                    if part[0] == 5 {
                        panic!("part five failed");
                    }
                    std::thread::sleep(std::time::Duration::from_micros(100));
                })
            }));
            let payload = got.expect_err("the panic is raised");
            let message = payload.downcast_ref::<&str>().copied().or(payload.downcast_ref::<String>().map(|s| &s[..]));
            assert_eq!(message, Some("part five failed"), "round {round}");
        }
    }

    #[test]
    fn results_are_folded_in_item_order_on_any_number_of_threads() {
        let values: Vec<f32> =
            (0..1000).map(|i| 1.0 / (1.0 + i as f32) * if i % 3 == 0 { -7.0 } else { 3.0 }).collect();
        let sequential = values.iter().fold((0.0f32, Vec::new()), |(s, mut order), v| {
            order.push(v.to_bits());
            (s + v, order)
        });
        for (threads, per_claim) in (1..=8).flat_map(|t| [(t, 1), (t, 3)]) {
            let mut items = values.clone();
            let mut state = (0.0f32, Vec::new());
            map_fold_in_order(
                &mut items,
                threads,
                per_claim,
                &mut state,
                |x| {
                    // Uneven work, so that later items often finish first.
                    let spin = (x.to_bits() % 7) as usize * 200;
                    (0..spin).fold(*x, |a, _| std::hint::black_box(a))
                },
                |(s, order), v| {
                    *s += v;
                    order.push(v.to_bits());
                },
            );
            assert_eq!(state.1, sequential.1, "{threads} threads, {per_claim} a claim: order");
            assert_eq!(state.0.to_bits(), sequential.0.to_bits(), "{threads} threads, {per_claim} a claim: sum");
        }
    }

    #[test]
    fn a_panic_in_the_work_is_raised_and_stops_the_others() {
        let mut items: Vec<usize> = (0..64).collect();
        let mut folded = 0usize;
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map_fold_in_order(
                &mut items,
                4,
                1,
                &mut folded,
                |x| {
                    assert!(*x != 5, "item 5");
                    *x
                },
                |n, _| *n += 1,
            )
        }));
        assert!(caught.is_err());
        assert!(folded <= 5, "folded {folded} items past the failing one");
    }
}
