//! CPU backend of `scan` (under construction).
