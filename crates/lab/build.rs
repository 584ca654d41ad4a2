//! Compiles the lab's eBPF program (bpf/loss.c) once, when braid is
//! built, into OUT_DIR/loss.o; the lab carries it inside the binary and
//! never compiles anything at run time. Needs clang and the libbpf
//! headers (Debian: clang, libbpf-dev; `scripts/setup.sh` installs them
//! as root). Without them the build goes on with an empty object, says
//! so, and the lab refuses to run with the same message.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loss_program)");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("../../bpf/loss.c");
    println!("cargo:rerun-if-changed={}", src.display());
    let obj = out.join("loss.o");
    let missing = |why: &str| {
        println!("cargo:warning=braid lab: the eBPF loss program was not built ({why}); install clang and libbpf-dev (scripts/setup.sh) and rebuild");
        std::fs::write(&obj, b"").expect("OUT_DIR is writable");
        std::fs::write(out.join("loss.why"), why).expect("OUT_DIR is writable");
    };
    // The kernel's user-space headers (asm/types.h) live in the host's
    // multiarch directory; ask the compiler for it rather than assume one.
    let multiarch = Command::new("clang")
        .arg("-print-multiarch")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(multiarch) = multiarch else {
        missing("clang is not installed");
        return;
    };
    let mut cmd = Command::new("clang");
    cmd.args(["-O2", "-g", "-target", "bpf"]);
    if !multiarch.is_empty() {
        cmd.arg(format!("-I/usr/include/{multiarch}"));
    }
    cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
    match cmd.output() {
        Ok(o) if o.status.success() => {
            std::fs::write(out.join("loss.why"), b"").expect("OUT_DIR is writable");
            println!("cargo::rustc-cfg=loss_program");
        }
        Ok(o) => missing(&format!(
            "clang failed: {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )),
        Err(e) => missing(&format!("cannot run clang: {e}")),
    }
}
