//! First- and second-level descriptors.
