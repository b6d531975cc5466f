//! The checker alone, fed hand-written observation lists.
