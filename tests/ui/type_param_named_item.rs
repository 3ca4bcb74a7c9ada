// The operator's CUDA struct declares each type parameter as a member
// typedef beside its own `Item`: a parameter named `Item` would clash.
use scan::scan_op;

#[scan_op(identity = Item::LOWEST, assume_associative)]
fn max_of<Item: scan::CudaScalar>(a: Item, b: Item) -> Item {
    a.max(b)
}

fn main() {}
