//! What a scan computes: inclusive or exclusive, forward or reverse.

/// Whether output `i` includes input `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `out[i] = x[0] ∘ … ∘ x[i]`.
    #[default]
    Inclusive,
    /// `out[i] = x[0] ∘ … ∘ x[i-1]`, and `out[0]` is the identity.
    Exclusive,
}

/// Which end the scan starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From index 0 upward.
    #[default]
    Forward,
    /// From the last index downward: the forward scan of the reversed sequence,
    /// so (inclusive) `out[i] = x[n-1] ∘ x[n-2] ∘ … ∘ x[i]`. The element met
    /// first (the higher index) is the left operand, as with `flip`, scan,
    /// `flip` in torch or `jax.lax.associative_scan(reverse=True)`; for the
    /// linear recurrence this runs `h_t = a_t * h_{t+1} + b_t`.
    Reverse,
}

/// A scan's kind and direction.
///
/// ```
/// use scan_core::{Direction, Kind, ScanSpec};
/// let spec = ScanSpec::exclusive().reversed();
/// assert_eq!(spec.kind, Kind::Exclusive);
/// assert_eq!(spec.direction, Direction::Reverse);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScanSpec {
    /// Inclusive or exclusive.
    pub kind: Kind,
    /// Forward or reverse.
    pub direction: Direction,
}

impl ScanSpec {
    /// A forward inclusive scan (the default).
    pub const fn inclusive() -> Self {
        ScanSpec { kind: Kind::Inclusive, direction: Direction::Forward }
    }
    /// A forward exclusive scan.
    pub const fn exclusive() -> Self {
        ScanSpec { kind: Kind::Exclusive, direction: Direction::Forward }
    }
    /// The same scan, run from the last element down.
    pub const fn reversed(self) -> Self {
        ScanSpec { kind: self.kind, direction: Direction::Reverse }
    }
    /// Every (kind, direction) pair, for tests that cover them all.
    pub const ALL: [ScanSpec; 4] = [
        ScanSpec::inclusive(),
        ScanSpec::exclusive(),
        ScanSpec::inclusive().reversed(),
        ScanSpec::exclusive().reversed(),
    ];
    /// True for [`Kind::Inclusive`].
    pub const fn is_inclusive(self) -> bool {
        matches!(self.kind, Kind::Inclusive)
    }
    /// True for [`Direction::Reverse`].
    pub const fn is_reverse(self) -> bool {
        matches!(self.direction, Direction::Reverse)
    }
}
