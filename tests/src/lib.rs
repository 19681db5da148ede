//! QEMU integration tests.
