//! Compile-time verification of the monoid laws (associativity and identity).
//!
//! Interface used by the rest of the macro (owned by the checker; this is the
//! placeholder that accepts everything until the checker lands):
//!
//! * [`check`]: `Ok(())` when both laws are proven symbolically, or when the
//!   body is outside the decidable fragment, sampling found no violation and the
//!   user wrote `assume_associative`; otherwise a `syn::Error` at the user's fn
//!   (or identity) that prints both normal forms / a counterexample.
//! * [`property_test`]: with `assume_associative`, the tokens of a `#[test]`
//!   that checks both laws on random inputs in the user's crate.

use proc_macro2::{Ident, Span, TokenStream};

use crate::ir;

/// Everything the checker needs to know about one operator.
pub struct OpDef<'a> {
    /// The user's fn name (`linear_recurrence`).
    pub fn_name: &'a Ident,
    /// The generated operator type (`LinearRecurrence`).
    pub type_name: &'a Ident,
    /// The item type (both parameters and the result).
    pub item: &'a ir::Ty,
    /// The body, with `ExprKind::Param(0)` the left and `Param(1)` the right operand.
    pub body: &'a ir::Expr,
    /// The identity expression.
    pub identity: &'a ir::Expr,
    /// The identity's span, for errors about the identity.
    pub identity_span: Span,
    /// `#[scan_op(..., assume_associative)]` was written.
    pub assume_associative: bool,
}

/// Verifies the monoid laws; see the module docs.
pub fn check(_op: &OpDef) -> syn::Result<()> {
    Ok(())
}

/// The property test generated for `assume_associative` operators.
pub fn property_test(_op: &OpDef) -> TokenStream {
    TokenStream::new()
}
