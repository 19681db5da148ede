//! Software table walk.
