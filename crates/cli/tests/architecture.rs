//! The dependency rules of docs/ARCHITECTURE.md, checked: each crate's
//! manifest names only the braid crates it may depend on.

use std::collections::BTreeMap;
use std::path::PathBuf;

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
