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

/// Every file of the repository (relative to the root, `/`-separated),
/// build output and version control aside.
fn repository_files(root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git" | "out") {
                    dirs.push(path);
                }
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push(rel.replace('\\', "/"));
            }
        }
    }
    out
}

/// The identifiers of Rust and C code, comments and strings left out: a
/// name the code no longer has is in none of them.
fn code_identifiers(
    root: &std::path::Path,
    files: &[String],
) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for file in files {
        if !(file.ends_with(".rs") || file.ends_with(".c") || file.ends_with(".h")) {
            continue;
        }
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i..].starts_with(b"//") {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            } else if b[i..].starts_with(b"/*") {
                i += 2;
                while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                    i += 1;
                }
                i += 2;
            } else if b[i] == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            } else if b[i].is_ascii_alphabetic() || b[i] == b'_' {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                names.insert(text[start..i].to_string());
            } else {
                i += 1;
            }
        }
    }
    names
}

/// What a backticked name in the architecture page must match: a file
/// or directory (a path, or a name with a source extension), or code
/// (`a::b`, `f()`, `CamelCase`, `snake_case`); `None` for anything else
/// (commands, config lines, plain words).
fn checked_name(token: &str) -> Option<(bool, Vec<String>)> {
    const EXTENSIONS: [&str; 10] = [
        ".rs", ".c", ".h", ".md", ".toml", ".lua", ".json", ".html", ".sh", ".py",
    ];
    if token.contains([' ', '=', '"', '<', '>', '*', '$']) || token.is_empty() {
        return None;
    }
    let file_like = EXTENSIONS.iter().any(|e| token.ends_with(e))
        || (token.contains('/') && !token.contains("::"));
    if file_like {
        // `daemon/dataplane.rs::read_tun` names a file and a function.
        return Some((true, vec![token.trim_end_matches('/').to_string()]));
    }
    let code = token.trim_end_matches("()");
    let is_ident = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    let segments: Vec<String> = code.split("::").map(str::to_string).collect();
    if !segments.iter().all(|s| is_ident(s)) {
        return None;
    }
    let single = segments.len() == 1;
    let camel = code.starts_with(|c: char| c.is_ascii_uppercase())
        && code.chars().any(|c| c.is_ascii_lowercase());
    if single && !code.contains('_') && !camel && !token.ends_with("()") {
        return None; // a plain word
    }
    Some((false, segments))
}

/// docs/ARCHITECTURE.md names only files, modules, types and functions
/// that exist.
#[test]
fn the_architecture_page_names_only_what_exists() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let page = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let files = repository_files(&root);
    let dirs: std::collections::BTreeSet<String> = files
        .iter()
        .flat_map(|f| {
            let parts: Vec<&str> = f.split('/').collect();
            (1..parts.len()).map(move |n| parts[..n].join("/"))
        })
        .collect();
    let names = code_identifiers(&root, &files);
    let exists = |path: &str| {
        let suffix = format!("/{path}");
        files
            .iter()
            .chain(dirs.iter())
            .any(|f| f == path || f.ends_with(&suffix))
    };
    let mut missing = Vec::new();
    let mut checked = 0;
    for (n, token) in page.split('`').enumerate() {
        if n % 2 == 0 {
            continue; // outside backticks
        }
        for part in token.split(['(', ')', ',']).filter(|p| !p.is_empty()) {
            let part = if token.ends_with("()") && token.starts_with(part) {
                token
            } else {
                part
            };
            let Some((file, segments)) = checked_name(part) else {
                continue;
            };
            checked += 1;
            if file {
                let (path, function) = match segments[0].split_once("::") {
                    Some((p, f)) => (p.to_string(), Some(f.to_string())),
                    None => (segments[0].clone(), None),
                };
                if !exists(&path) || function.is_some_and(|f| !names.contains(&f)) {
                    missing.push(part.to_string());
                }
            } else if segments
                .iter()
                .any(|s| !names.contains(s) && !exists(&format!("{s}.rs")) && !exists(s))
            {
                missing.push(part.to_string());
            }
        }
    }
    assert!(
        checked > 50,
        "the page names code ({checked} names checked)"
    );
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names what does not exist: {missing:?}"
    );
}

#[test]
fn names_are_told_from_words() {
    assert_eq!(checked_name("make test"), None);
    assert_eq!(checked_name("wire"), None);
    assert_eq!(
        checked_name("node/routes.rs"),
        Some((true, vec!["node/routes.rs".into()]))
    );
    assert_eq!(
        checked_name("Node::send"),
        Some((false, vec!["Node".into(), "send".into()]))
    );
    assert_eq!(
        checked_name("Scheduler"),
        Some((false, vec!["Scheduler".into()]))
    );
    assert_eq!(
        checked_name("forward_in_place"),
        Some((false, vec!["forward_in_place".into()]))
    );
}
