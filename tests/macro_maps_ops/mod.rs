//! Maps declared with `#[scan_maps]`, shared by `macro_maps.rs` and
//! `gpu_maps.rs`.
#![allow(dead_code)]

use scan::maps::Maps;
use scan::ops::{Add, LinearRecurrence};
use scan::scan_maps;

/// An exponential moving average with a decay per position:
/// `h_t = alpha_t h_{t-1} + (1 - alpha_t) x_t`, from `alpha[]` and `x[]`.
pub struct Ema;

#[scan_maps]
impl Maps<LinearRecurrence<f32>> for Ema {
    type Input = (f32, f32);
    type Output = f32;
    fn lift(x: (f32, f32)) -> (f32, f32) {
        let (alpha, value) = x;
        (alpha, (1.0 - alpha) * value)
    }
    fn project(x: (f32, f32)) -> f32 {
        x.1
    }
}

/// The recurrence with a gated input, from three arrays:
/// `h_t = a_t h_{t-1} + b_t g_t`.
pub struct GatedInput;

#[scan_maps]
impl Maps<LinearRecurrence<f32>> for GatedInput {
    type Input = (f32, f32, f32);
    type Output = f32;
    fn lift(x: (f32, f32, f32)) -> (f32, f32) {
        (x.0, x.1 * x.2)
    }
    fn project(x: (f32, f32)) -> f32 {
        x.1
    }
}

/// f32 in, summed in f64, f32 out (each result rounded once).
pub struct SumInF64;

#[scan_maps]
impl Maps<Add<f64>> for SumInF64 {
    type Input = f32;
    type Output = f32;
    fn lift(x: f32) -> f64 {
        x as f64
    }
    fn project(x: f64) -> f32 {
        x as f32
    }
}

/// `h_t = x_t - h_{t-1}`, from `x[]` alone: a non-commutative operator
/// whose items (8 bytes) are wider than its input and output (4 bytes), so
/// that on the GPU its whole segments take the narrow slots
/// (scan-cuda/kernels/narrow.cuh), where a run's order matters.
pub struct Alternate;

#[scan_maps]
impl Maps<LinearRecurrence<f32>> for Alternate {
    type Input = f32;
    type Output = f32;
    fn lift(x: f32) -> (f32, f32) {
        (-1.0, x)
    }
    fn project(x: (f32, f32)) -> f32 {
        x.1
    }
}

/// `x - 1` written as `x + u32::MAX`: the translation wraps (as the GPU
/// does) where the fn as written would overflow in a debug build.
pub struct WrapAround;

#[scan_maps]
impl Maps<Add<u32>> for WrapAround {
    type Input = u32;
    type Output = u32;
    fn lift(x: u32) -> u32 {
        x + u32::MAX
    }
    fn project(x: u32) -> u32 {
        x
    }
}

/// A struct item (`#[scan_item]`) with field-wise sums.
#[scan::scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weighted {
    pub sum: f32,
    pub weight: f32,
}

#[scan::scan_op(identity = Weighted { sum: 0.0, weight: 0.0 })]
pub fn weighted_sums(l: Weighted, r: Weighted) -> Weighted {
    Weighted { sum: l.sum + r.sum, weight: l.weight + r.weight }
}

/// A running weighted mean (of sorts: sum / (weight + 1)) from values and
/// weights: `lift` builds the item
/// with a struct literal whose fields read the input (named `x` in the
/// generated C++: the literal's scratch must not shadow it).
pub struct WeightedMean;

#[scan_maps]
impl Maps<WeightedSums> for WeightedMean {
    type Input = (f32, f32);
    type Output = f32;
    fn lift(x: (f32, f32)) -> Weighted {
        Weighted { sum: x.0 * x.1, weight: x.1 }
    }
    fn project(x: Weighted) -> f32 {
        // (+ 1: an exclusive scan's first item is the identity, weight 0.)
        let sum: f32 = x.sum;
        let weight: f32 = x.weight;
        sum / (weight + 1.0)
    }
}

/// A struct item with bool fields.
#[scan::scan_item]
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seen {
    pub count: u32,
    pub any: bool,
    pub all: bool,
}

#[scan::scan_op(identity = Seen { count: 0, any: false, all: true })]
pub fn seen_so_far(l: Seen, r: Seen) -> Seen {
    Seen { count: l.count + r.count, any: l.any || r.any, all: l.all && r.all }
}

/// The count so far while every value or none has been large and the count
/// is below 1000, else 0: `project` combines the bool fields with `^` and
/// `!` (types the maps' generated code does not see: the prelude's bool
/// overloads) and with comparisons (`&` of two bools, then of a bool field's
/// and a comparison's: one overload for both).
pub struct Uniform;

#[scan_maps]
impl Maps<SeenSoFar> for Uniform {
    type Input = u32;
    type Output = u32;
    fn lift(x: u32) -> Seen {
        Seen { count: 1, any: x > 3, all: x > 3 }
    }
    fn project(x: Seen) -> u32 {
        let mixed = x.any ^ x.all;
        let small = (x.count > 0) & (x.count < 1000);
        if !mixed & small {
            x.count
        } else {
            0
        }
    }
}
