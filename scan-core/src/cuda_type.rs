//! Item types as CUDA C++: names, layout-identical declarations and literals.
//!
//! `#[scan_op]` generates an operator's CUDA source at run time (in
//! [`CudaOp::cuda_source`](crate::CudaOp::cuda_source)) so that it can ask each
//! item type for its C++ declaration. Rust gives tuples no guaranteed layout, so
//! their C++ structs are built from `offset_of!`/`size_of`/`align_of` of the very
//! type being scanned: fields in offset order, explicit padding, and a
//! `static_assert` on the size and alignment. The bytes a GPU kernel reads are
//! therefore the bytes the host wrote.
//!
//! ```
//! use scan_core::CudaType;
//!
//! assert_eq!(<f32 as CudaType>::c_name(), "float");
//! let mut decls = String::new();
//! <(f32, u32) as CudaType>::c_decls(&mut decls);
//! assert!(decls.contains("static_assert(sizeof(scan_tuple2_float_unsigned_int) == 8"));
//! ```

use std::fmt::Debug;
use std::mem::{align_of, offset_of, size_of};
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

/// A type a scan item can be made of on the GPU.
///
/// Implemented for the scalars (`bool`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`, and the `half` crate's `bf16` and `f16`, re-exported as
/// `scan_core::maps::{bf16, f16}`), tuples of up to 6 and arrays of them, and
/// by `#[scan_item]` for `#[repr(C)]` structs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a scan item on the GPU",
    label = "no CUDA declaration",
    note = "items are scalars (i32 u32 i64 u64 f32 f64 bf16 f16 bool), tuples and arrays of them, and #[repr(C)] structs annotated with #[scan_item]"
)]
pub trait CudaType: Copy + 'static {
    /// The C++ type name (a valid identifier for aggregates).
    fn c_name() -> String;
    /// Appends the declarations the type needs, dependencies first; each is
    /// guarded, so appending one twice to a source is harmless.
    fn c_decls(out: &mut String) {
        let _ = out;
    }
    /// A C++ expression of this type with the value `self` (bit-exact for floats).
    fn c_literal(&self) -> String;
}

/// A numeric scalar: what a type parameter `T` of a generic operator stands for.
///
/// Integer arithmetic wraps (as on the GPU, in every build profile); float
/// `max`/`min` ignore NaN like `f32::max` and CUDA's `fmaxf`, and order
/// `-0 < +0` like `fmaxf`/`fminf` (where `f32::max` may return either zero). `LOWEST` and
/// `HIGHEST` are the identities of max and min: `-inf`/`+inf` for floats,
/// `MIN`/`MAX` for integers.
///
/// ```
/// use scan_core::CudaScalar;
/// assert_eq!(<i32 as CudaScalar>::wrapping_add(i32::MAX, 1), i32::MIN);
/// assert_eq!(<f32 as CudaScalar>::LOWEST, f32::NEG_INFINITY);
/// assert_eq!(CudaScalar::max(f32::NAN, 1.0f32), 1.0);
/// ```
///
/// Generic code calls `a.max(b)` through this trait. Write it as a bound by
/// path (`T: scan::CudaScalar`) rather than importing it: with the trait in
/// scope, `x.max(y)` on a concrete integer is ambiguous with `Ord::max`.
pub trait CudaScalar:
    CudaType
    + Debug
    + Send
    + Sync
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
{
    /// Zero, the identity of addition.
    const ZERO: Self;
    /// One, the identity of multiplication.
    const ONE: Self;
    /// The identity of `max`: `-inf` for floats, `MIN` for integers.
    const LOWEST: Self;
    /// The identity of `min`: `+inf` for floats, `MAX` for integers.
    const HIGHEST: Self;
    /// `self + other`, wrapping for integers.
    fn wrapping_add(self, other: Self) -> Self;
    /// `self - other`, wrapping for integers.
    fn wrapping_sub(self, other: Self) -> Self;
    /// `self * other`, wrapping for integers.
    fn wrapping_mul(self, other: Self) -> Self;
    /// `-self`, wrapping for integers.
    fn wrapping_neg(self) -> Self;
    /// The larger value; for floats, a NaN operand is ignored (`f32::max`).
    fn max(self, other: Self) -> Self;
    /// The smaller value; for floats, a NaN operand is ignored (`f32::min`).
    fn min(self, other: Self) -> Self;
}

/// `f32`, `f64`, `bf16` and `f16`: scalars with negation. (The float methods
/// of `#[scan_op]` bodies, `exp`, `ln`, ..., are `f32`/`f64` ones.)
pub trait CudaFloat: CudaScalar + Neg<Output = Self> {}

