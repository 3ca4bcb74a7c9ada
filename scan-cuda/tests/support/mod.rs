pub mod gpu;
pub mod ops;
pub mod user_ops;
