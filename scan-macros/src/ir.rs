//! The operator body as a small typed expression tree.
//!
//! `lower` turns the syn tree of the user's fn into this IR (rejecting anything
//! outside the supported subset at its token); one tree then feeds the CUDA
//! printer (`cuda`), the associativity checker (`check`) and the numeric
//! sampler. Only what the subset needs is here.

use proc_macro2::Span;

/// A scalar type of the supported subset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    Bool,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// `half::bf16` (`scan::maps::bf16`): arithmetic and comparisons only.
    Bf16,
    /// `half::f16` (`scan::maps::f16`): arithmetic and comparisons only.
    F16,
}

impl Scalar {
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64 | Scalar::Bf16 | Scalar::F16)
    }
    /// bf16 and f16: no literals, casts or float methods but max/min (the
    /// `half` crate has none of them as `f32` does).
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::Bf16 | Scalar::F16)
    }
    pub fn is_int(self) -> bool {
        !self.is_float() && self != Scalar::Bool
    }
    pub fn is_unsigned(self) -> bool {
        matches!(self, Scalar::U32 | Scalar::U64)
    }
    /// The integer range of the type (`None` for floats and bool).
    pub fn int_range(self) -> Option<(i128, i128)> {
        match self {
            Scalar::I32 => Some((i32::MIN.into(), i32::MAX.into())),
            Scalar::U32 => Some((0, u32::MAX.into())),
            Scalar::I64 => Some((i64::MIN.into(), i64::MAX.into())),
            Scalar::U64 => Some((0, u64::MAX.into())),
            _ => None,
        }
    }
}

/// The type of an item or of a sub-expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Scalar(Scalar),
    /// A type parameter of a generic operator (`T`, a
    /// `scan_core::CudaScalar`): its scalar is known only when the operator is
    /// instantiated; rustc checks it.
    Param(String),
    /// The type of a field of a user struct (`Pair::a`) whose scalar the
    /// macro does not see (it never reads the struct's declaration); rustc
    /// checks it.
    Field {
        strukt: syn::Path,
        field: String,
    },
    Tuple(Vec<Ty>),
    Array(Box<Ty>, usize),
    /// A `#[repr(C)]` `#[scan_item]` struct, by path. The macro does not see
    /// the declaration: `fields` lists the fields the operator constructs (in
    /// the order written), each of type `Field` unless known.
    Struct {
        name: syn::Path,
        fields: Vec<(String, Ty)>,
    },
}

impl Ty {
    /// A scalar only rustc knows: a type parameter or a struct field's type.
    pub fn is_opaque_scalar(&self) -> bool {
        matches!(self, Ty::Param(_) | Ty::Field { .. })
    }

    /// The type of two values that rustc makes one type (the operands of
    /// `+` or `max`, an `if`'s branches), as far as the macro sees it: a
    /// struct field's unseen type is the other's where that one is seen
    /// (`l.total + r.best`, with `best: i32::MIN` in the identity, is an
    /// `i32` sum). The checker relies on it: an integer's `MIN` must not pass
    /// for a float's -inf in arithmetic.
    pub fn or_seen<'t>(&'t self, other: &'t Ty) -> &'t Ty {
        match self {
            Ty::Field { .. } => other,
            _ => self,
        }
    }
}

/// A literal, with its written suffix resolved to a type where it had one.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Bool(bool),
    Int(i128),
    Float(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`: a bool from two operands of one type.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge)
    }
}

/// A method of the supported list; `wrapping_*` are folded into `Binary`
/// on integer operands (integer arithmetic always wraps). Everything about
/// each is in [`METHODS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    Max,
    Min,
    Abs,
    Exp,
    Ln,
    Ln1p,
    ExpM1,
    Sqrt,
    MulAdd,
}

/// What a method's receiver (and its arguments, of the same type) may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// Integers and floats (and a `T: CudaScalar`).
    Numbers,
    /// `f32` and `f64`.
    Floats,
    /// Integers (and a `T: CudaScalar`).
    Integers,
}

impl Operands {
    /// For an error message: "`max` is supported on {this}" (integer-only
    /// methods say "applies to integers").
    pub fn describe(self) -> &'static str {
        match self {
            Operands::Numbers => "numbers",
            Operands::Floats => "f32 and f64",
            Operands::Integers => "integers",
        }
    }
}

/// What a call lowers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowered {
    /// `ExprKind::Method`.
    Method(Method),
    /// `ExprKind::Binary` of this operator (integer arithmetic wraps anyway).
    Wrapping(BinOp),
}

