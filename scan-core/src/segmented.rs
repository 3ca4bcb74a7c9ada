//! [`Segmented<Op>`]: any operator lifted to (head flag, item) pairs, so
//! that one ordinary scan of the pairs is a segmented scan of the items.

use std::marker::PhantomData;
use std::mem::{align_of, size_of};

use crate::{CudaOp, CudaSource, ScanOp};

/// An item of a [`Segmented`] scan: `head` starts a new segment at it.
/// `#[repr(C)]`, so the generated CUDA struct has its layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Seg<T> {
    /// This item starts a segment (the scan restarts here).
    pub head: bool,
    /// The item.
    pub value: T,
}

/// `Op` lifted to [`Seg`] pairs: `combine(l, r)` is `r` when `r.head`, else
/// `(l.head, Op::combine(l.value, r.value))`; the identity is
/// `(false, Op::identity())`. Associative whenever `Op` is (the classic
/// segmented-scan operator), and not commutative. Every driver runs it: a
/// scan of `Seg` items is a segmented scan of their values, whatever the
/// backend or algorithm. Heads are read in scan order: for a reverse scan,
/// flag the last item of each segment.
///
/// ```
/// use scan_core::ops::{Add, Seg, Segmented};
/// use scan_core::{reference, ScanSpec};
/// let x = [(false, 1), (false, 2), (true, 3), (false, 4)].map(|(head, value)| Seg { head, value });
/// let out = reference::scan::<Segmented<Add<i32>>>(&x, ScanSpec::inclusive());
/// assert_eq!(out.iter().map(|s| s.value).collect::<Vec<_>>(), [1, 3, 3, 7]);
/// ```
pub struct Segmented<Op>(PhantomData<Op>);

impl<Op: ScanOp> ScanOp for Segmented<Op> {
    type Item = Seg<Op::Item>;

    fn identity() -> Self::Item {
        Seg { head: false, value: Op::identity() }
    }

    fn combine(l: Self::Item, r: Self::Item) -> Self::Item {
        if r.head {
            r
        } else {
            Seg { head: l.head, value: Op::combine(l.value, r.value) }
        }
    }

    fn cuda_source_if_any() -> Option<CudaSource> {
        Op::cuda_source_if_any().map(|op| lifted::<Op::Item>(&op))
    }

    fn multiplies_narrow_floats() -> bool {
        Op::multiplies_narrow_floats()
    }
}

impl<Op: CudaOp> CudaOp for Segmented<Op> {
    fn cuda_source() -> CudaSource {
        lifted::<Op::Item>(&Op::cuda_source())
    }
}

/// The CUDA of the lifted operator: `op`'s source, then a struct whose `Item`
/// is `{ bool head; op::Item value; }` (the C layout of [`Seg`], checked
/// against Rust's by `static_assert`s) and whose `combine` is the rule above.
fn lifted<T>(op: &CudaSource) -> CudaSource {
    let (inner, name) = (&op.name, format!("scan_segmented_{}", op.name));
    let (size, align) = (size_of::<Seg<T>>(), align_of::<Seg<T>>());
    let code = format!(
        "{code}\n#ifndef SCAN_OP_{name}\n#define SCAN_OP_{name}\nstruct {name} {{\n\
         \x20 struct Item {{ bool head; {inner}::Item value; }};\n\
         \x20 static __device__ __forceinline__ Item identity() {{ Item x; x.head = false; x.value = {inner}::identity(); return x; }}\n\
         \x20 static __device__ __forceinline__ Item combine(Item l, Item r) {{\n\
         \x20   if (r.head) return r;\n\
         \x20   Item x; x.head = l.head; x.value = {inner}::combine(l.value, r.value); return x;\n\
         \x20 }}\n}};\n\
         static_assert(sizeof({name}::Item) == {size}, \"size of Seg differs from Rust\");\n\
         static_assert(alignof({name}::Item) == {align}, \"alignment of Seg differs from Rust\");\n#endif\n",
        code = op.code
    );
    CudaSource { name, code }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{Add, MatMul2x2};
    use crate::{reference, ScanSpec};

    /// A segmented scan of the pairs equals a scan of each segment, for a
    /// non-commutative operator.
    #[test]
    fn a_scan_of_pairs_is_a_segmented_scan_of_the_values() {
        let values: Vec<[i32; 4]> = (0..200).map(|i| [1, i % 3, (i % 5) - 2, 1]).collect();
        let heads: Vec<bool> = (0..200).map(|i| i % 7 == 0 || i % 11 == 3).collect();
        let pairs: Vec<Seg<[i32; 4]>> = values.iter().zip(&heads).map(|(&value, &head)| Seg { head, value }).collect();
        let starts = reference::starts_of_heads(&heads, values.len()).unwrap();
        let spec = ScanSpec::inclusive();
        let want = reference::scan_segments::<MatMul2x2<i32>>(&values, &starts, spec).unwrap();
        let got = reference::scan::<Segmented<MatMul2x2<i32>>>(&pairs, spec);
        assert_eq!(got.iter().map(|s| s.value).collect::<Vec<_>>(), want);
    }

    #[test]
    fn the_laws_hold_on_every_head_combination() {
        type S = Segmented<Add<i64>>;
        let items: Vec<Seg<i64>> =
            [(false, 0), (true, 0), (false, 5), (true, -3), (false, 7)].map(|(head, value)| Seg { head, value }).into();
        for &a in &items {
            assert_eq!(S::combine(S::identity(), a), a);
            assert_eq!(S::combine(a, S::identity()), a);
            for &b in &items {
                for &c in &items {
                    assert_eq!(S::combine(S::combine(a, b), c), S::combine(a, S::combine(b, c)));
                }
            }
        }
    }

    #[test]
    fn the_cuda_source_wraps_the_operators() {
        let src = Segmented::<Add<f32>>::cuda_source();
        assert_eq!(src.name, format!("scan_segmented_{}", Add::<f32>::cuda_source().name));
        assert!(src.code.contains("bool head;") && src.code.contains("static_assert(sizeof("));
        assert_eq!(Segmented::<Add<f32>>::cuda_source_if_any().map(|s| s.name), Some(src.name));
    }
}
