//! `cargo xtask`: see `xtask::cli::USAGE`.

use std::process::ExitCode;

use xtask::cli::{self, Command};
use xtask::qemu::Ending;
use xtask::{cargo, qemu, setup, stages};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = match cli::parse(args.iter().map(String::as_str)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Command::Build(board) => match cargo::build_kernel_for(board) {
            Ok(elf) => {
                println!("{}", elf.display());
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        Command::Run(opts) if opts.cache_check => {
            match xtask::cachecheck::run(opts.board, opts.append.as_deref(), opts.timeout) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Command::Run(opts) if opts.append.is_none() && opts.icount.is_none() => {
            // The demonstration: every mode, one table.
            match cargo::build_measuring_kernel_for(opts.board).and_then(|elf| {
                xtask::demo::run(&setup::ensure_qemu()?, opts.board, &elf, opts.timeout)
            }) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Command::Run(opts) => {
            let build = if opts.measure {
                cargo::build_measuring_kernel_for
            } else {
                cargo::build_kernel_for
            };
            let result = build(opts.board).and_then(|elf| {
                let mut run = qemu::QemuRun::new(setup::ensure_qemu()?, elf, opts.timeout);
                run.board = opts.board;
                run.append = opts.append.clone();
                run.icount = opts.icount;
                run.echo = true;
                run.run()
            });
            match result {
                Ok(out) => {
                    if !out.stderr.trim().is_empty() {
                        eprintln!("QEMU stderr:\n{}", out.stderr.trim_end());
                    }
                    match out.ending {
                        Ending::Exited(code) => {
                            if code != 0 {
                                eprintln!("kernel exited with status {code}");
                            }
                            ExitCode::from(u8::try_from(code).unwrap_or(1))
                        }
                        Ending::TimedOut => {
                            eprintln!("error: QEMU timed out after {:?}; killed", opts.timeout);
                            ExitCode::FAILURE
                        }
                        Ending::Signalled => {
                            eprintln!("error: QEMU was killed by a signal");
                            ExitCode::FAILURE
                        }
                    }
                }
                Err(e) => fail(e),
            }
        }
        Command::Bench {
            full,
            timeout,
            boards,
        } => match xtask::bench::run(full, timeout, &boards) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        Command::Miri { full } => {
            let set = if full {
                xtask::miri::Set::Full
            } else {
                xtask::miri::Set::Stage
            };
            match xtask::miri::run(set) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Command::Outside { timeout, boards } => {
            match xtask::outside::bench_hook(timeout, &boards) {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Command::Fuzz(opts) => match xtask::fuzz::run(&opts) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        Command::Mutants(opts) => match xtask::mutants::run(&opts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(e),
        },
        Command::Test { timeout, skip } => {
            let settings = stages::Settings {
                qemu_timeout: timeout,
                skip,
            };
            if stages::run(&stages::all(), &settings) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn fail(e: xtask::Error) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::FAILURE
}
