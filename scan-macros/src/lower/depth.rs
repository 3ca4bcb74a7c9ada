//! Bounds on how deeply a body nests, checked before and after lowering.
//!
//! The lowering, the checker and the printers recurse once per level of an
//! expression and once per `let` (the statements after a `let` are its
//! body). A proc macro runs on rustc's stack, so a body of a few hundred
//! levels (`a + 0 + 0 + ...`, or hundreds of `let`s) overflowed it and
//! crashed rustc. Real operators nest a few dozen levels at most.
//!
//! Two bounds, because a tuple pattern is one `let` in the source but one
//! IR `let` per name it binds (and per tuple inside it): the source's
//! nesting bounds the lowering, the IR's the checker and the printers (and
//! the Rust translation's nested blocks, which rustc parses recursively).

use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Error, Result};

use crate::ir::Expr;

/// The deepest source accepted: a third of the depth at which the first
/// overflow was seen (about 450 levels of `+` in a debug-built macro).
pub const MAX_NESTING: usize = 128;

/// The deepest IR accepted, every node one level: a third of the depths at
/// which the checker (about 1000 nested `let`s) and the expression passes
/// (about 450) overflowed. The source bound keeps the expressions within it.
pub const MAX_LOWERED_NESTING: usize = 256;

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

/// An error at the first IR node deeper than [`MAX_LOWERED_NESTING`]; the
/// walk keeps its own stack.
pub fn check_lowered(e: &Expr) -> Result<()> {
    let mut stack = vec![(e, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > MAX_LOWERED_NESTING {
            return Err(Error::new(
                e.span,
                format!(
                    "with its patterns unpacked (each name a pattern binds is one `let`), the body nests \
                     more than {MAX_LOWERED_NESTING} levels here, more than the macro can take without \
                     overflowing the compiler's stack"
                ),
            ));
        }
        stack.extend(e.children().into_iter().map(|c| (c, depth + 1)));
    }
    Ok(())
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
                    "the body nests more than {MAX_NESTING} levels here (each expression, block or `let` adds one), \
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
    fn the_source_bound_is_exact() {
        // n additions nest n binary nodes, and their leaves one deeper.
        let sum = |n: usize| format!("{{ a{} }}", " + b".repeat(n));
        assert!(check_block(&block(&sum(MAX_NESTING - 1))).is_ok());
        assert!(check_block(&block(&sum(MAX_NESTING))).is_err());
        // n lets: the last value, and the tail after it, n levels deep + 1.
        let lets = |n: usize| {
            let mut s = String::from("{ let v0 = a;");
            for i in 1..n {
                s.push_str(&format!(" let v{i} = v{};", i - 1));
            }
            s + &format!(" v{} }}", n - 1)
        };
        assert!(check_block(&block(&lets(MAX_NESTING - 1))).is_ok());
        assert!(check_block(&block(&lets(MAX_NESTING))).is_err());
        let identity = |n: usize| syn::parse_str::<syn::Expr>(&format!("0{}", " + 0".repeat(n))).expect("parses");
        assert!(check_expr(&identity(MAX_NESTING - 1)).is_ok());
        assert!(check_expr(&identity(MAX_NESTING)).is_err());
    }

    #[test]
    fn the_lowered_bound_is_exact_and_walks_without_recursion() {
        use crate::ir::{ExprKind, Scalar, Ty};
        let node = |kind| Expr { kind, ty: Ty::Scalar(Scalar::I32), span: proc_macro2::Span::call_site() };
        // A chain of `levels` nodes: lets, each with a leaf value, ending in a leaf.
        let chain = |levels: usize| {
            let mut e = node(ExprKind::Param(0));
            for i in 1..levels {
                e = node(ExprKind::Let {
                    name: format!("v{i}"),
                    annotation: None,
                    value: Box::new(node(ExprKind::Param(1))),
                    body: Box::new(e),
                });
            }
            e
        };
        assert!(check_lowered(&chain(MAX_LOWERED_NESTING)).is_ok());
        assert!(check_lowered(&chain(MAX_LOWERED_NESTING + 1)).is_err());
        // Far deeper than any recursion here could go, refused all the same.
        let deep = chain(100_000);
        assert!(check_lowered(&deep).is_err());
        // (Dropping a 100 000-deep box chain recursively would overflow too.)
        std::mem::forget(deep);
    }
}
