//! The plugin's arguments: `-plugin file=libcache_check.so,cpu=arm926,...`.
//!
//! QEMU hands each `key=value` after the file name to the plugin as one
//! string. Keys:
//!
//! | key | value | default |
//! |---|---|---|
//! | `cpu` | `arm926`, `sa1110` or `pxa255`: the cache and TLB geometry modelled | required |
//! | `ram_base` | first physical address of the board's RAM | required |
//! | `ram_size` | bytes of RAM | required |
//! | `kernel_base` | first virtual address of the kernel's linear map of RAM; instructions at or above it are privileged | `0xC0000000` |
//! | `out` | file the report is written to at exit | none (summary only) |
//! | `first` | how many violations the report lists one by one | 20 |
//! | `transits` | `on`: count the instructions of every kernel transit | `off` |
//! | `model` | `off`: feed nothing to the cache model (transit counting alone, faster) | `on` |
//! | `assume_caches` | `off`: the model caches as SCTLR.C/I say (the demo kernel turns both on in `mmu::init`); `on`: a what-if, the model caches whenever the MMU is on, whatever SCTLR.C/I say (what a kernel that leaves its caches off would meet if it turned them on) | `off` |
//!
//! Numbers are decimal or `0x` hexadecimal.

use core::fmt;

/// The CPU whose caches and TLB the plugin models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuPreset {
    /// ARM926EJ-S (versatilepb).
    Arm926,
    /// StrongARM SA-1110 (collie).
    Sa1110,
    /// XScale PXA255 (connex).
    Pxa255,
}

impl CpuPreset {
    /// The preset named `s` (`arm926`, `sa1110`, `pxa255`).
    pub fn parse(s: &str) -> Option<CpuPreset> {
        match s {
            "arm926" => Some(CpuPreset::Arm926),
            "sa1110" => Some(CpuPreset::Sa1110),
            "pxa255" => Some(CpuPreset::Pxa255),
            _ => None,
        }
    }

    /// The name [`CpuPreset::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            CpuPreset::Arm926 => "arm926",
            CpuPreset::Sa1110 => "sa1110",
            CpuPreset::Pxa255 => "pxa255",
        }
    }
}

/// The parsed arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// The modelled CPU.
    pub cpu: CpuPreset,
    /// First physical address of RAM.
    pub ram_base: u32,
    /// Bytes of RAM.
    pub ram_size: u32,
    /// First virtual address of the kernel's linear map of RAM.
    pub kernel_base: u32,
    /// Where the report goes at exit.
    pub out: Option<String>,
    /// How many violations the report lists.
    pub first: usize,
    /// Whether kernel transits are counted.
    pub transits: bool,
    /// Whether the cache model is fed.
    pub model: bool,
    /// Whether the model caches with the MMU on whatever SCTLR.C/I say.
    pub assume_caches: bool,
}

/// Why the arguments were refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// An argument without `=`.
    NotKeyValue(String),
    /// A key the plugin does not know.
    UnknownKey(String),
    /// A value that should be a number (or `on`/`off`) and is not.
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A `cpu` that names no preset.
    UnknownCpu(String),
    /// A required key is missing.
    Missing(&'static str),
    /// `ram_base + ram_size` passes 4 GiB, or `ram_size` is 0.
    BadRam,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::NotKeyValue(a) => write!(f, "argument `{a}` is not key=value"),
            ArgError::UnknownKey(k) => write!(f, "unknown argument `{k}`"),
            ArgError::BadValue { key, value } => write!(f, "bad value `{value}` for `{key}`"),
            ArgError::UnknownCpu(c) => {
                write!(f, "cpu `{c}` is not one of arm926, sa1110, pxa255")
            }
            ArgError::Missing(k) => write!(f, "argument `{k}` is required"),
            ArgError::BadRam => write!(f, "ram_size is 0 or RAM passes the 4 GiB limit"),
        }
    }
}

/// Reads a decimal or `0x` hexadecimal number.
pub fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16).ok(),
        None => s.replace('_', "").parse().ok(),
    }
}

fn u32_value(key: &str, value: &str) -> Result<u32, ArgError> {
    number(value)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| ArgError::BadValue {
            key: key.into(),
            value: value.into(),
        })
}

fn switch(key: &str, value: &str) -> Result<bool, ArgError> {
    match value {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(ArgError::BadValue {
            key: key.into(),
            value: value.into(),
        }),
    }
}

