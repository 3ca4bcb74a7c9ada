//! Splitting work over scoped threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Runs `f` on up to `threads` contiguous parts of `items`, in parallel.
///
/// Runs inline when one part would do. Parts are claimed from a counter, so if
/// the OS refuses to start a thread the others (the calling thread included)
/// still do every part.
pub(crate) fn for_each_part<X: Send>(items: &mut [X], threads: usize, f: impl Fn(&mut [X]) + Sync) {
    let parts = threads.min(items.len()).max(1);
    if parts == 1 {
        f(items);
        return;
    }
    let per_part = items.len().div_ceil(parts);
    let parts: Vec<Mutex<&mut [X]>> = items.chunks_mut(per_part).map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        while let Some(part) = parts.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Each part is claimed once, so the lock is never contended; a
            // poisoned lock means `f` panicked there, and that panic is
            // re-raised by the scope anyway.
            if let Ok(mut part) = part.lock() {
                f(&mut part);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..parts.len() {
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
}
