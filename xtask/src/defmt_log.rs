//! Decoding the kernel's defmt stream (the bytes QEMU's serial port emits)
//! with the format table in the kernel ELF.

use defmt_decoder::{DecodeError, Table};

use crate::{Error, Result};

/// Severity of a decoded line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `trace!`
    Trace,
    /// `debug!`
    Debug,
    /// `info!`
    Info,
    /// `warn!`
    Warn,
    /// `error!`
    Error,
    /// `println!` (no level)
    Print,
}

impl Level {
    /// Fixed-width label used when printing.
    pub fn label(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO ",
            Level::Warn => "WARN ",
            Level::Error => "ERROR",
            Level::Print => "     ",
        }
    }

    fn from_defmt(level: Option<defmt_parser::Level>) -> Level {
        use defmt_parser::Level as L;
        match level {
            None => Level::Print,
            Some(L::Trace) => Level::Trace,
            Some(L::Debug) => Level::Debug,
            Some(L::Info) => Level::Info,
            Some(L::Warn) => Level::Warn,
            Some(L::Error) => Level::Error,
        }
    }
}

/// One decoded log frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Its level.
    pub level: Level,
    /// The formatted message.
    pub text: String,
}

impl std::fmt::Display for LogLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.level.label(), self.text)
    }
}

/// The defmt format table of a kernel ELF.
pub struct DefmtTable {
    table: Table,
}

impl DefmtTable {
    /// Parses the `.defmt` table of `elf` (the bytes of the kernel file).
    pub fn parse(elf: &[u8]) -> Result<DefmtTable> {
        match Table::parse(elf) {
            Ok(Some(table)) => Ok(DefmtTable { table }),
            Ok(None) => Err(Error::Defmt(
                "the ELF has no .defmt section (not a defmt program?)".into(),
            )),
            Err(e) => Err(Error::Defmt(format!(
                "cannot parse the ELF's defmt table: {e}"
            ))),
        }
    }

    /// A stream decoder: feed it bytes, get lines.
    pub fn stream(&self) -> LogStream<'_> {
        LogStream {
            decoder: self.table.new_stream_decoder(),
            malformed: 0,
            can_recover: self.table.encoding().can_recover(),
        }
    }
}

/// Incremental decoder over a byte stream.
pub struct LogStream<'t> {
    decoder: Box<dyn defmt_decoder::StreamDecoder + Send + Sync + 't>,
    malformed: usize,
    can_recover: bool,
}

impl LogStream<'_> {
    /// Feeds `bytes` and returns every frame now complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<LogLine> {
        self.decoder.received(bytes);
        let mut out = Vec::new();
        loop {
            match self.decoder.decode() {
                Ok(frame) => out.push(LogLine {
                    level: Level::from_defmt(frame.level()),
                    text: frame.display_message().to_string(),
                }),
                Err(DecodeError::UnexpectedEof) => break,
                Err(DecodeError::Malformed) => {
                    self.malformed += 1;
                    if !self.can_recover {
                        break;
                    }
                }
            }
        }
        out
    }

    /// How many malformed frames were skipped.
    pub fn malformed(&self) -> usize {
        self.malformed
    }
}
