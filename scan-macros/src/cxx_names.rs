//! Names the generated CUDA would write as they are, and NVRTC would
//! refuse: a `#[scan_item]` field's (a C++ member) and an operator's type
//! parameters (member typedefs).
//!
//! Checked where they are declared, so that the user meets a spanned error
//! from rustc instead of an NVRTC failure at run time.

/// C++20's keywords and alternative tokens (`and`, `not`, ...), as far as a
/// Rust name could be one; Rust's own keywords need `r#` (refused
/// separately), except `try` in edition 2015.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "decltype",
    "default",
    "delete",
    "double",
    "dynamic_cast",
    "explicit",
    "export",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "short",
    "signed",
    "sizeof",
    "static_assert",
    "static_cast",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "void",
    "volatile",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// Why `name` cannot be a member of the generated C++ struct, if it cannot.
pub fn field_name_problem(name: &str) -> Option<String> {
    if let Some(bare) = name.strip_prefix("r#") {
        return Some(format!(
            "a raw identifier cannot name a #[scan_item] field: the CUDA declaration writes the name as it is; \
             rename `{bare}`"
        ));
    }
    let why = cxx_problem(name).or(if name == "make" {
        Some("is the constructor function of every generated CUDA struct")
    } else if is_padding(name) {
        Some("is the name of the generated CUDA struct's padding")
    } else {
        None
    })?;
    Some(format!("the field name `{name}` {why}, so the struct's CUDA declaration cannot use it; rename the field"))
}

/// Why a type parameter cannot be named `name`, if it cannot: the operator's
/// CUDA struct declares it as a member typedef beside `Item`, `identity`
/// and `combine(l, r)`.
pub fn type_param_problem(name: &str) -> Option<String> {
    let why = cxx_problem(name).or(if ["Item", "identity", "combine", "l", "r"].contains(&name) {
        Some("is a name the operator's generated CUDA struct uses itself")
    } else if name.starts_with("r#") {
        // (The typedef is spelled as the parameter's text.)
        Some("is a raw identifier, which C++ cannot spell")
    } else {
        None
    })?;
    Some(format!("the type parameter name `{name}` {why}, so the operator's CUDA source cannot declare it; rename it"))
}

/// What no C++ name of the generated source may be.
fn cxx_problem(name: &str) -> Option<&'static str> {
    Some(if !name.is_ascii() {
        "is not ASCII (NVRTC reads identifiers of ASCII only)"
    } else if KEYWORDS.contains(&name) {
        "is a C++ keyword"
    } else if name.contains("__") || (name.starts_with('_') && name[1..].starts_with(|c: char| c.is_ascii_uppercase()))
    {
        "is reserved in C++ (a double underscore, or an underscore and a capital)"
    } else if name == "NULL" || name.starts_with("cuda") || name.starts_with("CUDART_") {
        "is a macro NVRTC predefines, or in the namespace of those (`NULL`, `cuda...`, `CUDART_...`)"
    } else if name.starts_with("SCAN_") {
        "is in the macro namespace of the generated CUDA (`SCAN_`)"
    } else if name == "scan_bf16" || name == "scan_f16" {
        "is a type of the generated CUDA"
    } else {
        return None;
    })
}

/// `pad{k}_` and `pad_end_`, which `scan_core`'s `c_struct` writes.
fn is_padding(name: &str) -> bool {
    name == "pad_end_"
        || name
            .strip_prefix("pad")
            .and_then(|rest| rest.strip_suffix('_'))
            .is_some_and(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::{field_name_problem, type_param_problem};

    #[test]
    fn names_the_generated_cuda_cannot_use_are_refused() {
        for bad in [
            "new",
            "class",
            "float",
            "this",
            "make",
            "pad0_",
            "pad12_",
            "pad_end_",
            "a__b",
            "_Big",
            "SCAN_X",
            "größe",
            "NULL",
            "try",
            "cudaStreamDefault",
        ] {
            assert!(field_name_problem(bad).is_some(), "{bad} should be refused");
        }
        assert!(field_name_problem("r#type").unwrap().contains("rename `type`"));
    }

    #[test]
    fn type_parameters_the_operator_struct_uses_are_refused() {
        for bad in ["Item", "identity", "combine", "l", "r", "Τ", "class", "NULL", "r#T"] {
            assert!(type_param_problem(bad).is_some(), "{bad} should be refused");
        }
        for good in ["T", "U", "Scalar", "F"] {
            assert_eq!(type_param_problem(good), None, "{good} should pass");
        }
    }

    #[test]
    fn ordinary_names_pass() {
        for good in ["x", "sum", "count", "pad", "pad_", "padx_", "_private", "new_", "scan_total", "v", "f0"] {
            assert_eq!(field_name_problem(good), None, "{good} should pass");
        }
    }
}
