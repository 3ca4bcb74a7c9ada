//! `#[scan_op]`: turns an associative Rust fn into a scan operator (a monoid,
//! `scan_core::ScanOp`) with generated CUDA source (`scan_core::CudaOp`), and
//! `#[scan_item]`, which gives a `#[repr(C)]` struct its CUDA declaration.
//!
//! The steps live in modules named for them: `attr` (the arguments), `ast`
//! (the fn), `lower` (body -> `ir`), `valid` (signature, identity, laws via
//! `check`), `expand` (Rust items), `rust` and `cuda` (the two printers of the
//! IR). See the `scan` crate's docs for the supported subset.

mod ast;
mod attr;
mod check;
mod cuda;
mod expand;
// The IR is shared with the checker, which reads parts the printers do not.
#[allow(dead_code)]
mod ir;
mod item;
mod lower;
mod rust;
mod valid;

use proc_macro::TokenStream;

/// Turns `fn name(l: T, r: T) -> T` into the operator type `Name` implementing
/// `scan_core::ScanOp` and `scan_core::CudaOp`; see the `scan` crate docs.
#[proc_macro_attribute]
pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into()).into()
}

/// Implements `scan_core::CudaType` for a `#[repr(C)]` struct with named
/// fields, so that it can be the item of a `#[scan_op]` operator.
#[proc_macro_attribute]
pub fn scan_item(args: TokenStream, item: TokenStream) -> TokenStream {
    item::scan_item(args.into(), item.into()).into()
}
