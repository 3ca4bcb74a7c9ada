use scan::scan_op;

#[scan_op(identity = [0; 4])]
fn add4(l: [i32; 4], r: [i32; 4]) -> [i32; 4] {
    let out = l;
    for i in 0..4 {
        let _ = out[i] + r[i];
    }
    out
}

fn main() {}
