//! A bound on how deeply a body nests, checked before lowering.
//!
//! The lowering, the checker and the printers recurse once per level of an
//! expression and once per `let` (the statements after a `let` are its
//! body). A proc macro runs on rustc's stack, so a body of a few hundred
//! levels (`a + 0 + 0 + ...`, or hundreds of `let`s) overflowed it and
//! crashed rustc. Real operators nest a few dozen levels at most.

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Error, Result};

/// The deepest body accepted: a third of the depth at which the first
/// overflow was seen (about 400 levels of `+` in a debug-built macro).
pub const MAX_NESTING: usize = 128;

/// An error at the first expression nested deeper than [`MAX_NESTING`]
/// levels, counting each `let` as one more level for what follows it.
pub fn check_block(block: &syn::Block) -> Result<()> {
    let mut d = Depth::default();
    d.visit_block(block);
    d.result()
}

/// The same for one expression (an identity).
pub fn check_expr(expr: &syn::Expr) -> Result<()> {
    let mut d = Depth::default();
    d.visit_expr(expr);
    d.result()
}

#[derive(Default)]
struct Depth {
    now: usize,
    too_deep: Option<proc_macro2::Span>,
}

impl Depth {
    fn result(self) -> Result<()> {
        match self.too_deep {
            None => Ok(()),
            Some(span) => Err(Error::new(
                span,
                format!(
                    "the body nests more than {MAX_NESTING} levels here (each operator, call or `let` adds one), \
                     more than the macro can take without overflowing the compiler's stack"
                ),
            )),
        }
    }

    /// Enters one level; false (and the place noted) past the bound, so
    /// that the walk itself stays shallow.
    fn enter(&mut self, span: impl FnOnce() -> proc_macro2::Span) -> bool {
        self.now += 1;
        if self.now > MAX_NESTING {
            self.too_deep.get_or_insert_with(span);
            return false;
        }
        true
    }
}

impl<'ast> Visit<'ast> for Depth {
    fn visit_expr(&mut self, e: &'ast syn::Expr) {
        let before = self.now;
        if self.enter(|| e.span()) {
            syn::visit::visit_expr(self, e);
        }
        self.now = before;
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        let before = self.now;
        for stmt in &b.stmts {
            if self.too_deep.is_some() {
                break;
            }
            self.visit_stmt(stmt);
            if let syn::Stmt::Local(local) = stmt {
                // What follows a `let` is lowered inside it.
                if !self.enter(|| local.span()) {
                    break;
                }
            }
        }
        self.now = before;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(src: &str) -> syn::Block {
        syn::parse_str(src).expect("block parses")
    }

    #[test]
    fn flat_bodies_pass_and_deep_ones_are_refused() {
        let sum = |n: usize| format!("{{ a{} }}", " + b".repeat(n));
        assert!(check_block(&block(&sum(MAX_NESTING - 2))).is_ok());
        assert!(check_block(&block(&sum(MAX_NESTING + 1))).is_err());
        let lets = |n: usize| {
            let mut s = String::from("{ let v0 = a;");
            for i in 1..n {
                s.push_str(&format!(" let v{i} = v{};", i - 1));
            }
            s + &format!(" v{} }}", n - 1)
        };
        assert!(check_block(&block(&lets(MAX_NESTING - 2))).is_ok());
        assert!(check_block(&block(&lets(MAX_NESTING + 1))).is_err());
    }
}
