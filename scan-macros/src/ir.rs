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
}

impl Scalar {
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    pub fn is_int(self) -> bool {
        !self.is_float() && self != Scalar::Bool
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
        strukt: String,
        field: String,
    },
    Tuple(Vec<Ty>),
    Array(Box<Ty>, usize),
    /// A `#[repr(C)]` `#[scan_item]` struct, by path. The macro does not see
    /// the declaration: `fields` lists the fields the operator constructs (in
    /// the order written), each of type `Field` unless known.
    Struct {
        name: String,
        fields: Vec<(String, Ty)>,
    },
}

impl Ty {
    /// A scalar only rustc knows: a type parameter or a struct field's type.
    pub fn is_opaque_scalar(&self) -> bool {
        matches!(self, Ty::Param(_) | Ty::Field { .. })
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

/// A method of the supported list; `wrapping_*` are folded into `Binary`
/// on integer operands (integer arithmetic always wraps).
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

impl Method {
    /// The Rust method name (`ln_1p`), as written in a body and in the generated Rust.
    pub fn name(self) -> &'static str {
        match self {
            Method::Max => "max",
            Method::Min => "min",
            Method::Abs => "abs",
            Method::Exp => "exp",
            Method::Ln => "ln",
            Method::Ln1p => "ln_1p",
            Method::ExpM1 => "exp_m1",
            Method::Sqrt => "sqrt",
            Method::MulAdd => "mul_add",
        }
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
        path: String,
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
        value: Box<Expr>,
        body: Box<Expr>,
    },
    Tuple(Vec<Expr>),
    Array(Vec<Expr>),
    Struct {
        name: String,
        fields: Vec<(String, Expr)>,
    },
}
