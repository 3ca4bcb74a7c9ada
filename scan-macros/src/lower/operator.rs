//! Operators, casts and `if`: both operands of one type, every error of
//! both sides reported.

use super::*;

impl Lowerer {
    pub(super) fn unary(&mut self, u: &syn::ExprUnary, expect: Option<&Ty>) -> Result<Expr> {
        let span = u.span();
        let (op, tok_span) = match &u.op {
            syn::UnOp::Neg(t) => (UnOp::Neg, t.span),
            syn::UnOp::Not(t) => (UnOp::Not, t.span),
            syn::UnOp::Deref(t) => return Err(unsupported(t.span, "dereferences (`*`) are")),
            _ => return Err(unsupported(span, "this operator is")),
        };
        // `-2147483648i32`: a literal under `-` may be one past the type's
        // maximum, as in Rust (`i32::MIN`).
        let literal = matches!(strip(&u.expr), syn::Expr::Lit(_));
        let saved = std::mem::replace(&mut self.negated_literal, op == UnOp::Neg && literal);
        let x = self.expr(&u.expr, expect);
        self.negated_literal = saved;
        let x = x?;
        let ok = match (&op, &x.ty) {
            // Rust has no `-` on unsigned integers (E0600).
            (UnOp::Neg, Ty::Scalar(s)) => *s != Scalar::Bool && !s.is_unsigned(),
            (UnOp::Not, Ty::Scalar(s)) => !s.is_float(),
            (_, t) if t.is_opaque_scalar() => true,
            _ => false,
        };
        if !ok {
            return Err(Error::new(
                tok_span,
                format!("this operator does not apply to `{}`{}", show(&x.ty), unseen_note(&x.ty)),
            ));
        }
        let ty = x.ty.clone();
        Ok(self.mk(ExprKind::Unary(op, Box::new(x)), ty, span))
    }

    /// Lowers two operands of one type: an unsuffixed literal on either side
    /// takes the type of the other side.
    /// Both sides are lowered even when one fails, for its errors too.
    pub(super) fn pair(&mut self, a: &syn::Expr, b: &syn::Expr, expect: Option<&Ty>) -> Result<(Expr, Expr)> {
        if is_untyped_lit(a) && !is_untyped_lit(b) {
            let y = self.expr(b, expect);
            let hint = y.as_ref().ok().map(|y| y.ty.clone());
            let x = self.expr(a, hint.as_ref().or(expect));
            both(x, y)
        } else {
            let x = self.expr(a, expect);
            let hint = x.as_ref().ok().map(|x| x.ty.clone());
            let y = self.expr(b, hint.as_ref().or(expect));
            let (x, y) = both(x, y)?;
            self.expect_ty(&y, &x.ty)?;
            Ok((x, y))
        }
    }