/// A C++ identifier made from a Rust name or path. Punctuation becomes `_`;
/// a non-ASCII character (Rust names may be any Unicode word, NVRTC reads
/// ASCII only) becomes its code point in hex between `_`s, so that two
/// operators named in another script do not both become `___`.
fn ident(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            c if c.is_ascii_alphanumeric() => s.push(c),
            c if c.is_ascii() => s.push('_'),
            c => s.push_str(&format!("_u{:x}_", c as u32)),
        }
    }
    s
}

macro_rules! int_scalar {
    ($($t:ty => $c:literal, $suffix:literal;)*) => {$(
        impl CudaType for $t {
            fn c_name() -> String {
                $c.to_string()
            }
            fn c_literal(&self) -> String {
                // `-2147483648` is not an int literal in C++ (it is the negation
                // of a too-large one): write the minimum as `MIN+1 - 1`.
                if *self == <$t>::MIN && <$t>::MIN != 0 {
                    format!("({}{} - 1{})", <$t>::MIN + 1, $suffix, $suffix)
                } else {
                    format!("{}{}", self, $suffix)
                }
            }
        }
        impl CudaScalar for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            #[inline]
            fn wrapping_add(self, other: Self) -> Self {
                <$t>::wrapping_add(self, other)
            }
            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                <$t>::wrapping_sub(self, other)
            }
            #[inline]
            fn wrapping_mul(self, other: Self) -> Self {
                <$t>::wrapping_mul(self, other)
            }
            #[inline]
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            #[inline]
            fn max(self, other: Self) -> Self {
                Ord::max(self, other)
            }
            #[inline]
            fn min(self, other: Self) -> Self {
                Ord::min(self, other)
            }
        }
    )*};
}
int_scalar! {
    i32 => "int", "";
    u32 => "unsigned int", "u";
    i64 => "long long", "ll";
    u64 => "unsigned long long", "ull";
}

macro_rules! float_scalar {
    ($($t:ty => $c:literal, $suffix:literal, $bits:literal;)*) => {$(
        impl CudaType for $t {
            fn c_name() -> String {
                $c.to_string()
            }
            fn c_literal(&self) -> String {
                if self.is_finite() {
                    // `{:?}` is the shortest text that parses back to the same
                    // value (it always has a `.` or an exponent).
                    format!("{:?}{}", self, $suffix)
                } else {
                    // inf and NaN (with its payload) by their bits.
                    format!($bits, self.to_bits())
                }
            }
        }
        impl CudaScalar for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline]
            fn wrapping_add(self, other: Self) -> Self {
                self + other
            }
            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                self - other
            }
            #[inline]
            fn wrapping_mul(self, other: Self) -> Self {
                self * other
            }
            #[inline]
            fn wrapping_neg(self) -> Self {
                -self
            }
            #[inline]
            fn max(self, other: Self) -> Self {
                // Like CUDA's `fmaxf`: a NaN operand is ignored, and +0 wins
                // over -0 (`f32::max` may return either zero). Equal operands
                // are merged bitwise (+0 & -0 = +0). Two selects and no call
                // to `f32::max`: no branch per item in the CPU scan's chains.
                let tie = <$t>::from_bits(self.to_bits() & other.to_bits());
                #[allow(clippy::eq_op)]
                let larger = if self > other || other != other { self } else { other };
                if self == other { tie } else { larger }
            }
            #[inline]
            fn min(self, other: Self) -> Self {
                // As `max`, mirrored: -0 wins over +0, like `fminf`.
                let tie = <$t>::from_bits(self.to_bits() | other.to_bits());
                #[allow(clippy::eq_op)]
                let smaller = if self < other || other != other { self } else { other };
                if self == other { tie } else { smaller }
            }
        }
        impl CudaFloat for $t {}
    )*};
}
float_scalar! {
    f32 => "float", "f", "__int_as_float((int){:#010x}u)";
    f64 => "double", "", "__longlong_as_double((long long){:#018x}ull)";
}

