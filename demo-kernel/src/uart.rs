//! The console: the board's UART (transmit only, polled; see [`crate::board`]).

/// Writes `bytes` to the console UART, waiting while it is busy.
pub fn write(bytes: &[u8]) {
    crate::board::uart::write(bytes);
}
