//! Operators with hand-written CUDA (`impl CudaOp`), covering every item shape
//! the kernels must move: scalars of 4 and 8 bytes, pairs, `[T; 4]`, a
//! `#[repr(C)]` struct and a 64-byte item. Shared by the NVRTC and GPU suites.
#![allow(dead_code)]

use scan_core::{CudaOp, CudaSource, ScanOp};

macro_rules! op {
    ($name:ident, $item:ty, $id:expr, |$l:ident, $r:ident| $body:expr, $cuda:expr) => {
        pub struct $name;
        impl ScanOp for $name {
            type Item = $item;
            fn identity() -> $item {
                $id
            }
            fn combine($l: $item, $r: $item) -> $item {
                $body
            }
            fn cuda_source_if_any() -> Option<CudaSource> {
                Some(<Self as CudaOp>::cuda_source())
            }
        }
        impl CudaOp for $name {
            fn cuda_source() -> CudaSource {
                CudaSource {
                    name: stringify!($name).into(),
                    code: format!("struct {} {{\n{}\n}};", stringify!($name), $cuda),
                }
            }
        }
    };
}

op!(
    AddU32,
    u32,
    0,
    |l, r| l.wrapping_add(r),
    "typedef unsigned int Item;
  static __device__ __forceinline__ Item identity() { return 0u; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l + r; }"
);

op!(
    AddI64,
    i64,
    0,
    |l, r| l.wrapping_add(r),
    "typedef long long Item;
  static __device__ __forceinline__ Item identity() { return 0ll; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    return (long long)((unsigned long long)l + (unsigned long long)r); }"
);

op!(
    AddF32,
    f32,
    0.0,
    |l, r| l + r,
    "typedef float Item;
  static __device__ __forceinline__ Item identity() { return 0.0f; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l + r; }"
);

op!(
    AddF64,
    f64,
    0.0,
    |l, r| l + r,
    "typedef double Item;
  static __device__ __forceinline__ Item identity() { return 0.0; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l + r; }"
);

op!(
    MulF32,
    f32,
    1.0,
    |l, r| l * r,
    "typedef float Item;
  static __device__ __forceinline__ Item identity() { return 1.0f; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l * r; }"
);

op!(
    MaxF32,
    f32,
    f32::NEG_INFINITY,
    |l, r| l.max(r),
    "typedef float Item;
  static __device__ __forceinline__ Item identity() { return __int_as_float(0xff800000); }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return fmaxf(l, r); }"
);

op!(
    MinI32,
    i32,
    i32::MAX,
    |l, r| l.min(r),
    "typedef int Item;
  static __device__ __forceinline__ Item identity() { return 2147483647; }
  static __device__ __forceinline__ Item combine(Item l, Item r) { return l < r ? l : r; }"
);

op!(
    LinRecF32,
    (f32, f32),
    (1.0, 0.0),
    |l, r| (l.0 * r.0, r.0 * l.1 + r.1),
    "struct Item { float f0; float f1; };
  static __device__ __forceinline__ Item identity() { Item x; x.f0 = 1.0f; x.f1 = 0.0f; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; x.f0 = l.f0 * r.f0; x.f1 = r.f0 * l.f1 + r.f1; return x; }"
);

op!(
    LinRecF64,
    (f64, f64),
    (1.0, 0.0),
    |l, r| (l.0 * r.0, r.0 * l.1 + r.1),
    "struct Item { double f0; double f1; };
  static __device__ __forceinline__ Item identity() { Item x; x.f0 = 1.0; x.f1 = 0.0; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; x.f0 = l.f0 * r.f0; x.f1 = r.f0 * l.f1 + r.f1; return x; }"
);