    pub(super) fn binary(&mut self, b: &syn::ExprBinary, expect: Option<&Ty>) -> Result<Expr> {
        use syn::BinOp as B;
        let span = b.span();
        let op = match b.op {
            B::Add(_) => BinOp::Add,
            B::Sub(_) => BinOp::Sub,
            B::Mul(_) => BinOp::Mul,
            B::Div(_) => BinOp::Div,
            B::Rem(_) => BinOp::Rem,
            B::BitAnd(_) => BinOp::BitAnd,
            B::BitOr(_) => BinOp::BitOr,
            B::BitXor(_) => BinOp::BitXor,
            B::And(_) => BinOp::And,
            B::Or(_) => BinOp::Or,
            B::Eq(_) => BinOp::Eq,
            B::Ne(_) => BinOp::Ne,
            B::Lt(_) => BinOp::Lt,
            B::Le(_) => BinOp::Le,
            B::Gt(_) => BinOp::Gt,
            B::Ge(_) => BinOp::Ge,
            B::Shl(_) | B::Shr(_) => {
                return Err(unsupported(b.op.span(), "shifts are (their overflow rules differ between Rust and CUDA)"))
            }
            _ => return Err(unsupported(b.op.span(), "this operator is")),
        };
        let comparison = op.is_comparison();
        let logical = matches!(op, BinOp::And | BinOp::Or);
        let operand_expect = if comparison || logical { None } else { expect };
        let (x, y) = if logical {
            let bool_ty = Ty::Scalar(Scalar::Bool);
            let x = self.expr(&b.left, Some(&bool_ty))?;
            let y = self.expr(&b.right, Some(&bool_ty))?;
            self.expect_ty(&x, &bool_ty)?;
            self.expect_ty(&y, &bool_ty)?;
            (x, y)
        } else {
            self.pair(&b.left, &b.right, operand_expect)?
        };
        let t = x.ty.or_seen(&y.ty).clone();
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if *s != Scalar::Bool)
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if !s.is_float())
            }
            BinOp::And | BinOp::Or => true,
            _ => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(_)),
        };
        if !ok {
            return Err(Error::new(
                b.op.span(),
                format!("this operator does not apply to `{}`{}", show(&t), unseen_note(&t)),
            ));
        }
        // Integer `/` and `%` panic in Rust on a zero divisor and on `MIN / -1`,
        // where CUDA's are undefined: no one result both sides would give. A
        // type parameter may be an integer, so it is refused too.
        if matches!(op, BinOp::Div | BinOp::Rem) && !matches!(&t, Ty::Scalar(s) if s.is_float()) {
            let sym = if op == BinOp::Div { "/" } else { "%" };
            return Err(Error::new(
                b.op.span(),
                format!(
                    "integer `{sym}` is not supported in a #[scan_op] body (on `{}`): it panics in Rust when the \
                     divisor is 0 or on MIN / -1, and CUDA's is undefined there; `{sym}` applies to f32 and f64",
                    show(&t)
                ),
            ));
        }
        let ty = if comparison || logical { Ty::Scalar(Scalar::Bool) } else { t };
        Ok(self.mk(ExprKind::Binary(op, Box::new(x), Box::new(y)), ty, span))
    }

    pub(super) fn cast(&mut self, c: &syn::ExprCast) -> Result<Expr> {
        let span = c.span();
        let to = match ty(&c.ty, &self.type_params)? {
            Ty::Scalar(s) if s != Scalar::Bool && !s.is_half() => s,
            _ => return Err(Error::new(c.ty.span(), "casts are supported to i32, u32, i64, u64, f32 and f64")),
        };
        // An unsuffixed literal takes the target's type where it is of the
        // same kind, as rustc types it (`3000000000 as i64` is an i64, not a
        // wrapped i32; `1.0000000596046448 as f32` is rounded once, to f32);
        // across kinds it defaults to i32 / f64 (`2 as f32`).
        let x = match &*c.expr {
            e if is_untyped_lit(e) => {
                let float = matches!(strip(e), syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Float(_), .. }));
                let ty = match (float, to.is_float()) {
                    (false, false) | (true, true) => to,
                    (true, false) => Scalar::F64,
                    (false, true) => Scalar::I32,
                };
                self.expr(e, Some(&Ty::Scalar(ty)))?
            }
            e => self.expr(e, None)?,
        };
        if !matches!(&x.ty, Ty::Scalar(_)) && !x.ty.is_opaque_scalar() {
            return Err(Error::new(c.expr.span(), format!("cannot cast `{}`{}", show(&x.ty), unseen_note(&x.ty))));
        }
        if matches!(&x.ty, Ty::Scalar(s) if s.is_half()) {
            return Err(Error::new(
                c.expr.span(),
                format!("`{}` has no `as` casts; convert with its `to_f32()` outside the operator", show(&x.ty)),
            ));
        }
        Ok(self.mk(ExprKind::Cast(Box::new(x), to), Ty::Scalar(to), span))
    }

    pub(super) fn if_(&mut self, i: &syn::ExprIf, expect: Option<&Ty>) -> Result<Expr> {
        let span = i.span();
        let bool_ty = Ty::Scalar(Scalar::Bool);
        let cond = self.expr(&i.cond, Some(&bool_ty)).and_then(|c| self.expect_ty(&c, &bool_ty).map(|()| c));
        let then = self.block(&i.then_branch, expect);
        let Some((_, otherwise)) = &i.else_branch else {
            let missing = Error::new(i.if_token.span, "an `if` needs an `else`: both branches give the value");
            return Err(match both(cond, then) {
                Ok(_) => missing,
                Err(mut earlier) => {
                    earlier.combine(missing);
                    earlier
                }
            });
        };
        let hint = then.as_ref().ok().map(|t| t.ty.clone());
        let otherwise = self.expr(otherwise, hint.as_ref().or(expect));
        let (cond, (then, otherwise)) = both(cond, both(then, otherwise))?;
        self.expect_ty(&otherwise, &then.ty)?;
        let ty = then.ty.or_seen(&otherwise.ty).clone();
        Ok(self.mk(
            ExprKind::If { cond: Box::new(cond), then: Box::new(then), otherwise: Box::new(otherwise) },
            ty,
            span,
        ))
    }
}

pub(super) fn is_assign_op(op: &syn::BinOp) -> bool {
    use syn::BinOp as B;
    matches!(
        op,
        B::AddAssign(_)
            | B::SubAssign(_)
            | B::MulAssign(_)
            | B::DivAssign(_)
            | B::RemAssign(_)
            | B::BitXorAssign(_)
            | B::BitAndAssign(_)
            | B::BitOrAssign(_)
            | B::ShlAssign(_)
            | B::ShrAssign(_)
    )
}