/// One supported method, described once for every stage: lowering (name,
/// arity, operands), the Rust and CUDA printers, and the checker.
#[derive(Debug)]
pub struct MethodSpec {
    /// The Rust name, as written in a body and in the generated Rust.
    pub name: &'static str,
    pub lowered: Lowered,
    /// Arguments besides the receiver.
    pub arity: usize,
    pub operands: Operands,
    /// The generated Rust calls `CudaScalar::name(receiver, ...)` (a trait
    /// method, so that a `T: CudaScalar` receiver works) rather than
    /// `receiver.name(...)`.
    pub rust_via_scalar: bool,
    /// The device function the CUDA printer calls (`Method`s only).
    pub cuda: &'static str,
    /// The checker's exact arithmetic evaluates it; otherwise (exp, ln, ...)
    /// only sampling approximates it, and the report says so.
    pub exact: bool,
}

const fn method(
    name: &'static str,
    m: Method,
    arity: usize,
    operands: Operands,
    cuda: &'static str,
    exact: bool,
) -> MethodSpec {
    let rust_via_scalar = matches!(m, Method::Max | Method::Min);
    MethodSpec { name, lowered: Lowered::Method(m), arity, operands, rust_via_scalar, cuda, exact }
}

const fn wrapping(name: &'static str, op: BinOp) -> MethodSpec {
    let (arity, operands) = (1, Operands::Integers);
    MethodSpec { name, lowered: Lowered::Wrapping(op), arity, operands, rust_via_scalar: false, cuda: "", exact: true }
}

/// Every supported method: the `Method`s first, in their declaration order
/// (so that [`Method::spec`] indexes this), then the `wrapping_*` forms.
pub static METHODS: [MethodSpec; 12] = [
    method("max", Method::Max, 1, Operands::Numbers, "scan_max", true),
    method("min", Method::Min, 1, Operands::Numbers, "scan_min", true),
    method("abs", Method::Abs, 0, Operands::Floats, "scan_abs", true),
    method("exp", Method::Exp, 0, Operands::Floats, "scan_exp", false),
    method("ln", Method::Ln, 0, Operands::Floats, "scan_ln", false),
    method("ln_1p", Method::Ln1p, 0, Operands::Floats, "scan_ln_1p", false),
    method("exp_m1", Method::ExpM1, 0, Operands::Floats, "scan_exp_m1", false),
    method("sqrt", Method::Sqrt, 0, Operands::Floats, "scan_sqrt", false),
    method("mul_add", Method::MulAdd, 2, Operands::Floats, "scan_mul_add", true),
    wrapping("wrapping_add", BinOp::Add),
    wrapping("wrapping_sub", BinOp::Sub),
    wrapping("wrapping_mul", BinOp::Mul),
];

impl Method {
    /// This method's row of [`METHODS`].
    pub fn spec(self) -> &'static MethodSpec {
        &METHODS[self as usize]
    }

    /// The Rust method name (`ln_1p`), as written in a body and in the generated Rust.
    pub fn name(self) -> &'static str {
        self.spec().name
    }
}

impl MethodSpec {
    /// The supported method called `name`, if any.
    pub fn named(name: &str) -> Option<&'static MethodSpec> {
        METHODS.iter().find(|m| m.name == name)
    }
}

/// One field step: `.0` or `.name` or `[k]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Member {
    Index(usize),
    Named(String),
}

/// An expression node; `ty` is the node's type, `span` the user's token.
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    /// The first (`0`, earlier) or second (`1`, later) operand.
    Param(usize),
    /// A `let` binding in scope.
    Local(String),
    Lit(Lit),
    /// A constant by path (`f32::NEG_INFINITY`, `i32::MAX`, and for a generic `T:
    /// CudaScalar` the associated consts `T::ZERO`, `T::ONE`, `T::LOWEST`
    /// (`-inf` for floats, `MIN` for integers), `T::HIGHEST`), with its value
    /// when the macro knows it (`T::ZERO` is `Int(0)`, `T::LOWEST` is `None`).
    /// User consts are rejected by `lower` (the macro cannot see their value).
    Const {
        name: ConstName,
        value: Option<Lit>,
    },
    Field(Box<Expr>, Member),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Method(Method, Box<Expr>, Vec<Expr>),
    Cast(Box<Expr>, Scalar),
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `let name = value; body`. Names are unique within one body (`lower`
    /// renames shadowing bindings), so no scoping subtleties reach consumers.
    Let {
        name: String,
        /// The type written on a `let` of one name (`let s: f32 = ...`), as
        /// written: the Rust translation keeps it, so rustc checks it where
        /// it pinned a type the macro cannot see (a field's).
        annotation: Option<proc_macro2::TokenStream>,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    Tuple(Vec<Expr>),
    Array(Vec<Expr>),
    Struct {
        name: syn::Path,
        fields: Vec<(String, Expr)>,
    },
}

impl Expr {
    /// The expressions directly inside this one.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Param(_) | ExprKind::Local(_) | ExprKind::Lit(_) | ExprKind::Const { .. } => Vec::new(),
            ExprKind::Field(x, _) | ExprKind::Unary(_, x) | ExprKind::Cast(x, _) => vec![x],
            ExprKind::Binary(_, a, b) => vec![a, b],
            ExprKind::Method(_, x, args) => std::iter::once(&**x).chain(args).collect(),
            ExprKind::If { cond, then, otherwise } => vec![cond, then, otherwise],
            ExprKind::Let { value, body, .. } => vec![value, body],
            ExprKind::Tuple(xs) | ExprKind::Array(xs) => xs.iter().collect(),
            ExprKind::Struct { fields, .. } => fields.iter().map(|(_, x)| x).collect(),
        }
    }
}

