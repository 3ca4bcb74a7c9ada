//! Which crate generated code names: `::scan_core` (the default, for
//! `scan-core`'s own built-ins and crates that depend on it) or the `scan`
//! facade, whose users may not depend on `scan_core` directly.
//!
//! Code is generated against `::scan_core` (the checker's property test too)
//! and re-rooted at the end, so there is one way to write it.

use proc_macro2::{Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};

#[derive(Clone, Copy)]
pub enum Root {
    /// `::scan_core::...`
    Core,
    /// `::scan::__core::...` (the facade re-exports `scan_core` as `__core`).
    Facade,
}

impl Root {
    pub fn apply(self, generated: TokenStream) -> TokenStream {
        match self {
            Root::Core => generated,
            Root::Facade => reroot(generated),
        }
    }
}

/// Rewrites every `::scan_core` path prefix into `::scan::__core`.
fn reroot(ts: TokenStream) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in ts {
        match tt {
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), reroot(g.stream()));
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            TokenTree::Ident(i) if i == "scan_core" && ends_with_path_sep(&out) => {
                let span = i.span();
                out.push(TokenTree::Ident(Ident::new("scan", span)));
                out.push(punct(':', Spacing::Joint, span));
                out.push(punct(':', Spacing::Alone, span));
                out.push(TokenTree::Ident(Ident::new("__core", span)));
            }
            tt => out.push(tt),
        }
    }
    out.into_iter().collect()
}

fn punct(c: char, spacing: Spacing, span: Span) -> TokenTree {
    let mut p = Punct::new(c, spacing);
    p.set_span(span);
    TokenTree::Punct(p)
}

/// `out` ends with `::` (generated code names `scan_core` only as `::scan_core`).
fn ends_with_path_sep(out: &[TokenTree]) -> bool {
    matches!(
        out,
        [.., TokenTree::Punct(a), TokenTree::Punct(b)]
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::Root;

    #[test]
    fn facade_root_rewrites_scan_core_paths_not_other_uses() {
        let ts = quote!(impl ::scan_core::ScanOp for X { fn f() { ::scan_core::x::y(scan_core) } });
        let got = Root::Facade.apply(ts).to_string();
        assert_eq!(
            got,
            quote!(impl ::scan::__core::ScanOp for X { fn f() { ::scan::__core::x::y(scan_core) } }).to_string()
        );
    }
}
