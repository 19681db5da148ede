//! (being written)
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