/// Parses the plugin's arguments.
///
/// # Errors
/// An [`ArgError`] for a malformed, unknown or missing argument.
pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Args, ArgError> {
    let mut cpu = None;
    let mut ram_base = None;
    let mut ram_size = None;
    let mut a = Args {
        cpu: CpuPreset::Arm926,
        ram_base: 0,
        ram_size: 0,
        kernel_base: 0xC000_0000,
        out: None,
        first: 20,
        transits: false,
        model: true,
        assume_caches: false,
    };
    for arg in args {
        let (k, v) = arg
            .split_once('=')
            .ok_or_else(|| ArgError::NotKeyValue(arg.into()))?;
        match k {
            "cpu" => cpu = Some(CpuPreset::parse(v).ok_or_else(|| ArgError::UnknownCpu(v.into()))?),
            "ram_base" => ram_base = Some(u32_value(k, v)?),
            "ram_size" => ram_size = Some(u32_value(k, v)?),
            "kernel_base" => a.kernel_base = u32_value(k, v)?,
            "out" => a.out = Some(v.into()),
            "first" => a.first = u32_value(k, v)? as usize,
            "transits" => a.transits = switch(k, v)?,
            "model" => a.model = switch(k, v)?,
            "assume_caches" => a.assume_caches = switch(k, v)?,
            _ => return Err(ArgError::UnknownKey(k.into())),
        }
    }
    a.cpu = cpu.ok_or(ArgError::Missing("cpu"))?;
    a.ram_base = ram_base.ok_or(ArgError::Missing("ram_base"))?;
    a.ram_size = ram_size.ok_or(ArgError::Missing("ram_size"))?;
    if a.ram_size == 0 || a.ram_base.checked_add(a.ram_size - 1).is_none() {
        return Err(ArgError::BadRam);
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_and_minimal_argument_lists() {
        let a = parse([
            "cpu=sa1110",
            "ram_base=0xC0000000",
            "ram_size=0x0800_0000",
            "kernel_base=3221225472",
            "out=report.txt",
            "first=5",
            "transits=on",
            "model=off",
            "assume_caches=off",
        ])
        .unwrap();
        assert_eq!(a.cpu, CpuPreset::Sa1110);
        assert_eq!((a.ram_base, a.ram_size), (0xC000_0000, 0x0800_0000));
        assert_eq!(a.kernel_base, 0xC000_0000);
        assert_eq!(a.out.as_deref(), Some("report.txt"));
        assert_eq!(a.first, 5);
        assert!(a.transits && !a.model && !a.assume_caches);
        let on = parse([
            "cpu=arm926",
            "ram_base=0",
            "ram_size=128",
            "assume_caches=on",
        ])
        .unwrap();
        assert!(on.assume_caches);
        let m = parse(["cpu=arm926", "ram_base=0", "ram_size=128"]).unwrap();
        assert_eq!(
            (m.kernel_base, m.first, m.transits, m.model, m.assume_caches),
            (0xC000_0000, 20, false, true, false)
        );
        for p in ["arm926", "sa1110", "pxa255"] {
            assert_eq!(CpuPreset::parse(p).unwrap().name(), p);
        }
    }

    #[test]
    fn bad_arguments_are_typed_errors() {
        let base = ["ram_base=0", "ram_size=0x1000"];
        let with = |x: &'static str| {
            let mut v = vec!["cpu=arm926"];
            v.extend(base);
            v.push(x);
            parse(v)
        };
        assert_eq!(with("nokey"), Err(ArgError::NotKeyValue("nokey".into())));
        assert_eq!(
            with("colour=red"),
            Err(ArgError::UnknownKey("colour".into()))
        );
        assert!(matches!(with("first=x"), Err(ArgError::BadValue { .. })));
        assert!(matches!(
            with("kernel_base=0x1_0000_0000"),
            Err(ArgError::BadValue { .. })
        ));
        assert!(matches!(
            with("transits=maybe"),
            Err(ArgError::BadValue { .. })
        ));
        assert_eq!(
            with("cpu=cortex"),
            Err(ArgError::UnknownCpu("cortex".into()))
        );
        assert_eq!(parse(base), Err(ArgError::Missing("cpu")));
        assert_eq!(
            parse(["cpu=arm926", "ram_size=1"]),
            Err(ArgError::Missing("ram_base"))
        );
        assert_eq!(
            parse(["cpu=arm926", "ram_base=0xF0000000", "ram_size=0x20000000"]),
            Err(ArgError::BadRam)
        );
        assert_eq!(
            parse(["cpu=arm926", "ram_base=0", "ram_size=0"]),
            Err(ArgError::BadRam)
        );
        assert!(!format!("{}", ArgError::BadRam).is_empty());
    }
}
