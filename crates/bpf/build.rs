//! Compiles braid's eBPF programs (bpf/*.c at the repository's root) once,
//! when braid is built, into OUT_DIR; the crate carries the objects as
//! bytes and nothing is ever compiled at run time. First it writes the C
//! headers of numbers the programs share with Rust (`headers`: the data
//! header's offsets from `braid-wire`, the flags, limits and map sizes
//! from `src/constants.rs`) into OUT_DIR, on the programs' include path.
//! Needs clang and the libbpf headers (Debian: clang, libbpf-dev;
//! `scripts/setup.sh` installs them as root). Without them the build goes
//! on with empty objects, says so, and the programs' users refuse to load
//! them with the same reason.

#[path = "src/constants.rs"]
mod constants;
#[path = "build/headers.rs"]
mod headers;

use std::path::PathBuf;
use std::process::Command;

/// The programs, by file stem.
const PROGRAMS: [&str; 3] = ["loss", "datapath", "gen"];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(bpf_objects)");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("../../bpf");
    println!("cargo:rerun-if-changed={}", dir.display());
    headers::write(&out).expect("OUT_DIR is writable");
    // The kernel's user-space headers (asm/types.h) live in the host's
    // multiarch directory; ask the compiler for it rather than assume one.
    let multiarch = Command::new("clang")
        .arg("-print-multiarch")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let mut why = String::new();
    for name in PROGRAMS {
        let src = dir.join(format!("{name}.c"));
        let obj = out.join(format!("{name}.o"));
        let result = match &multiarch {
            None => Err("clang is not installed".to_string()),
            Some(multiarch) => {
                let mut cmd = Command::new("clang");
                cmd.args([
                    "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-Wall", "-Werror",
                ]);
                if !multiarch.is_empty() {
                    cmd.arg(format!("-I/usr/include/{multiarch}"));
                }
                cmd.arg(format!("-I{}", dir.display()));
                cmd.arg(format!("-I{}", out.display()));
                cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
                match cmd.output() {
                    Ok(o) if o.status.success() => Ok(()),
                    Ok(o) => Err(format!(
                        "clang failed on {name}.c: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                    Err(e) => Err(format!("cannot run clang: {e}")),
                }
            }
        };
        if let Err(e) = result {
            // A broken program in this repository is a build error; a
            // machine without clang is a warning (the lab and the kernel
            // data path are then unavailable, and say so).
            if multiarch.is_some() {
                panic!("{e}");
            }
            println!("cargo:warning=braid: eBPF programs not built ({e}); install clang and libbpf-dev (scripts/setup.sh) and rebuild");
            std::fs::write(&obj, b"").expect("OUT_DIR is writable");
            why = e;
        }
    }
    if multiarch.is_none() {
        // Built again once clang appears in one of PATH's directories
        // (installing it changes the directory).
        if let Some(path) = std::env::var_os("PATH") {
            for d in std::env::split_paths(&path).filter(|d| d.is_dir()) {
                println!("cargo:rerun-if-changed={}", d.display());
            }
        }
    }
    std::fs::write(out.join("why"), &why).expect("OUT_DIR is writable");
    if why.is_empty() {
        println!("cargo::rustc-cfg=bpf_objects");
    }
}
