use scan::scan_op;

// Integer division panics in Rust on a zero divisor (and MIN / -1), where
// CUDA's is undefined: refused at the operator.
#[scan_op(identity = 1)]
fn ratio(a: i32, b: i32) -> i32 {
    a / b
}

#[scan_op(identity = 0u64)]
fn modulo(a: u64, b: u64) -> u64 {
    (a + b) % 7
}

// A type parameter may be an integer.
#[scan_op(identity = T::ONE)]
fn generic_ratio<T: scan::CudaScalar>(a: T, b: T) -> T {
    a / b
}

fn main() {}