op!(MatMulI32, [i32; 4], [1, 0, 0, 1], |l, r| [
    l[0].wrapping_mul(r[0]).wrapping_add(l[1].wrapping_mul(r[2])),
    l[0].wrapping_mul(r[1]).wrapping_add(l[1].wrapping_mul(r[3])),
    l[2].wrapping_mul(r[0]).wrapping_add(l[3].wrapping_mul(r[2])),
    l[2].wrapping_mul(r[1]).wrapping_add(l[3].wrapping_mul(r[3])),
], "struct Item { unsigned int m[4]; };
  static __device__ __forceinline__ Item identity() { Item x; x.m[0] = 1; x.m[1] = 0; x.m[2] = 0; x.m[3] = 1; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x;
    x.m[0] = l.m[0] * r.m[0] + l.m[1] * r.m[2];
    x.m[1] = l.m[0] * r.m[1] + l.m[1] * r.m[3];
    x.m[2] = l.m[2] * r.m[0] + l.m[3] * r.m[2];
    x.m[3] = l.m[2] * r.m[1] + l.m[3] * r.m[3];
    return x; }");

op!(MatMulF32, [f32; 4], [1.0, 0.0, 0.0, 1.0], |l, r| [
    l[0] * r[0] + l[1] * r[2],
    l[0] * r[1] + l[1] * r[3],
    l[2] * r[0] + l[3] * r[2],
    l[2] * r[1] + l[3] * r[3],
], "struct Item { float m[4]; };
  static __device__ __forceinline__ Item identity() { Item x; x.m[0] = 1.0f; x.m[1] = 0.0f; x.m[2] = 0.0f; x.m[3] = 1.0f; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x;
    x.m[0] = l.m[0] * r.m[0] + l.m[1] * r.m[2];
    x.m[1] = l.m[0] * r.m[1] + l.m[1] * r.m[3];
    x.m[2] = l.m[2] * r.m[0] + l.m[3] * r.m[2];
    x.m[3] = l.m[2] * r.m[1] + l.m[3] * r.m[3];
    return x; }");

/// A user's `#[repr(C)]` struct item: count, sum and the last value seen
/// (non-commutative: "last" keeps the right operand's value).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub count: u32,
    pub last: i32,
    pub sum: f64,
}

op!(
    StatsOp,
    Stats,
    Stats { count: 0, last: 0, sum: 0.0 },
    |l, r| Stats {
        count: l.count.wrapping_add(r.count),
        last: if r.count == 0 { l.last } else { r.last },
        sum: l.sum + r.sum,
    },
    "struct Item { unsigned int count; int last; double sum; };
  static __device__ __forceinline__ Item identity() { Item x; x.count = 0; x.last = 0; x.sum = 0.0; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; x.count = l.count + r.count; x.last = r.count == 0 ? l.last : r.last; x.sum = l.sum + r.sum; return x; }"
);

// A user-defined tuple operator mixing widths: (u8 flag, u64 value), a
// segmented sum (a set flag starts a new segment). 16 bytes with padding;
// the CUDA struct assumes rustc's layout (u8 at 0, u64 at 8), which the
// GPU test asserts.
op!(
    SegSumU64,
    (u8, u64),
    (0, 0),
    |l, r| (l.0 | r.0, if r.0 != 0 { r.1 } else { l.1.wrapping_add(r.1) }),
    "struct Item { unsigned char f0; unsigned long long f1; };
  static __device__ __forceinline__ Item identity() { Item x; x.f0 = 0; x.f1 = 0; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; x.f0 = l.f0 | r.f0; x.f1 = r.f0 != 0 ? r.f1 : l.f1 + r.f1; return x; }"
);

// A 64-byte item (eight f64 lanes added independently): forces a policy
// with fewer threads per block.
op!(
    AddF64x8,
    [f64; 8],
    [0.0; 8],
    |l, r| std::array::from_fn(|i| l[i] + r[i]),
    "struct Item { double v[8]; };
  static __device__ __forceinline__ Item identity() { Item x; for (int i = 0; i < 8; ++i) x.v[i] = 0.0; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; for (int i = 0; i < 8; ++i) x.v[i] = l.v[i] + r.v[i]; return x; }"
);

// A 160-byte item (twenty u64 lanes, wrapping): past the single-pass kernels'
// item limit, so scans of it fall back to Blelloch.
op!(
    AddU64x20,
    [u64; 20],
    [0; 20],
    |l, r| std::array::from_fn(|i| l[i].wrapping_add(r[i])),
    "struct Item { unsigned long long v[20]; };
  static __device__ __forceinline__ Item identity() { Item x; for (int i = 0; i < 20; ++i) x.v[i] = 0; return x; }
  static __device__ __forceinline__ Item combine(Item l, Item r) {
    Item x; for (int i = 0; i < 20; ++i) x.v[i] = l.v[i] + r.v[i]; return x; }"
);
