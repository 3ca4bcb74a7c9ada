// Tuple patterns are one `let` in the source but one IR `let` per name:
// 40 of six names each nest 280 levels once unpacked (120 crashed rustc).
#![allow(unused_variables)]
use scan::scan_op;

#[scan_op(identity = (0, 0, 0, 0, 0, 0))]
fn wide(l: (i64, i64, i64, i64, i64, i64), r: (i64, i64, i64, i64, i64, i64)) -> (i64, i64, i64, i64, i64, i64) {
    let (a0, b0, c0, d0, e0, f0) = l;
    let (a1, b1, c1, d1, e1, f1) = r;
    let (a2, b2, c2, d2, e2, f2) = l;
    let (a3, b3, c3, d3, e3, f3) = r;
    let (a4, b4, c4, d4, e4, f4) = l;
    let (a5, b5, c5, d5, e5, f5) = r;
    let (a6, b6, c6, d6, e6, f6) = l;
    let (a7, b7, c7, d7, e7, f7) = r;
    let (a8, b8, c8, d8, e8, f8) = l;
    let (a9, b9, c9, d9, e9, f9) = r;
    let (a10, b10, c10, d10, e10, f10) = l;
    let (a11, b11, c11, d11, e11, f11) = r;
    let (a12, b12, c12, d12, e12, f12) = l;
    let (a13, b13, c13, d13, e13, f13) = r;
    let (a14, b14, c14, d14, e14, f14) = l;
    let (a15, b15, c15, d15, e15, f15) = r;
    let (a16, b16, c16, d16, e16, f16) = l;
    let (a17, b17, c17, d17, e17, f17) = r;
    let (a18, b18, c18, d18, e18, f18) = l;
    let (a19, b19, c19, d19, e19, f19) = r;
    let (a20, b20, c20, d20, e20, f20) = l;
    let (a21, b21, c21, d21, e21, f21) = r;
    let (a22, b22, c22, d22, e22, f22) = l;
    let (a23, b23, c23, d23, e23, f23) = r;
    let (a24, b24, c24, d24, e24, f24) = l;
    let (a25, b25, c25, d25, e25, f25) = r;
    let (a26, b26, c26, d26, e26, f26) = l;
    let (a27, b27, c27, d27, e27, f27) = r;
    let (a28, b28, c28, d28, e28, f28) = l;
    let (a29, b29, c29, d29, e29, f29) = r;
    let (a30, b30, c30, d30, e30, f30) = l;
    let (a31, b31, c31, d31, e31, f31) = r;
    let (a32, b32, c32, d32, e32, f32) = l;
    let (a33, b33, c33, d33, e33, f33) = r;
    let (a34, b34, c34, d34, e34, f34) = l;
    let (a35, b35, c35, d35, e35, f35) = r;
    let (a36, b36, c36, d36, e36, f36) = l;
    let (a37, b37, c37, d37, e37, f37) = r;
    let (a38, b38, c38, d38, e38, f38) = l;
    let (a39, b39, c39, d39, e39, f39) = r;
    (a38 + a39, b38 + b39, c38 + c39, d38 + d39, e38 + e39, f38 + f39)
}

fn main() {}