/// A constant of the subset, by what it is (never re-parsed from text).
#[derive(Clone, Debug, PartialEq)]
pub enum ConstName {
    /// `f32::INFINITY`, `u64::MAX`, ... (also written `core::f32::INFINITY`).
    Scalar(Scalar, ScalarConst),
    /// `T::ZERO`, `T::LOWEST`, ...: a `scan_core::CudaScalar` const of the
    /// type parameter `T`.
    Param(String, ParamConst),
    /// `T::zero()`, `T::one()`: num-traits' functions (`Zero`, `One` only).
    ParamFn(String, ParamConst),
}

/// The associated consts of the scalar types the subset supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarConst {
    Min,
    Max,
    Infinity,
    NegInfinity,
    Epsilon,
    MinPositive,
    Nan,
    /// `bf16::ZERO`, `f16::ZERO` (the `half` types' consts).
    Zero,
    /// `bf16::ONE`, `f16::ONE`.
    One,
}

impl ScalarConst {
    const ALL: [ScalarConst; 9] = [
        ScalarConst::Min,
        ScalarConst::Max,
        ScalarConst::Infinity,
        ScalarConst::NegInfinity,
        ScalarConst::Epsilon,
        ScalarConst::MinPositive,
        ScalarConst::Nan,
        ScalarConst::Zero,
        ScalarConst::One,
    ];

    /// The const named `name` (`"NEG_INFINITY"`), if the subset has one.
    pub fn parse(name: &str) -> Option<ScalarConst> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Its Rust name.
    pub fn name(self) -> &'static str {
        match self {
            ScalarConst::Min => "MIN",
            ScalarConst::Max => "MAX",
            ScalarConst::Infinity => "INFINITY",
            ScalarConst::NegInfinity => "NEG_INFINITY",
            ScalarConst::Epsilon => "EPSILON",
            ScalarConst::MinPositive => "MIN_POSITIVE",
            ScalarConst::Nan => "NAN",
            ScalarConst::Zero => "ZERO",
            ScalarConst::One => "ONE",
        }
    }
}

/// The consts of a type parameter (`scan_core::CudaScalar`'s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamConst {
    Zero,
    One,
    Lowest,
    Highest,
}

impl ParamConst {
    /// The const named `name` (`"LOWEST"`), if a type parameter has one.
    pub fn parse(name: &str) -> Option<ParamConst> {
        [ParamConst::Zero, ParamConst::One, ParamConst::Lowest, ParamConst::Highest]
            .into_iter()
            .find(|c| c.name() == name)
    }

    /// Its name as an associated const.
    pub fn name(self) -> &'static str {
        match self {
            ParamConst::Zero => "ZERO",
            ParamConst::One => "ONE",
            ParamConst::Lowest => "LOWEST",
            ParamConst::Highest => "HIGHEST",
        }
    }

    /// Its name as a num-traits function, for `Zero` and `One`.
    pub fn fn_name(self) -> &'static str {
        match self {
            ParamConst::Zero => "zero",
            ParamConst::One => "one",
            ParamConst::Lowest => "lowest",
            ParamConst::Highest => "highest",
        }
    }
}

impl std::fmt::Display for ConstName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConstName::Scalar(s, c) => write!(f, "{}::{}", crate::lower::scalar_name(*s), c.name()),
            ConstName::Param(p, c) => write!(f, "{p}::{}", c.name()),
            ConstName::ParamFn(p, c) => write!(f, "{p}::{}()", c.fn_name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Method::spec` indexes `METHODS` by declaration order, and every
    /// name is found again by `MethodSpec::named`.
    #[test]
    fn the_method_table_is_in_declaration_order() {
        use Method::*;
        for m in [Max, Min, Abs, Exp, Ln, Ln1p, ExpM1, Sqrt, MulAdd] {
            assert_eq!(m.spec().lowered, Lowered::Method(m), "{m:?}");
            assert!(!m.spec().cuda.is_empty(), "{m:?} has no device function");
        }
        for spec in &METHODS {
            assert!(std::ptr::eq(MethodSpec::named(spec.name).unwrap(), spec), "{}", spec.name);
        }
    }
}
