//! The rules of docs/ARCHITECTURE.md, checked: each crate's manifest
//! names only the braid crates it may depend on; no crate has a
//! file-level import cycle and no file or function is over its size
//! limit (scripts/structure.py).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Each crate and the braid crates it may depend on (normal dependencies;
/// tests and benchmarks may use more).
const ALLOWED: [(&str, &[&str]); 9] = [
    ("wire", &[]),
    ("conf", &[]),
    ("proto", &["braid-wire"]),
    ("bpf", &["braid-proto", "braid-wire"]),
    ("sim", &["braid-proto", "braid-wire", "braid-conf"]),
    ("plan", &["braid-sim"]),
    (
        "daemon",
        &["braid-proto", "braid-wire", "braid-conf", "braid-bpf"],
    ),
    (
        "lab",
        &[
            "braid-proto",
            "braid-wire",
            "braid-sim",
            "braid-daemon",
            "braid-conf",
            "braid-bpf",
        ],
    ),
    (
        "cli",
        &[
            "braid-proto",
            "braid-wire",
            "braid-sim",
            "braid-daemon",
            "braid-conf",
            "braid-lab",
            "braid-plan",
        ],
    ),
];

/// The braid crates named in the `[dependencies]` table of `manifest`.
fn braid_dependencies(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && line.starts_with("braid-") {
            deps.push(line.split(['.', ' ', '=']).next().unwrap_or("").to_string());
        }
    }
    deps
}

#[test]
fn crates_depend_only_on_what_the_architecture_allows() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.into_iter().collect();
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let may = allowed
            .get(name.as_str())
            .unwrap_or_else(|| panic!("crates/{name} is not in the architecture's list"));
        for dep in braid_dependencies(&manifest) {
            assert!(
                may.contains(&dep.as_str()),
                "crates/{name} depends on {dep}, which docs/ARCHITECTURE.md does not allow"
            );
        }
        seen += 1;
    }
    assert_eq!(seen, ALLOWED.len(), "every crate checked");
}

#[test]
fn the_manifest_reader_sees_dependencies() {
    let m = "[package]\nname = \"x\"\n[dependencies]\nbraid-wire.workspace = true\nserde = \"1\"\n[dev-dependencies]\nbraid-sim.workspace = true\n";
    assert_eq!(braid_dependencies(m), ["braid-wire"]);
}

/// scripts/structure.py, which anyone can run: it prints each import
/// cycle and each file or function over its limit, and fails on any.
#[test]
fn no_import_cycles_and_nothing_over_the_size_limits() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = |what: &str| {
        Command::new("python3")
            .arg(root.join("scripts/structure.py"))
            .arg(what)
            .output()
            .expect("python3 runs scripts/structure.py (scripts/setup.sh installs it)")
    };
    // The checks find what they look for...
    let own = run("selftest");
    assert!(
        own.status.success(),
        "{}",
        String::from_utf8_lossy(&own.stdout)
    );
    // ...and find none of it here.
    let out = run("all");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/structure.py found problems:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("import cycles: none") && text.contains("sizes: no file over"),
        "the script checked both: {text}"
    );
}