// bf16 and f16: 2-byte floats with the `half` crate's arithmetic, which
// rounds the f32 result of each operation to the nearest value (ties to
// even). The GPU does the same (PRELUDE: widen, the f32 `_rn` operation,
// narrow as `half` does), so results are bit for bit the CPU's, NaNs aside:
// a NaN result is a NaN on both, but the GPU's hardware conversions give the
// canonical NaN where `half` keeps sign and payload, and bf16's widening
// keeps a signalling NaN signalling where `half` quiets it (a helper's
// exhaustive check on an H100, 2026-12-06: every f32 narrowed, every bf16
// and f16 widened, every pair through + - * / max min and the comparisons,
// no other difference). (Rounding an f32 result once more is exact
// rounding here: f32 carries more than twice the precision, plus two bits,
// of either type.)
macro_rules! half_scalar {
    ($($t:ty => $c:literal;)*) => {$(
        impl CudaType for $t {
            fn c_name() -> String {
                $c.to_string()
            }
            fn c_literal(&self) -> String {
                format!(concat!($c, "_bits(0x{:04x}u)"), self.to_bits())
            }
        }
        impl CudaScalar for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            #[inline]
            fn wrapping_add(self, other: Self) -> Self {
                self + other
            }
            #[inline]
            fn wrapping_sub(self, other: Self) -> Self {
                self - other
            }
            #[inline]
            fn wrapping_mul(self, other: Self) -> Self {
                self * other
            }
            #[inline]
            fn wrapping_neg(self) -> Self {
                -self
            }
            #[inline]
            fn max(self, other: Self) -> Self {
                // As f32's: a NaN operand is ignored, equal operands merge
                // bitwise (+0 over -0).
                if self == other {
                    <$t>::from_bits(self.to_bits() & other.to_bits())
                } else if self > other || other.is_nan() {
                    self
                } else {
                    other
                }
            }
            #[inline]
            fn min(self, other: Self) -> Self {
                if self == other {
                    <$t>::from_bits(self.to_bits() | other.to_bits())
                } else if self < other || other.is_nan() {
                    self
                } else {
                    other
                }
            }
        }
        impl CudaFloat for $t {}
    )*};
}
half_scalar! {
    half::bf16 => "scan_bf16";
    half::f16 => "scan_f16";
}

impl CudaType for bool {
    fn c_name() -> String {
        "bool".to_string()
    }
    fn c_literal(&self) -> String {
        self.to_string()
    }
}

/// Scalars with a sign: the ones `-x` applies to in Rust. Generated code
/// negates a value of a type the macro cannot see (a type parameter, a
/// struct field) through [`__private::neg`], bounded by this trait, so that
/// rustc refuses `-x` on an unsigned integer as it would in the code the
/// user wrote (`CudaScalar::wrapping_neg` would wrap it instead).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`-` does not apply to `{Self}`: it has no sign",
    label = "negated here",
    note = "Rust has no unary `-` on unsigned integers; `#[scan_op]` and `#[scan_maps]` bodies follow Rust"
)]
pub trait SignedScalar: CudaScalar {}
impl SignedScalar for i32 {}
impl SignedScalar for i64 {}
impl SignedScalar for f32 {}
impl SignedScalar for f64 {}
impl SignedScalar for half::bf16 {}
impl SignedScalar for half::f16 {}

/// The values generated code compares: scalars and `bool`. Rust also
/// compares tuples, arrays and structs, which the generated C++ does not; a
/// struct field the macro cannot see is compared through
/// [`__private::scalar`], bounded by this trait.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be compared in a `#[scan_op]` or `#[scan_maps]` body",
    label = "not a scalar",
    note = "comparisons there apply to scalars (i32 u32 i64 u64 f32 f64 bf16 f16) and bool: the GPU source has no `==` or `<` on tuples, arrays or structs; compare their fields"
)]
pub trait ComparedScalar: Copy {}
impl<T: CudaScalar> ComparedScalar for T {}
impl ComparedScalar for bool {}

/// One field of an aggregate, for [`__private::c_struct`].
#[doc(hidden)]
pub struct CField {
    pub name: String,
    pub c_type: String,
    pub offset: usize,
    pub size: usize,
    /// The field type's alignment: with the others it gives the struct's
    /// natural alignment, which a `repr(align(N))` may raise.
    pub align: usize,
}

macro_rules! tuple {
    ($n:literal: $($t:ident $i:tt),*) => {
        impl<$($t: CudaType),*> CudaType for ($($t,)*) {
            fn c_name() -> String {
                let mut s = String::from(concat!("scan_tuple", $n));
                $( s.push('_'); s.push_str(&ident(&$t::c_name())); )*
                s
            }
            fn c_decls(out: &mut String) {
                $( $t::c_decls(out); )*
                let fields = [$(CField {
                    name: format!("f{}", $i),
                    c_type: $t::c_name(),
                    offset: offset_of!(Self, $i),
                    size: size_of::<$t>(),
                    align: align_of::<$t>(),
                }),*];
                __private::c_struct(out, &Self::c_name(), &fields, size_of::<Self>(), align_of::<Self>());
            }
            fn c_literal(&self) -> String {
                let parts = [$(self.$i.c_literal()),*];
                format!("{}::make({})", Self::c_name(), parts.join(", "))
            }
        }
    };
}
tuple!(1: A 0);
tuple!(2: A 0, B 1);
tuple!(3: A 0, B 1, C 2);
tuple!(4: A 0, B 1, C 2, D 3);
tuple!(5: A 0, B 1, C 2, D 3, E 4);
tuple!(6: A 0, B 1, C 2, D 3, E 4, F 5);

