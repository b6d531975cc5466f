//! The `fenced-lab` binary.
fn main() {}
