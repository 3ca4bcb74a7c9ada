//! CUDA backend of `scan` (under construction).