impl<T: CudaType, const N: usize> CudaType for [T; N] {
    fn c_name() -> String {
        format!("scan_array{N}_{}", ident(&T::c_name()))
    }
    fn c_decls(out: &mut String) {
        T::c_decls(out);
        let name = Self::c_name();
        let t = T::c_name();
        let params: Vec<String> = (0..N).map(|i| format!("{t} a{i}")).collect();
        let sets: String = (0..N).map(|i| format!(" x.v[{i}] = a{i};")).collect();
        let decl = format!(
            "struct {name} {{\n  {t} v[{N}];\n  \
             static __device__ __forceinline__ {name} make({}) {{ {name} x;{sets} return x; }}\n}};\n\
             static_assert(sizeof({name}) == {}, \"layout of {name} differs from Rust\");\n",
            params.join(", "),
            size_of::<Self>(),
        );
        __private::declare_type(out, &name, &decl);
    }
    fn c_literal(&self) -> String {
        let parts: Vec<String> = self.iter().map(CudaType::c_literal).collect();
        format!("{}::make({})", Self::c_name(), parts.join(", "))
    }
}

/// Helpers for the code `#[scan_op]` and `#[scan_item]` generate; not an API.
#[doc(hidden)]
pub mod __private {
    use super::{CField, SignedScalar};

    /// A compared value of a type the macro cannot see: rustc refuses
    /// anything but a scalar or a bool there (`ComparedScalar`).
    #[inline]
    pub fn scalar<T: super::ComparedScalar>(x: T) -> T {
        x
    }

    /// `-x` in generated code on a type the macro cannot see: wrapping, as
    /// everywhere in generated code, and refused by rustc on unsigned types.
    #[inline]
    pub fn neg<T: SignedScalar>(x: T) -> T {
        x.wrapping_neg()
    }

    /// Appends a guarded C++ struct whose layout equals the Rust one: `fields`
    /// in Rust order (the order of `make`'s parameters), laid out by offset
    /// with explicit padding, then `static_assert`s on size and alignment.
    pub fn c_struct(out: &mut String, name: &str, fields: &[CField], size: usize, align: usize) {
        let mut by_offset: Vec<&CField> = fields.iter().collect();
        by_offset.sort_by_key(|f| f.offset);
        let mut body = String::new();
        let mut at = 0;
        for (k, f) in by_offset.iter().enumerate() {
            if f.offset > at {
                body.push_str(&format!("  unsigned char pad{k}_[{}];\n", f.offset - at));
            }
            body.push_str(&format!("  {} {};\n", f.c_type, f.name));
            at = f.offset + f.size;
        }
        if size > at {
            body.push_str(&format!("  unsigned char pad_end_[{}];\n", size - at));
        }
        let params: Vec<String> = fields.iter().map(|f| format!("{} a_{}", f.c_type, f.name)).collect();
        let sets: String = fields.iter().map(|f| format!(" x.{0} = a_{0};", f.name)).collect();
        // A `repr(C, align(N))` raises the alignment above the fields' own:
        // say so in C++ too. Otherwise the declaration names none, as before.
        let natural = fields.iter().map(|f| f.align).max().unwrap_or(1);
        let aligned = if align > natural { format!("__align__({align}) ") } else { String::new() };
        let decl = format!(
            "struct {aligned}{name} {{\n{body}  \
             static __device__ __forceinline__ {name} make({}) {{ {name} x;{sets} return x; }}\n}};\n\
             static_assert(sizeof({name}) == {size}, \"size of {name} differs from Rust\");\n\
             static_assert(alignof({name}) == {align}, \"alignment of {name} differs from Rust\");\n",
            params.join(", "),
        );
        declare_type(out, name, &decl);
    }

