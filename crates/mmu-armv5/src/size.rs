//! Page sizes as types.
