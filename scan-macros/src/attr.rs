//! The arguments of `#[scan_op(identity = EXPR, name = TypeName, assume_associative)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Error, Expr, Ident, Result, Token};

/// Parsed attribute arguments.
pub struct Attr {
    /// `identity = EXPR`, with the span of the whole argument for errors.
    pub identity: Option<Expr>,
    /// The `assume_associative` flag, with its token.
    pub assume_associative: Option<Ident>,
    /// `name = TypeName`: the generated type's name instead of the fn's name in CamelCase.
    pub name: Option<Ident>,
    /// Where to point "missing identity" (the attribute's arguments, or the call site).
    pub span: Span,
}

impl Attr {
    pub fn parse(args: TokenStream) -> Result<Attr> {
        let span = if args.is_empty() { Span::call_site() } else { syn::spanned::Spanned::span(&args) };
        let mut attr: Attr = syn::parse2(args)?;
        attr.span = span;
        Ok(attr)
    }
}

impl Parse for Attr {
    fn parse(input: ParseStream) -> Result<Self> {
        let mut attr = Attr { identity: None, assume_associative: None, name: None, span: Span::call_site() };
        let mut errors: Option<Error> = None;
        let mut push = |e: Error| match &mut errors {
            Some(all) => all.combine(e),
            None => errors = Some(e),
        };
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            if key == "identity" {
                input.parse::<Token![=]>()?;
                let value: Expr = input.parse()?;
                if attr.identity.is_some() {
                    push(Error::new(key.span(), "`identity` is given twice"));
                }
                attr.identity = Some(value);
            } else if key == "name" {
                input.parse::<Token![=]>()?;
                let value: Ident = input.parse()?;
                if attr.name.is_some() {
                    push(Error::new(key.span(), "`name` is given twice"));
                }
                attr.name = Some(value);
            } else if key == "assume_associative" {
                if attr.assume_associative.is_some() {
                    push(Error::new(key.span(), "`assume_associative` is given twice"));
                }
                attr.assume_associative = Some(key);
            } else {
                push(Error::new(
                    key.span(),
                    format!(
                        "unknown argument `{key}`; #[scan_op] takes `identity = EXPR`, `name = TypeName` and the flag \
                         `assume_associative`"
                    ),
                ));
                // Skip to the next argument so that later errors are reported too.
                while !input.is_empty() && !input.peek(Token![,]) {
                    input.parse::<proc_macro2::TokenTree>()?;
                }
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        match errors {
            Some(e) => Err(e),
            None => Ok(attr),
        }
    }
}