    /// Appends the declaration `decl` of the C++ type `name` under its guard,
    /// once. Another declaration under the same name means two Rust types
    /// met one C++ name: the source then gets an `#error` naming it, so that
    /// NVRTC refuses it, instead of reading one type with the other's layout
    /// (the guard would have skipped the second declaration silently).
    pub fn declare_type(out: &mut String, name: &str, decl: &str) {
        let guarded = format!("#ifndef SCAN_TYPE_{name}\n#define SCAN_TYPE_{name}\n{decl}#endif\n");
        if out.contains(&guarded) {
            return;
        }
        if out.contains(&format!("#define SCAN_TYPE_{name}\n")) {
            out.push_str(&format!(
                "#error \"scan: two different Rust types have the C++ name {name}; rename one of them\"\n"
            ));
            return;
        }
        out.push_str(&guarded);
    }

    /// The C++ name of a `#[scan_item]` struct: its Rust path, readable, then
    /// a hash of its layout (fields' names, C++ types and offsets, size and
    /// alignment). Paths alone do not tell types apart: `a::b::S` and
    /// `a_b::S` both read `a_b_S`, and structs declared inside two fns of one
    /// module have one `module_path!()`. Types of one path and one layout
    /// share a name harmlessly.
    pub fn item_name(path: &str, fields: &[CField], size: usize, align: usize) -> String {
        // FNV-1a: stable across builds and platforms (the name is part of the
        // source that the disk cache keys on).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut eat = |bytes: &[u8]| {
            for b in bytes.iter().chain([&0xff]) {
                h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
        };
        eat(path.as_bytes());
        for f in fields {
            eat(f.name.as_bytes());
            eat(f.c_type.as_bytes());
            eat(&(f.offset as u64).to_le_bytes());
            eat(&(f.size as u64).to_le_bytes());
        }
        eat(&(size as u64).to_le_bytes());
        eat(&(align as u64).to_le_bytes());
        format!("{}_{:08x}", op_name(path, &[]), h >> 32)
    }

    /// The C++ name of one instantiation: the operator's Rust path (unique in
    /// a program, so that any set of operators can share one NVRTC module),
    /// then one `_type` per type argument: `scan_core::ops::Add` with `f32`
    /// is `scan_core_ops_Add_float`.
    pub fn op_name(path: &str, type_args: &[String]) -> String {
        let mut s = path.split("::").map(super::ident).collect::<Vec<_>>().join("_");
        for t in type_args {
            s.push('_');
            s.push_str(&super::ident(t));
        }
        s
    }

