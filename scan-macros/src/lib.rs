//! `#[scan_op]`: turns an associative Rust fn into a scan operator (a monoid,
//! `scan_core::ScanOp`) with generated CUDA source (`scan_core::CudaOp`), and
//! `#[scan_item]`, which gives a `#[repr(C)]` struct its CUDA declaration,
//! and `#[scan_maps]`, which gives fused maps (`scan_core::maps::Maps`)
//! their CUDA source.
//!
//! The steps live in modules named for them: `attr` (the arguments), `ast`
//! (the fn), `lower` (body -> `ir`), `valid` (signature, identity, laws via
//! `check`), `expand` (Rust items), `hint` (a `ScanOp` hint read off the
//! body), `rust` and `cuda` (the two printers of the IR); `maps` is the same
//! pipeline for `#[scan_maps]` impls. See the `scan` crate's docs for the
//! supported subset.

#![warn(missing_docs)]

mod ast;
mod attr;
mod check;
mod cuda;
mod cxx_names;
mod expand;
mod hint;
mod ir;
mod item;
mod lower;
mod maps;
mod root;
mod rust;
mod valid;

use proc_macro::TokenStream;

use crate::root::Root;

#[doc = include_str!("scan_op.md")]
#[proc_macro_attribute]
pub fn scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into(), Root::Core).into()
}

// `#[scan_op]` for the `scan` facade, which re-exports it as `scan::scan_op`:
// the generated code names `::scan::__core` instead of `::scan_core`, so
// users need no direct dependency on `scan-core`. It carries the full
// reference, because the facade inlines it and that page is the one users
// read. It is not `#[doc(hidden)]`: hidden, with `#[doc(inline)]` on the
// re-export, the facade still got the page, but its intra-doc links
// (`[macro@scan_op]`) rendered as plain text.
#[doc = include_str!("scan_op.md")]
#[proc_macro_attribute]
pub fn facade_scan_op(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::scan_op(args.into(), item.into(), Root::Facade).into()
}

#[doc = include_str!("scan_maps.md")]
#[proc_macro_attribute]
pub fn scan_maps(args: TokenStream, item: TokenStream) -> TokenStream {
    maps::scan_maps(args.into(), item.into(), Root::Core).into()
}

// `#[scan_maps]` for the `scan` facade (see `facade_scan_op`).
#[doc = include_str!("scan_maps.md")]
#[proc_macro_attribute]
pub fn facade_scan_maps(args: TokenStream, item: TokenStream) -> TokenStream {
    maps::scan_maps(args.into(), item.into(), Root::Facade).into()
}

#[doc = include_str!("scan_item.md")]
#[proc_macro_attribute]
pub fn scan_item(args: TokenStream, item: TokenStream) -> TokenStream {
    item::scan_item(args.into(), item.into(), Root::Core).into()
}

// `#[scan_item]` for the `scan` facade (see `facade_scan_op`).
#[doc = include_str!("scan_item.md")]
#[proc_macro_attribute]
pub fn facade_scan_item(args: TokenStream, item: TokenStream) -> TokenStream {
    item::scan_item(args.into(), item.into(), Root::Facade).into()
}
