//! Bridle server.
