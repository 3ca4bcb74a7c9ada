//! `#[scan_op]` (under construction).
use proc_macro::TokenStream;

/// Turns an associative fn into a scan operator (under construction: passes the item through).
#[proc_macro_attribute]
pub fn scan_op(_args: TokenStream, item: TokenStream) -> TokenStream {
    item
}