    /// Device helpers every generated operator uses. Integer `+ - *` and
    /// negation are computed on unsigned types (where C++ defines overflow) so
    /// they wrap like Rust's `wrapping_*`; float `+ - * /` use the `_rn`
    /// intrinsics so that NVRTC never contracts them into an FMA the CPU does
    /// not do; float-to-integer casts saturate (NaN -> 0) like Rust's `as`.
    pub const PRELUDE: &str = r#"#ifndef SCAN_PRELUDE
#define SCAN_PRELUDE
#define SCAN_INT_OPS(T, U) \
  static __device__ __forceinline__ T scan_add(T a, T b) { return (T)((U)a + (U)b); } \
  static __device__ __forceinline__ T scan_sub(T a, T b) { return (T)((U)a - (U)b); } \
  static __device__ __forceinline__ T scan_mul(T a, T b) { return (T)((U)a * (U)b); } \
  static __device__ __forceinline__ T scan_neg(T a) { return (T)((U)0 - (U)a); } \
  static __device__ __forceinline__ T scan_not(T a) { return (T)~(U)a; } \
  static __device__ __forceinline__ T scan_and(T a, T b) { return a & b; } \
  static __device__ __forceinline__ T scan_or(T a, T b) { return a | b; } \
  static __device__ __forceinline__ T scan_xor(T a, T b) { return a ^ b; } \
  static __device__ __forceinline__ T scan_div(T a, T b) { return a / b; } \
  static __device__ __forceinline__ T scan_rem(T a, T b) { return a % b; } \
  static __device__ __forceinline__ T scan_max(T a, T b) { return a > b ? a : b; } \
  static __device__ __forceinline__ T scan_min(T a, T b) { return a < b ? a : b; }
SCAN_INT_OPS(int, unsigned int)
SCAN_INT_OPS(unsigned int, unsigned int)
SCAN_INT_OPS(long long, unsigned long long)
SCAN_INT_OPS(unsigned long long, unsigned long long)
#undef SCAN_INT_OPS
// Rust's `! & | ^` on values whose type the generated code does not see (a
// struct field, a type parameter): logical on bool (and a bool again),
// bitwise on integers.
static __device__ __forceinline__ bool scan_not(bool a) { return !a; }
static __device__ __forceinline__ bool scan_and(bool a, bool b) { return a && b; }
static __device__ __forceinline__ bool scan_or(bool a, bool b) { return a || b; }
static __device__ __forceinline__ bool scan_xor(bool a, bool b) { return a != b; }
#define SCAN_FLOAT_OPS(T, ADD, SUB, MUL, DIV, SQRT, SFX) \
  static __device__ __forceinline__ T scan_add(T a, T b) { return ADD(a, b); } \
  static __device__ __forceinline__ T scan_sub(T a, T b) { return SUB(a, b); } \
  static __device__ __forceinline__ T scan_mul(T a, T b) { return MUL(a, b); } \
  static __device__ __forceinline__ T scan_div(T a, T b) { return DIV(a, b); } \
  static __device__ __forceinline__ T scan_neg(T a) { return -a; } \
  static __device__ __forceinline__ T scan_rem(T a, T b) { return fmod##SFX(a, b); } \
  static __device__ __forceinline__ T scan_max(T a, T b) { return fmax##SFX(a, b); } \
  static __device__ __forceinline__ T scan_min(T a, T b) { return fmin##SFX(a, b); } \
  static __device__ __forceinline__ T scan_abs(T a) { return fabs##SFX(a); } \
  static __device__ __forceinline__ T scan_exp(T a) { return exp##SFX(a); } \
  static __device__ __forceinline__ T scan_ln(T a) { return log##SFX(a); } \
  static __device__ __forceinline__ T scan_ln_1p(T a) { return log1p##SFX(a); } \
  static __device__ __forceinline__ T scan_exp_m1(T a) { return expm1##SFX(a); } \
  static __device__ __forceinline__ T scan_sqrt(T a) { return SQRT(a); } \
  static __device__ __forceinline__ T scan_mul_add(T a, T b, T c) { return fma##SFX(a, b, c); }
SCAN_FLOAT_OPS(float, __fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn, __fsqrt_rn, f)
SCAN_FLOAT_OPS(double, __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn, __dsqrt_rn, )
#undef SCAN_FLOAT_OPS
template <class To, class From> __device__ __forceinline__ To scan_cast(From x) { return (To)x; }
#define SCAN_F2I(F, I, FN) template <> __device__ __forceinline__ I scan_cast<I, F>(F x) { return FN(x); }
SCAN_F2I(float, int, __float2int_rz)
SCAN_F2I(float, unsigned int, __float2uint_rz)
SCAN_F2I(float, long long, __float2ll_rz)
SCAN_F2I(float, unsigned long long, __float2ull_rz)
SCAN_F2I(double, int, __double2int_rz)
SCAN_F2I(double, unsigned int, __double2uint_rz)
SCAN_F2I(double, long long, __double2ll_rz)
SCAN_F2I(double, unsigned long long, __double2ull_rz)
#undef SCAN_F2I
// bf16 and f16 (scan_core's half_scalar): widened to f32 exactly and
// narrowed to the nearest value (ties to even) as the `half` crate does
// (NaNs aside: their sign and payload, and bf16's signalling NaNs, which
// `half` quiets when widening); each operation is the f32 one, rounded once.
struct __align__(2) scan_bf16 { unsigned short bits; };
struct __align__(2) scan_f16 { unsigned short bits; };
static __device__ __forceinline__ scan_bf16 scan_bf16_bits(unsigned b) { scan_bf16 x; x.bits = (unsigned short)b; return x; }
static __device__ __forceinline__ scan_f16 scan_f16_bits(unsigned b) { scan_f16 x; x.bits = (unsigned short)b; return x; }
static __device__ __forceinline__ float scan_widen(scan_bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }
// From sm_80 bf16 is narrowed by the hardware conversion (round to nearest
// even, subnormals kept: the `half` crate's result for every value but NaN,
// which becomes the canonical NaN, its sign and payload lost, as with f16
// below): the bit-level code below costs about 12 instructions per value, which held bf16 sums
// accumulated in f32 at 0.6-0.7 of copy speed (bench/gpu-h200-results.md).
static __device__ __forceinline__ scan_bf16 scan_narrow(float v, scan_bf16) {
#if __CUDA_ARCH__ >= 800
  scan_bf16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(v)); return h;
#else
  const unsigned x = __float_as_uint(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return scan_bf16_bits((x >> 16) | 0x0040u);
  const unsigned round = 0x8000u;
  return scan_bf16_bits((x >> 16) + ((x & round) != 0 && (x & (3u * round - 1u)) != 0 ? 1u : 0u));
#endif
}
// f16 by the hardware conversions (exact, and round to nearest even; only
// a NaN's payload may differ from `half`'s): the bit-level code took NVRTC
// a minute per module, inlined in every unrolled combine.
static __device__ __forceinline__ float scan_widen(scan_f16 h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits)); return f;
}
static __device__ __forceinline__ scan_f16 scan_narrow(float v, scan_f16) {
  scan_f16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(v)); return h;
}
#define SCAN_HALF_OPS(H) \
  static __device__ __forceinline__ H scan_add(H a, H b) { return scan_narrow(__fadd_rn(scan_widen(a), scan_widen(b)), a); } \
  static __device__ __forceinline__ H scan_sub(H a, H b) { return scan_narrow(__fsub_rn(scan_widen(a), scan_widen(b)), a); } \
  static __device__ __forceinline__ H scan_mul(H a, H b) { return scan_narrow(__fmul_rn(scan_widen(a), scan_widen(b)), a); } \
  static __device__ __forceinline__ H scan_div(H a, H b) { return scan_narrow(__fdiv_rn(scan_widen(a), scan_widen(b)), a); } \
  static __device__ __forceinline__ H scan_rem(H a, H b) { return scan_narrow(fmodf(scan_widen(a), scan_widen(b)), a); } \
  static __device__ __forceinline__ H scan_neg(H a) { H r; r.bits = (unsigned short)(a.bits ^ 0x8000u); return r; } \
  static __device__ __forceinline__ bool operator==(H a, H b) { return scan_widen(a) == scan_widen(b); } \
  static __device__ __forceinline__ bool operator!=(H a, H b) { return scan_widen(a) != scan_widen(b); } \
  static __device__ __forceinline__ bool operator<(H a, H b) { return scan_widen(a) < scan_widen(b); } \
  static __device__ __forceinline__ bool operator<=(H a, H b) { return scan_widen(a) <= scan_widen(b); } \
  static __device__ __forceinline__ bool operator>(H a, H b) { return scan_widen(a) > scan_widen(b); } \
  static __device__ __forceinline__ bool operator>=(H a, H b) { return scan_widen(a) >= scan_widen(b); } \
  static __device__ __forceinline__ H scan_max(H a, H b) { \
    const float x = scan_widen(a), y = scan_widen(b); H t; t.bits = (unsigned short)(a.bits & b.bits); \
    return x == y ? t : (x > y || y != y) ? a : b; } \
  static __device__ __forceinline__ H scan_min(H a, H b) { \
    const float x = scan_widen(a), y = scan_widen(b); H t; t.bits = (unsigned short)(a.bits | b.bits); \
    return x == y ? t : (x < y || y != y) ? a : b; }
SCAN_HALF_OPS(scan_bf16)
SCAN_HALF_OPS(scan_f16)
#undef SCAN_HALF_OPS
#endif
"#;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_other_scripts_stay_distinct_in_cuda() {
        let (sum, product) = (__private::op_name("ops::Άθροισμα", &[]), __private::op_name("ops::Γινόμενο", &[]));
        assert!(sum.is_ascii() && product.is_ascii(), "{sum} {product}");
        assert_ne!(sum, product);
        // ASCII paths are spelled as before.
        assert_eq!(__private::op_name("scan_core::ops::Add", &["float".into()]), "scan_core_ops_Add_float");
    }

    #[test]
    fn a_second_type_under_one_cuda_name_is_an_error_not_skipped() {
        let field = |c_type: &str| CField { name: "a".into(), c_type: c_type.into(), offset: 0, size: 4, align: 4 };
        let mut s = String::new();
        __private::c_struct(&mut s, "m_S", &[field("float")], 4, 4);
        __private::c_struct(&mut s, "m_S", &[field("float")], 4, 4);
        assert_eq!((s.matches("struct m_S").count(), s.contains("#error")), (1, false), "{s}");
        __private::c_struct(&mut s, "m_S", &[field("unsigned int")], 4, 4);
        assert_eq!(s.matches("struct m_S").count(), 1, "{s}");
        assert!(
            s.ends_with("#error \"scan: two different Rust types have the C++ name m_S; rename one of them\"\n"),
            "{s}"
        );
        // An item's name tells layouts of one path apart, and only them.
        let name = |c_type: &str| __private::item_name("m::S", &[field(c_type)], 4, 4);
        assert!(name("float").starts_with("m_S_") && name("float").len() == "m_S_".len() + 8);
        assert_eq!(name("float"), name("float"));
        assert_ne!(name("float"), name("unsigned int"));
        assert_ne!(name("float"), __private::item_name("m::S", &[field("float")], 8, 4));
    }

    #[test]
    fn tuple_fields_are_declared_in_offset_order_with_padding() {
        let mut s = String::new();
        <(bool, f64) as CudaType>::c_decls(&mut s);
        // (bool, f64): Rust places the f64 first or pads after the bool;
        // either way the C struct states the real offsets.
        let f0 = s.find("bool f0;");
        let f1 = s.find("double f1;");
        assert!(f0.is_some() && f1.is_some(), "{s}");
        let (o0, o1) = (offset_of!((bool, f64), 0), offset_of!((bool, f64), 1));
        assert_eq!(f0 < f1, o0 < o1, "{s}");
        assert!(s.contains("static_assert(sizeof(scan_tuple2_bool_double) == 16"), "{s}");
        assert!(s.contains("unsigned char pad"), "{s}");
    }

    #[test]
    fn a_raised_alignment_is_declared_and_a_natural_one_is_not() {
        let field =
            |name: &str, offset| CField { name: name.into(), c_type: "float".into(), offset, size: 4, align: 4 };
        let mut raised = String::new();
        __private::c_struct(&mut raised, "wide", &[field("a", 0), field("b", 4), field("c", 8)], 16, 16);
        assert!(raised.contains("struct __align__(16) wide {"), "{raised}");
        assert!(raised.contains("unsigned char pad_end_[4];"), "{raised}");
        let mut natural = String::new();
        __private::c_struct(&mut natural, "plain", &[field("a", 0), field("b", 4)], 8, 4);
        assert!(natural.contains("struct plain {"), "{natural}");
    }

    #[test]
    fn float_literals_round_trip_and_name_infinities_by_bits() {
        assert_eq!(0.1f32.c_literal(), "0.1f");
        assert_eq!(1.0f64.c_literal(), "1.0");
        assert_eq!(f32::NEG_INFINITY.c_literal(), "__int_as_float((int)0xff800000u)");
        assert_eq!(f64::INFINITY.c_literal(), "__longlong_as_double((long long)0x7ff0000000000000ull)");
    }

    #[test]
    fn float_max_min_order_signed_zeros_like_cuda() {
        assert!(CudaScalar::max(-0.0f32, 0.0).is_sign_positive());
        assert!(CudaScalar::max(0.0f64, -0.0).is_sign_positive());
        assert!(CudaScalar::min(0.0f32, -0.0).is_sign_negative());
        assert!(CudaScalar::min(-0.0f64, 0.0).is_sign_negative());
        assert_eq!(CudaScalar::max(f32::NAN, -1.0), -1.0);
        assert!(CudaScalar::min(f64::NAN, f64::NAN).is_nan());
    }

    #[test]
    fn half_precision_scalars_spell_their_bits_and_order_zeros_like_f32() {
        use half::{bf16, f16};
        assert_eq!(<bf16 as CudaType>::c_name(), "scan_bf16");
        assert_eq!(bf16::ONE.c_literal(), "scan_bf16_bits(0x3f80u)");
        assert_eq!(f16::NEG_INFINITY.c_literal(), "scan_f16_bits(0xfc00u)");
        assert_eq!(<bf16 as CudaScalar>::LOWEST, bf16::NEG_INFINITY);
        assert!(CudaScalar::max(bf16::NEG_ZERO, bf16::ZERO).is_sign_positive());
        assert!(CudaScalar::min(f16::ZERO, f16::NEG_ZERO).is_sign_negative());
        assert_eq!(CudaScalar::max(bf16::NAN, bf16::ONE), bf16::ONE);
        assert_eq!(CudaScalar::min(f16::ONE, f16::NAN), f16::ONE);
        assert_eq!(CudaScalar::max(f16::from_f32(-2.0), f16::from_f32(3.0)), f16::from_f32(3.0));
        // The half crate's arithmetic: the f32 result rounded once.
        let (a, b) = (bf16::from_f32(1.0), bf16::from_f32(1.0 / 256.0));
        assert_eq!(CudaScalar::wrapping_add(a, b), bf16::from_f32(1.0 + 1.0 / 256.0));
    }

    #[test]
    fn integer_minimums_are_valid_cxx() {
        assert_eq!(i32::MIN.c_literal(), "(-2147483647 - 1)");
        assert_eq!(i64::MIN.c_literal(), "(-9223372036854775807ll - 1ll)");
        assert_eq!(u32::MAX.c_literal(), "4294967295u");
        assert_eq!(0u64.c_literal(), "0ull");
    }

    #[test]
    fn decls_are_emitted_once() {
        let mut s = String::new();
        <[f32; 4] as CudaType>::c_decls(&mut s);
        <[f32; 4] as CudaType>::c_decls(&mut s);
        assert_eq!(s.matches("struct scan_array4_float {").count(), 1);
    }
}
