//! The CUDA source of one operator's module: operator declaration + kernel
//! templates + one `extern "C"` instantiation per kernel.

use scan_core::{CudaOp, CudaSource, Result};

use crate::policy::Policy;

/// The kernel templates, written once against `template <class Op>`.
pub(crate) const BLOCK_SCAN_CU: &str = include_str!("../kernels/block_scan.cu");
/// Pass 2 of the multi-block scan.
pub(crate) const PROPAGATE_CU: &str = include_str!("../kernels/propagate.cu");

/// Names of the instantiated kernels inside every module: pass 1 and pass 2
/// of the multi-block scan, each forward and reverse (the direction is a
/// template parameter: it decides the addressing of every load and store).
pub(crate) const SCAN_BLOCKS: [&str; 2] = ["scan_blocks_forward", "scan_blocks_reverse"];
pub(crate) const ADD_PREFIXES: [&str; 2] = ["add_prefixes_forward", "add_prefixes_reverse"];

/// Everything the compiler sees for one operator, and what the host needs to
/// launch it.
#[derive(Clone, Debug)]
pub struct ModuleSource {
    /// The operator's C++ name (for error messages).
    pub op_name: String,
    /// The full translation unit.
    pub code: String,
    /// The launch shape the instantiation was written for.
    pub policy: Policy,
    /// Size of one item in bytes, on both sides.
    pub item_size: usize,
}

impl ModuleSource {
    /// The module of `Op`: its declaration, the templates, and instantiations
    /// for `Op::Item`'s size. Fails only when the item is too large for the
    /// kernels.
    pub fn of<Op: CudaOp>() -> Result<ModuleSource> {
        let size = std::mem::size_of::<Op::Item>();
        let align = std::mem::align_of::<Op::Item>();
        let policy = Policy::for_item_size(size)?;
        Ok(Self::assemble(&Op::cuda_source(), size, align, policy))
    }

    fn assemble(op: &CudaSource, size: usize, align: usize, policy: Policy) -> ModuleSource {
        let name = &op.name;
        let (threads, k) = (policy.threads, policy.items_per_run);
        // At least 1024 resident threads per SM: caps registers at 64 so that
        // enough loads are in flight to keep memory busy.
        let min_blocks = (1024 / threads).max(1);
        let mut code = format!(
            "// ---- operator `{name}` ----\n{op_code}\n\n// ---- kernels/block_scan.cu ----\n{BLOCK_SCAN_CU}\n\
             // ---- kernels/propagate.cu ----\n{PROPAGATE_CU}\n\
             // ---- instantiations ----\n\
             // The Rust item and the CUDA item must have one layout: bytes move unchanged.\n\
             static_assert(sizeof({name}::Item) == {size}, \"the CUDA item of `{name}` is not {size} bytes like the Rust item\");\n\
             static_assert(alignof({name}::Item) <= {align}, \"the CUDA item of `{name}` is more aligned than the Rust item\");\n",
            op_code = op.code,
        );
        for (reverse, (scan, add)) in [false, true].into_iter().zip(SCAN_BLOCKS.into_iter().zip(ADD_PREFIXES)) {
            code.push_str(&format!(
                "extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {scan}(\n\
                 \x20   const {name}::Item* src, {name}::Item* dst, unsigned long long len, {name}::Item* totals,\n\
                 \x20   int inclusive) {{\n\
                 \x20 scan::scan_tile<{name}, {threads}, {k}, {reverse}>(src, dst, len, totals, inclusive);\n\
                 }}\n\
                 extern \"C\" __global__ void __launch_bounds__({threads}, {min_blocks}) {add}(\n\
                 \x20   {name}::Item* data, unsigned long long len, const {name}::Item* prefixes) {{\n\
                 \x20 scan::add_prefixes<{name}, {threads}, {k}, {reverse}>(data, len, prefixes);\n\
                 }}\n"
            ));
        }
        ModuleSource { op_name: name.clone(), code, policy, item_size: size }
    }
}
