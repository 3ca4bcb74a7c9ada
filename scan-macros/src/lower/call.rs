//! Method calls (through [`METHODS`]), the
//! `f32::max(a, b)` call form, field and index access, struct literals.

use super::literal::param_const;
use super::*;

impl Lowerer {
    pub(super) fn method(&mut self, m: &syn::ExprMethodCall, expect: Option<&Ty>) -> Result<Expr> {
        let span = m.span();
        let name = m.method.to_string();
        if let Some(t) = &m.turbofish {
            return Err(unsupported(t.span(), "turbofish (`::<>`) is"));
        }
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        self.method_call(&name, m.method.span(), &m.receiver, &args, span, expect)
    }

    pub(super) fn method_call(
        &mut self,
        name: &str,
        name_span: Span,
        receiver: &syn::Expr,
        args: &[&syn::Expr],
        span: Span,
        expect: Option<&Ty>,
    ) -> Result<Expr> {
        let Some(spec) = MethodSpec::named(name) else {
            return Err(unsupported(name_span, &format!("the method `{name}` is")));
        };
        let arity = spec.arity;
        if args.len() != arity {
            return Err(Error::new(span, format!("`{name}` takes {arity} argument(s)")));
        }
        // An unsuffixed literal receiver (`0.0f32.max(x)` is fine, `0.0.max(x)`
        // is ambiguous in Rust too) takes the argument's type.
        let recv = if is_untyped_lit(receiver) && arity > 0 && !is_untyped_lit(args[0]) {
            let a0 = self.expr(args[0], expect)?;
            self.expr(receiver, Some(&a0.ty))?
        } else {
            self.expr(receiver, expect)?
        };
        let t = recv.ty.clone();
        let lowered: Vec<Result<Expr>> =
            args.iter().map(|a| self.expr(a, Some(&t)).and_then(|x| self.expect_ty(&x, &t).map(|()| x))).collect();
        let mut lowered = all(lowered)?;
        let t = lowered.iter().fold(&t, |t, a| t.or_seen(&a.ty)).clone();
        let ok = match spec.operands {
            Operands::Numbers => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if *s != Scalar::Bool),
            // (bf16/f16: the `half` crate has none of these methods.)
            Operands::Floats => matches!(&t, Ty::Scalar(s) if s.is_float() && !s.is_half()),
            Operands::Integers => t.is_opaque_scalar() || matches!(&t, Ty::Scalar(s) if s.is_int()),
        };
        if !ok {
            let found = show(&t);
            return Err(Error::new(
                name_span,
                match spec.operands {
                    Operands::Integers => format!("`{name}` applies to integers, found `{found}`"),
                    on => format!("`{name}` is supported on {}, found `{found}`", on.describe()),
                },
            ));
        }
        Ok(match spec.lowered {
            Lowered::Method(method) => self.mk(ExprKind::Method(method, Box::new(recv), lowered), t, span),
            Lowered::Wrapping(op) => {
                let y = lowered.pop().ok_or_else(|| Error::new(span, "missing argument"))?;
                self.mk(ExprKind::Binary(op, Box::new(recv), Box::new(y)), t, span)
            }
        })
    }

    /// Calls: only `f32::max(a, b)`-style method paths and `T::zero()`/`T::one()`.
    pub(super) fn call(&mut self, c: &syn::ExprCall, expect: Option<&Ty>) -> Result<Expr> {
        let span = c.span();
        if let syn::Expr::Path(p) = &*c.func {
            // Calling a binding whose value was rejected (a closure): already reported.
            let local = p.path.get_ident().and_then(|id| self.scope.iter().rev().find(|(w, _, _)| id == w));
            if local.is_some_and(|(_, unique, _)| self.poisoned.contains(unique)) {
                return Err(Error::new(span, ECHO));
            }
            let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            if let [owner, name] = segs.as_slice() {
                if self.type_params.contains(owner) && c.args.is_empty() && (name == "zero" || name == "one") {
                    // num-traits' `Zero::zero()` / `One::one()`.
                    let c = if name == "one" { ParamConst::One } else { ParamConst::Zero };
                    let ty = Ty::Param(owner.clone());
                    let name = ConstName::ParamFn(owner.clone(), c);
                    return Ok(self.mk(ExprKind::Const { name, value: param_const(c) }, ty, span));
                }
                if scalar_named(owner).is_some() && !c.args.is_empty() {
                    let args: Vec<&syn::Expr> = c.args.iter().skip(1).collect();
                    let recv = &c.args[0];
                    let name_span = p.path.segments[1].ident.span();
                    let e = self.method_call(name, name_span, recv, &args, span, expect)?;
                    let want = Ty::Scalar(scalar_named(owner).unwrap_or(Scalar::F32));
                    self.expect_ty(&e, &want)?;
                    return Ok(e);
                }
            }
        }
        Err(unsupported(c.func.span(), "function calls are"))
    }

    pub(super) fn field(&mut self, f: &syn::ExprField) -> Result<Expr> {
        let span = f.span();
        let base = self.expr(&f.base, None)?;
        let (member, ty) = match (&f.member, &base.ty) {
            (syn::Member::Unnamed(i), Ty::Tuple(ts)) => {
                let k = i.index as usize;
                let t = ts.get(k).cloned().ok_or_else(|| Error::new(i.span, format!("no field `{k}`")))?;
                (Member::Index(k), t)
            }
            (syn::Member::Named(n), Ty::Struct { name, fields }) => {
                let field = n.to_string();
                let t = fields
                    .iter()
                    .find(|(f, _)| *f == field)
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| Ty::Field { strukt: name.clone(), field: field.to_string() });
                (Member::Named(field), t)
            }
            (m, t) => return Err(Error::new(m.span(), format!("no such field on `{}`", show(t)))),
        };
        Ok(self.mk(ExprKind::Field(Box::new(base), member), ty, span))
    }

    pub(super) fn index(&mut self, i: &syn::ExprIndex) -> Result<Expr> {
        let span = i.span();
        let base = self.expr(&i.expr, None)?;
        let Ty::Array(elem, n) = &base.ty else {
            return Err(Error::new(i.expr.span(), format!("only arrays can be indexed, found `{}`", show(&base.ty))));
        };
        let k = match &*i.index {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(k), .. }) => k.base10_parse::<usize>()?,
            other => return Err(unsupported(other.span(), "indexing by a non-constant is")),
        };
        if k >= *n {
            return Err(Error::new(i.index.span(), format!("index {k} is out of bounds for `{}`", show(&base.ty))));
        }
        let ty = (**elem).clone();
        Ok(self.mk(ExprKind::Field(Box::new(base), Member::Index(k)), ty, span))
    }

    pub(super) fn struct_(&mut self, s: &syn::ExprStruct, expect: Option<&Ty>) -> Result<Expr> {
        let span = s.span();
        if let Some(r) = &s.rest {
            return Err(unsupported(r.span(), "struct update syntax (`..base`) is"));
        }
        if s.qself.is_some() {
            return Err(unsupported(span, "qualified paths are"));
        }
        let name = plain_path(&s.path);
        let known: Vec<(String, Ty)> = match expect {
            Some(Ty::Struct { name: n, fields }) if *n == name => fields.clone(),
            _ => Vec::new(),
        };
        let mut exprs = Vec::new();
        for fv in &s.fields {
            let syn::Member::Named(n) = &fv.member else {
                return Err(unsupported(fv.member.span(), "tuple structs are"));
            };
            let field = n.to_string();
            let want = known
                .iter()
                .find(|(f, _)| *f == field)
                .map(|(_, t)| t.clone())
                .unwrap_or_else(|| Ty::Field { strukt: name.clone(), field: field.to_string() });
            exprs.push(self.expr(&fv.expr, Some(&want)).map(|x| (field, x)));
        }
        let mut exprs = all(exprs)?;
        let mut fields: Vec<(String, Ty)> = exprs.iter().map(|(f, x)| (f.clone(), x.ty.clone())).collect();
        // One field order for every literal of a struct (the identity's, which
        // `valid` records in the item type), so consumers can compare positionally.
        let rank = |f: &str| known.iter().position(|(k, _)| k == f).unwrap_or(usize::MAX);
        fields.sort_by_key(|(f, _)| rank(f));
        exprs.sort_by_key(|(f, _)| rank(f));
        // (An item's bound: its fields' scalars, as the literal shows them.)
        let ty = bounded(Ty::Struct { name: name.clone(), fields }, span)?;
        Ok(self.mk(ExprKind::Struct { name, fields: exprs }, ty, span))
    }
}
