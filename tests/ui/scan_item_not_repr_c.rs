use scan::scan_item;

#[scan_item]
#[derive(Clone, Copy)]
struct Pair {
    a: f32,
    b: u32,
}

fn main() {}
