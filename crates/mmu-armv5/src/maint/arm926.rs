//! ARM926EJ-S maintenance (placeholder, being written).
/// ARM926EJ-S maintenance.
pub struct Arm926;
