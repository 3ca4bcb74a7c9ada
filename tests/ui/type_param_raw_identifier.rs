// The operator's CUDA struct declares each type parameter as a member
// typedef spelled as written: `r#T` would be `typedef float r#T;`, which
// NVRTC refuses at run time.
use scan::scan_op;

#[scan_op(identity = T::ZERO)]
fn add<r#T: scan::CudaScalar>(a: T, b: T) -> T {
    a + b
}

fn main() {}
