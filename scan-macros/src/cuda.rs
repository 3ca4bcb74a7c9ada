//! IR -> CUDA C++: the `combine` function of the generated operator struct.
//!
//! The text is assembled at run time (in `cuda_source()`), because type names
//! and literal spellings come from `scan_core::CudaType` impls of the concrete
//! types (a generic operator's `T`, tuples whose layout only rustc knows). The
//! printer therefore produces [`Piece`]s: fixed text, a type's C++ name, or a
//! Rust value to spell as a C++ literal.
//!
//! Arithmetic goes through the `scan_*` helpers of `scan_core`'s prelude
//! (overloaded per scalar type: wrapping integers, non-contracted floats,
//! NaN-ignoring max/min, saturating casts); `let` becomes `auto` locals;
//! `if`/`else` a conditional expression; construction a `make` call.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Error, Result};

use crate::ir::{BinOp, Expr, ExprKind, Lit, Member, Scalar, Ty, UnOp};

pub enum Piece {
    Text(String),
    /// `<TYPE as ::scan_core::CudaType>::c_name()`.
    CName(TokenStream),
    /// `::scan_core::CudaType::c_literal(&VALUE)`.
    Literal(TokenStream),
}

/// The generated `combine`'s statements and final value.
pub struct Printed {
    pub pieces: Vec<Piece>,
    /// Types constructed in the body, whose declarations the source needs.
    pub types: Vec<TokenStream>,
}

pub fn combine(body: &Expr) -> Result<Printed> {
    function(body, &["l", "r"])
}

/// The statements and final value of a device function whose parameters
/// (`ExprKind::Param(i)`) are named `names[i]` in C++.
pub fn function(body: &Expr, names: &[&str]) -> Result<Printed> {
    let names = names.iter().map(|n| n.to_string()).collect();
    let mut p = Printer { out: Vec::new(), types: Vec::new(), names };
    p.text("    ");
    p.stmts(body, "    ")?;
    Ok(Printed { pieces: p.out, types: p.types })
}

