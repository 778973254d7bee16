//! Bridle runtime.
