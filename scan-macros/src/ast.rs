//! A typed view of the annotated fn that keeps the syn nodes (for spans).

use proc_macro2::Ident;
use syn::ext::IdentExt;
use syn::{FnArg, GenericParam, ItemFn, Pat, Type};

use crate::attr::Attr;

/// One `#[scan_op]` fn, before validation.
pub struct Operator<'a> {
    pub func: &'a ItemFn,
    pub attr: Attr,
    /// `linear_recurrence` -> `LinearRecurrence`, unless `name = ...` says otherwise.
    pub type_name: Ident,
    /// The type parameters (`T`); other generic parameters are rejected by `valid`.
    pub type_params: Vec<&'a Ident>,
    /// Every parameter, as (name if it is a plain ident, pattern, type).
    pub params: Vec<Param<'a>>,
    /// The written return type, if any.
    pub ret: Option<&'a Type>,
}

pub struct Param<'a> {
    pub arg: &'a FnArg,
    pub name: Option<&'a Ident>,
    pub pat: Option<&'a Pat>,
    pub ty: Option<&'a Type>,
}

impl<'a> Operator<'a> {
    /// The operator of `func`; an error at the fn's name when no type name
    /// can be made from it (`__`, `_2x2`) and `name = ...` gives none, or
    /// when the type name is the fn's own (`加`, whose script has no case, or
    /// an already CamelCase `MaxPlus`): the generated unit struct is a value
    /// too, and would clash with the fn.
    pub fn from_fn(func: &'a ItemFn, attr: Attr) -> syn::Result<Self> {
        let type_name = match &attr.name {
            Some(name) => name.clone(),
            None => type_name_of(&func.sig.ident)?,
        };
        if type_name.unraw() == func.sig.ident.unraw() {
            let why = match &attr.name {
                Some(_) => "`name = ...` is the fn's own name".to_string(),
                None => format!("the CamelCase of `{}` is the name itself", func.sig.ident),
            };
            return Err(syn::Error::new(
                type_name.span(),
                format!(
                    "{why}, and the operator type (a unit struct, which is also a value) would clash with the fn; \
                     name the operator type: #[scan_op(identity = ..., name = MyOp)]"
                ),
            ));
        }
        let type_params = func
            .sig
            .generics
            .params
            .iter()
            .filter_map(|p| match p {
                GenericParam::Type(t) => Some(&t.ident),
                _ => None,
            })
            .collect();
        let params = func
            .sig
            .inputs
            .iter()
            .map(|arg| match arg {
                FnArg::Typed(pt) => {
                    let name = match &*pt.pat {
                        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
                        _ => None,
                    };
                    Param { arg, name, pat: Some(&pt.pat), ty: Some(&pt.ty) }
                }
                FnArg::Receiver(_) => Param { arg, name: None, pat: None, ty: None },
            })
            .collect();
        let ret = match &func.sig.output {
            syn::ReturnType::Type(_, t) => Some(&**t),
            syn::ReturnType::Default => None,
        };
        Ok(Operator { func, attr, type_name, type_params, params, ret })
    }

    /// Without `r#`: `T` names the parameter `r#T` (which `valid` refuses).
    pub fn type_param_names(&self) -> Vec<String> {
        self.type_params.iter().map(|t| t.unraw().to_string()).collect()
    }
}

/// The generated type's name for the fn `name`: its CamelCase, unless that
/// is no identifier (`__` gives nothing, `_2x2_mul` starts with a digit).
fn type_name_of(name: &Ident) -> syn::Result<Ident> {
    let camel = camel_case(&name.unraw().to_string());
    match syn::parse_str::<Ident>(&camel) {
        Ok(_) => Ok(Ident::new(&camel, name.span())),
        Err(_) => Err(syn::Error::new(
            name.span(),
            format!(
                "no type name can be made from `{name}` (its CamelCase, `{camel}`, is not an identifier); \
                 name the operator type: #[scan_op(identity = ..., name = MyOp)]"
            ),
        )),
    }
}

/// `linear_recurrence` -> `LinearRecurrence`, `mat_mul_2x2` -> `MatMul2x2`.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in snake.trim_start_matches('_').chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::camel_case;

    #[test]
    fn camel_case_joins_snake_words() {
        assert_eq!(camel_case("linear_recurrence"), "LinearRecurrence");
        assert_eq!(camel_case("mat_mul_2x2"), "MatMul2x2");
        assert_eq!(camel_case("add"), "Add");
        assert_eq!(camel_case("log_add_exp"), "LogAddExp");
    }
}
