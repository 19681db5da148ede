//! Booting the kernel in `qemu-system-arm` with a time limit, decoding its
//! defmt log as it arrives.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::board::Board;
use crate::defmt_log::{DefmtTable, LogLine};
use crate::{Error, Result};

/// One QEMU run.
#[derive(Clone, Debug)]
pub struct QemuRun {
    /// `qemu-system-arm` to execute.
    pub qemu: PathBuf,
    /// The board (machine, how the ELF and the command line are passed).
    pub board: Board,
    /// The kernel ELF (`-kernel`).
    pub elf: PathBuf,
    /// Kill QEMU after this long.
    pub timeout: Duration,
    /// Kernel command line (`-append`).
    pub append: Option<String>,
    /// `-icount shift=N,sleep=off`.
    pub icount: Option<u8>,
    /// Further QEMU arguments, appended last.
    pub extra_args: Vec<String>,
    /// Print each decoded line as it arrives.
    pub echo: bool,
}

/// How a QEMU run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// QEMU exited with this status (the kernel's semihosting exit code).
    Exited(i32),
    /// QEMU was killed by a signal.
    Signalled,
    /// The time limit passed; QEMU was killed.
    TimedOut,
}

/// What a QEMU run produced.
#[derive(Clone, Debug)]
pub struct QemuOutcome {
    /// How it ended.
    pub ending: Ending,
    /// Every decoded log line, in order.
    pub lines: Vec<LogLine>,
    /// QEMU's own standard error output.
    pub stderr: String,
    /// Malformed defmt frames skipped.
    pub malformed: usize,
}

impl QemuOutcome {
    /// Whether the kernel exited with status 0.
    pub fn success(&self) -> bool {
        self.ending == Ending::Exited(0)
    }

    /// The decoded log as text, one line per frame.
    pub fn log_text(&self) -> String {
        self.lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Whether some line's message contains `needle`.
    pub fn has_line(&self, needle: &str) -> bool {
        self.lines.iter().any(|l| l.text.contains(needle))
    }
}

impl QemuRun {
    /// A run of `elf` with the defaults: no command line, no icount, no echo.
    pub fn new(qemu: impl Into<PathBuf>, elf: impl Into<PathBuf>, timeout: Duration) -> QemuRun {
        QemuRun {
            qemu: qemu.into(),
            board: Board::default(),
            elf: elf.into(),
            timeout,
            append: None,
            icount: None,
            extra_args: Vec::new(),
            echo: false,
        }
    }

    /// The QEMU arguments of this run.
    pub fn args(&self) -> Vec<String> {
        let mut a = self.board.qemu_args(&self.elf, self.append.as_deref());
        if let Some(shift) = self.icount {
            a.push("-icount".into());
            a.push(format!("shift={shift},sleep=off"));
        }
        a.extend(self.extra_args.iter().cloned());
        a
    }

    /// Boots the kernel and collects its decoded log until QEMU exits or the
    /// time limit passes (then QEMU is killed and the run counts as timed out).
    pub fn run(&self) -> Result<QemuOutcome> {
        self.board.prepare(&self.elf)?;
        let elf_bytes = std::fs::read(&self.elf).map_err(|source| Error::Io {
            what: format!("reading {}", self.elf.display()),
            source,
        })?;
        let table = DefmtTable::parse(&elf_bytes)?;
        let mut stream = table.stream();

        let mut cmd = Command::new(&self.qemu);
        cmd.args(self.args())
            .env("QEMU_AUDIO_DRV", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let shown = format!("{} {}", self.qemu.display(), self.args().join(" "));
        let mut child = cmd.spawn().map_err(|source| Error::Spawn {
            command: shown.clone(),
            source,
        })?;

        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let mut stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Check("QEMU stdout not captured".into()))?;
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut stderr_pipe = child.stderr.take();
        let stderr_reader = std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(p) = stderr_pipe.as_mut() {
                let _ = p.read_to_string(&mut s);
            }
            s
        });

        let deadline = Instant::now() + self.timeout;
        let mut lines = Vec::new();
        let mut timed_out = false;
        loop {
            let now = Instant::now();
            if now >= deadline {
                timed_out = true;
                break;
            }
            match rx.recv_timeout(deadline - now) {
                Ok(bytes) => {
                    for line in stream.feed(&bytes) {
                        if self.echo {
                            println!("{line}");
                        }
                        lines.push(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    timed_out = true;
                    break;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if timed_out {
            let _ = child.kill();
        }
        let status = child.wait().map_err(|source| Error::Io {
            what: "waiting for QEMU".into(),
            source,
        })?;
        let _ = reader.join();
        let stderr = stderr_reader.join().unwrap_or_default();
        let ending = if timed_out {
            Ending::TimedOut
        } else {
            match status.code() {
                Some(c) => Ending::Exited(c),
                None => Ending::Signalled,
            }
        };
        Ok(QemuOutcome {
            ending,
            lines,
            stderr,
            malformed: stream.malformed(),
        })
    }
}

/// Builds nothing: boots an existing `elf` with the QEMU found or installed
/// by [`crate::setup::ensure_qemu`].
pub fn boot(
    elf: &Path,
    timeout: Duration,
    append: Option<&str>,
    echo: bool,
) -> Result<QemuOutcome> {
    boot_on(Board::default(), elf, timeout, append, echo)
}

/// [`boot`] on `board`.
pub fn boot_on(
    board: Board,
    elf: &Path,
    timeout: Duration,
    append: Option<&str>,
    echo: bool,
) -> Result<QemuOutcome> {
    let qemu = crate::setup::ensure_qemu()?;
    let mut run = QemuRun::new(qemu, elf, timeout);
    run.board = board;
    run.append = append.map(str::to_string);
    run.echo = echo;
    run.run()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_board_cpu_semihosting_and_options() {
        let mut r = QemuRun::new("qemu-system-arm", "/k.elf", Duration::from_secs(1));
        let base = r.args();
        assert_eq!(
            base.join(" "),
            "-M versatilepb -cpu arm926 -m 128M -display none -serial stdio -monitor none \
             -semihosting-config enable=on,target=native -kernel /k.elf"
        );
        r.append = Some("test only=x".into());
        r.icount = Some(10);
        r.extra_args = vec!["-d".into(), "guest_errors".into()];
        let a = r.args();
        assert_eq!(&a[..base.len()], &base[..]);
        assert_eq!(
            &a[base.len()..],
            [
                "-append",
                "test only=x",
                "-icount",
                "shift=10,sleep=off",
                "-d",
                "guest_errors"
            ]
        );
    }
}
