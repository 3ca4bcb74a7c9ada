//! `let` patterns: binding names (each made unique), destructuring tuples,
//! and the names of a `let` whose value failed (poisoned).

use super::*;

impl Lowerer {
    /// Binds a pattern (an ident, or tuple patterns of idents) to `value`,
    /// destructuring tuples into one `let` per component.
    pub(super) fn pattern(&mut self, pat: &syn::Pat, value: Expr, binds: &mut Vec<(String, Expr)>) -> Result<()> {
        match pat {
            syn::Pat::Ident(p) => {
                if let Some(r) = &p.by_ref {
                    return Err(unsupported(r.span, "references are"));
                }
                if let Some(m) = &p.mutability {
                    return Err(unsupported(m.span, "mutable bindings (and assignment) are"));
                }
                if p.subpat.is_some() {
                    return Err(unsupported(p.span(), "`@` patterns are"));
                }
                let name = self.bind(&p.ident.to_string(), value.ty.clone());
                binds.push((name, value));
                Ok(())
            }
            syn::Pat::Wild(_) => Ok(()),
            syn::Pat::Paren(p) => self.pattern(&p.pat, value, binds),
            syn::Pat::Tuple(t) => {
                let Ty::Tuple(tys) = &value.ty else {
                    return Err(Error::new(
                        t.span(),
                        format!("a tuple pattern needs a tuple, found `{}`", show(&value.ty)),
                    ));
                };
                if tys.len() != t.elems.len() || t.elems.iter().any(|p| matches!(p, syn::Pat::Rest(_))) {
                    return Err(Error::new(t.span(), format!("this pattern must name all {} components", tys.len())));
                }
                let tys = tys.clone();
                // Bind the whole tuple once, so its expression is not duplicated,
                // under a name no later code can write (a user's `tuple` had
                // resolved to it, and the checker proved another body).
                let whole = self.hidden("tuple");
                let span = value.span;
                let vty = value.ty.clone();
                binds.push((whole.clone(), value));
                for (i, (p, t)) in t.elems.iter().zip(tys).enumerate() {
                    let base = self.mk(ExprKind::Local(whole.clone()), vty.clone(), span);
                    let field = self.mk(ExprKind::Field(Box::new(base), Member::Index(i)), t, p.span());
                    self.pattern(p, field, binds)?;
                }
                Ok(())
            }
            p => Err(unsupported(p.span(), "this pattern is")),
        }
    }

    /// Binds every name of `pat` as poisoned (its value or the pattern
    /// itself failed to lower), in the patterns the subset refuses too.
    pub(super) fn poison(&mut self, pat: &syn::Pat) {
        match pat {
            syn::Pat::Ident(p) => {
                let unique = self.bind(&p.ident.to_string(), self.item.clone());
                self.poisoned.insert(unique);
                if let Some((_, sub)) = &p.subpat {
                    self.poison(sub);
                }
            }
            syn::Pat::Paren(p) => self.poison(&p.pat),
            syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| self.poison(p)),
            syn::Pat::Type(t) => self.poison(&t.pat),
            syn::Pat::Slice(s) => s.elems.iter().for_each(|p| self.poison(p)),
            syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|p| self.poison(p)),
            syn::Pat::Struct(s) => s.fields.iter().for_each(|f| self.poison(&f.pat)),
            syn::Pat::Reference(r) => self.poison(&r.pat),
            // Every alternative binds the same names.
            syn::Pat::Or(o) => o.cases.iter().take(1).for_each(|p| self.poison(p)),
            _ => {}
        }
    }

    /// Binds `written` in scope under a unique name, which it returns.
    pub(super) fn bind(&mut self, written: &str, ty: Ty) -> String {
        let unique = self.hidden(written);
        self.scope.push((written.to_string(), unique.clone(), ty));
        unique
    }

    /// A unique name for a binding of the lowering's own, out of scope: only
    /// the `Local`s made with it refer to it.
    pub(super) fn hidden(&mut self, base: &str) -> String {
        let mut unique = base.to_string();
        let mut k = 1;
        while self.used.contains(&unique) || self.params.contains(&unique) {
            unique = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(unique.clone());
        unique
    }
}