/// The Rust type of an IR type, for naming it in generated code.
pub fn rust_type(t: &Ty, span: Span) -> Result<TokenStream> {
    Ok(match t {
        Ty::Scalar(s) => {
            let id = proc_macro2::Ident::new(crate::lower::scalar_name(*s), span);
            quote!(#id)
        }
        Ty::Param(p) => {
            let id = proc_macro2::Ident::new(p, span);
            quote!(#id)
        }
        t @ Ty::Field { .. } => {
            return Err(Error::new(
                span,
                format!(
                    "cannot name the type of `{}` in CUDA here: bind struct fields to a typed `let` \
                     (`let x: f32 = ...`)",
                    crate::lower::show(t)
                ),
            ))
        }
        Ty::Tuple(ts) => {
            let ts = ts.iter().map(|t| rust_type(t, span)).collect::<Result<Vec<_>>>()?;
            quote!((#(#ts,)*))
        }
        Ty::Array(t, n) => {
            let t = rust_type(t, span)?;
            quote!([#t; #n])
        }
        Ty::Struct { name, .. } => quote!(#name),
    })
}

struct Printer {
    out: Vec<Piece>,
    types: Vec<TokenStream>,
    /// The C++ names of the parameters.
    names: Vec<String>,
}

fn c_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "bool",
        Scalar::I32 => "int",
        Scalar::U32 => "unsigned int",
        Scalar::I64 => "long long",
        Scalar::U64 => "unsigned long long",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
        Scalar::Bf16 => "scan_bf16",
        Scalar::F16 => "scan_f16",
    }
}

/// A `let`'s C++ name. NVRTC reads identifiers of ASCII only, and Rust's
/// may be any Unicode word: those are spelled by their UTF-8 bytes in hex,
/// under a prefix of their own (`w_`), so no two names meet.
fn local_name(name: &str) -> String {
    if name.is_ascii() {
        format!("v_{name}")
    } else {
        name.bytes().fold(String::from("w_"), |mut s, b| {
            s.push_str(&format!("{b:02x}"));
            s
        })
    }
}

impl Printer {
    fn text(&mut self, s: &str) {
        if let Some(Piece::Text(t)) = self.out.last_mut() {
            t.push_str(s);
        } else {
            self.out.push(Piece::Text(s.to_string()));
        }
    }

    fn cname(&mut self, t: &Ty, span: Span) -> Result<()> {
        let rt = rust_type(t, span)?;
        let key = rt.to_string();
        if !matches!(t, Ty::Scalar(_)) && !t.is_opaque_scalar() && !self.types.iter().any(|x| x.to_string() == key) {
            self.types.push(rt.clone());
        }
        self.out.push(Piece::CName(rt));
        Ok(())
    }

    /// `let`s as `auto` locals, then `return value;`.
    fn stmts(&mut self, e: &Expr, indent: &str) -> Result<()> {
        let mut e = e;
        while let ExprKind::Let { name, value, body, .. } = &e.kind {
            self.text(&format!("auto {} = ", local_name(name)));
            self.expr(value)?;
            self.text(&format!(";\n{indent}"));
            e = body;
        }
        self.text("return ");
        self.expr(e)?;
        self.text(";\n");
        Ok(())
    }

    fn call(&mut self, f: &str, args: &[&Expr]) -> Result<()> {
        self.text(f);
        self.text("(");
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.text(", ");
            }
            self.expr(a)?;
        }
        self.text(")");
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> Result<()> {
        match &e.kind {
            ExprKind::Param(i) => {
                let name = self.names[*i].clone();
                self.text(&name)
            }
            ExprKind::Local(n) => self.text(&local_name(n)),
            ExprKind::Lit(l) => self.lit(l, &e.ty, e.span)?,
            ExprKind::Const { name, .. } => {
                self.out.push(Piece::Literal(crate::rust::const_tokens(name, e.span)));
            }
            ExprKind::Field(base, m) => {
                // `l.f0`, not `(l).f0`: only a compound base needs parentheses.
                let simple = matches!(base.kind, ExprKind::Param(_) | ExprKind::Local(_) | ExprKind::Field(..));
                if !simple {
                    self.text("(");
                }
                self.expr(base)?;
                if !simple {
                    self.text(")");
                }
                match (m, &base.ty) {
                    (Member::Index(k), Ty::Array(..)) => self.text(&format!(".v[{k}]")),
                    (Member::Index(k), _) => self.text(&format!(".f{k}")),
                    (Member::Named(n), _) => self.text(&format!(".{n}")),
                }
            }
            ExprKind::Unary(op, x) => match (op, &x.ty) {
                (UnOp::Neg, _) => self.call("scan_neg", &[x])?,
                (UnOp::Not, Ty::Scalar(Scalar::Bool)) => self.call("!", &[x])?,
                // A field's or a type parameter's type is not seen here: the
                // prelude's overloads pick `!` for bool, `~` for integers.
                (UnOp::Not, t) if t.is_opaque_scalar() => self.call("scan_not", &[x])?,
                (UnOp::Not, _) => self.call("~", &[x])?,
            },
            ExprKind::Binary(op, a, b) => {
                let f = match op {
                    BinOp::Add => Some("scan_add"),
                    BinOp::Sub => Some("scan_sub"),
                    BinOp::Mul => Some("scan_mul"),
                    BinOp::Div => Some("scan_div"),
                    BinOp::Rem => Some("scan_rem"),
                    _ => None,
                };
                if let Some(f) = f {
                    return self.call(f, &[a, b]);
                }
                // `& | ^` on bools, or on a type the generated code does
                // not see, go through the prelude's overloads, which keep a
                // bool a bool: C++'s `bool & bool` is an int, which
                // `scan_not` would complement bitwise, and which would make
                // a later (bool, int) call ambiguous. Known integers stay
                // infix.
                let logical = match op {
                    BinOp::BitAnd => Some("scan_and"),
                    BinOp::BitOr => Some("scan_or"),
                    BinOp::BitXor => Some("scan_xor"),
                    _ => None,
                };
                let via_overload =
                    e.ty == Ty::Scalar(Scalar::Bool) || a.ty.is_opaque_scalar() || b.ty.is_opaque_scalar();
                if let (Some(f), true) = (logical, via_overload) {
                    return self.call(f, &[a, b]);
                }
                let sym = match op {
                    BinOp::BitAnd => "&",
                    BinOp::BitOr => "|",
                    BinOp::BitXor => "^",
                    BinOp::And => "&&",
                    BinOp::Or => "||",
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    _ => ">=",
                };
                self.text("(");
                self.expr(a)?;
                self.text(&format!(" {sym} "));
                self.expr(b)?;
                self.text(")");
            }
            ExprKind::Method(m, recv, args) => {
                let mut all: Vec<&Expr> = vec![recv];
                all.extend(args.iter());
                self.call(m.spec().cuda, &all)?;
            }
            ExprKind::Cast(x, to) => {
                self.text(&format!("scan_cast<{}>(", c_scalar(*to)));
                self.expr(x)?;
                self.text(")");
            }
            ExprKind::If { cond, then, otherwise } => {
                self.text("(");
                self.expr(cond)?;
                self.text(" ? ");
                self.expr(then)?;
                self.text(" : ");
                self.expr(otherwise)?;
                self.text(")");
            }
            ExprKind::Let { .. } => {
                // A `let` inside an expression: an immediately invoked lambda
                // keeps it an expression (and evaluates it only where Rust does).
                self.text("([&]() {\n      ");
                self.stmts(e, "      ")?;
                self.text("    }())");
            }
            ExprKind::Tuple(xs) | ExprKind::Array(xs) => {
                self.cname(&e.ty, e.span)?;
                self.text("::make");
                let refs: Vec<&Expr> = xs.iter().collect();
                self.call("", &refs)?;
            }
            ExprKind::Struct { fields, .. } => {
                // (The scratch's name is none a body can write: a map's
                // parameter is `x` in the generated C++, and the field
                // values may read it.)
                self.text("([&]() { ");
                self.cname(&e.ty, e.span)?;
                self.text(" scan_made_;");
                for (f, x) in fields {
                    self.text(&format!(" scan_made_.{f} = "));
                    self.expr(x)?;
                    self.text(";");
                }
                self.text(" return scan_made_; }())");
            }
        }
        Ok(())
    }

    fn lit(&mut self, l: &Lit, ty: &Ty, span: Span) -> Result<()> {
        use proc_macro2::Literal as L;
        let value = match (l, ty) {
            (Lit::Bool(b), _) => {
                self.text(if *b { "true" } else { "false" });
                return Ok(());
            }
            (Lit::Int(v), Ty::Scalar(Scalar::I32)) => L::i32_suffixed(*v as i32),
            (Lit::Int(v), Ty::Scalar(Scalar::U32)) => L::u32_suffixed(*v as u32),
            (Lit::Int(v), Ty::Scalar(Scalar::I64)) => L::i64_suffixed(*v as i64),
            (Lit::Int(v), Ty::Scalar(Scalar::U64)) => L::u64_suffixed(*v as u64),
            (Lit::Float(v), Ty::Scalar(Scalar::F32)) => L::f32_suffixed(*v as f32),
            (Lit::Float(v), Ty::Scalar(Scalar::F64)) => L::f64_suffixed(*v),
            (l, t) if t.is_opaque_scalar() => {
                // A literal of a type the macro cannot see: a C++ functional
                // cast to that type (a type parameter is a typedef in the struct).
                let digits = match l {
                    Lit::Int(v) => v.to_string(),
                    Lit::Float(v) => format!("{v:?}"),
                    Lit::Bool(b) => b.to_string(),
                };
                match t {
                    Ty::Field { strukt, field } => {
                        self.text("decltype(");
                        self.cname(&Ty::Struct { name: strukt.clone(), fields: Vec::new() }, span)?;
                        self.text(&format!("::{field})({digits})"));
                    }
                    _ => self.text(&format!("{}({digits})", crate::lower::show(t))),
                }
                return Ok(());
            }
            _ => return Err(Error::new(span, "internal: literal of an unexpected type")),
        };
        self.out.push(Piece::Literal(quote!(#value)));
        Ok(())
    }
}
