#!/usr/bin/env python3
"""braid's structure checks, runnable by anyone from the repository root.

  scripts/structure.py cycles   file-level import cycles, per crate
  scripts/structure.py sizes    source files over 1,000 lines and
                                functions over 150 (Rust and C)
  scripts/structure.py          both
  scripts/structure.py selftest a cycle, a long function and a long
                                file in a made-up crate are found

Exits 1 when it finds a cycle or a size over its limit, 0 otherwise.
`crates/cli/tests/architecture.rs` runs it, so CI fails on either.

What counts:
* An import edge goes from a file to the file that defines what it
  names: `crate::a::b::X`, `super::X`, `self::x::Y` and paths that start
  with a child module the file declares, in `use` trees and in code
  alike. A name re-exported with `pub use` resolves to where it is
  defined (so `crate::Thing` re-exported by lib.rs is an edge to the
  file that defines `Thing`). Declaring a child (`mod x;`) is not an
  edge. Inline `#[cfg(test)]` modules are skipped (tests may look
  anywhere in their file's crate).
* Sizes: files under `src/` (test directories, benches and examples
  aside) over 1,000 lines not counting their inline `#[cfg(test)]`
  modules, unless their first comment says why they are kept larger (a
  line with "kept larger" in the leading comment);
  functions (Rust `fn`, C function bodies) over 150 lines, in the same
  files.
"""
import os
import re
import sys

FILE_LIMIT = 1000
FN_LIMIT = 150
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- lexing

TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*)
    | (?P<raw_string>b?r\#*")
    | (?P<string>b?")
    | (?P<char>b?'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])')
    | (?P<lifetime>'[A-Za-z_][A-Za-z0-9_]*)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<path_sep>::)
    | (?P<punct>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def lex(text):
    """Rust tokens as (kind, value, line): identifiers, `::` and single
    punctuation; comments, strings and chars are skipped."""
    out = []
    i, line, n = 0, 1, len(text)
    while i < n:
        m = TOKEN.match(text, i)
        kind = m.lastgroup
        start = i
        if kind == "block_comment":
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            i = j
        elif kind == "raw_string":
            hashes = m.group().count("#")
            end = text.find('"' + "#" * hashes, m.end())
            i = n if end < 0 else end + 1 + hashes
        elif kind == "string":
            j = m.end()
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i = m.end()
            if kind in ("ident", "path_sep", "punct"):
                out.append((kind, m.group(), line))
        line += text.count("\n", start, i)
    return out


# ------------------------------------------------------- modules and files


def crate_files(crate_dir):
    """Every source file of a crate's library or binary, with its module
    path (a tuple: () for the root)."""
    src = os.path.join(crate_dir, "src")
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if not name.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("lib", "main", "mod"):
                parts = parts[:-1]
            files[tuple(parts)] = os.path.join(dirpath, name)
    return files


def use_paths(tokens, start):
    """Expands the `use` tree beginning at tokens[start] into full paths
    (lists of identifiers, `*` kept); returns (paths, index after `;`)."""
    paths = []

    def tree(i, prefix):
        path = list(prefix)
        while i < len(tokens):
            kind, value, _ = tokens[i]
            if kind == "ident":
                if value == "as":
                    i += 2  # the alias names the same thing
                    continue
                path.append(value)
                i += 1
            elif kind == "path_sep":
                i += 1
            elif value == "*":
                path.append("*")
                i += 1
            elif value == "{":
                i += 1
                while i < len(tokens) and tokens[i][1] != "}":
                    if tokens[i][1] == ",":
                        i += 1
                        continue
                    i = tree(i, path)
                return i + 1
            else:
                break
        if len(path) > len(prefix):
            paths.append(path)
        return i

    i = tree(start, [])
    while i < len(tokens) and tokens[i][1] != ";":
        i += 1
    return paths, i + 1


class File:
    """One source file: its tokens, children, re-exports and what it
    names."""

    def __init__(self, module, path, modules):
        self.module = module
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.text = f.read()
        self.tokens = lex(self.text)
        self.children = set()
        self.reexports = {}  # name -> absolute path (list)
        self.named = []  # (absolute path, line) this file names
        self._scan(modules)

    def _absolute(self, path, inline):
        """`path` as written in this file (inside inline modules
        `inline`) made absolute, or None when it is not braid's."""
        here = list(self.module) + list(inline)
        head = path[0]
        if head == "crate":
            return path[1:]
        if head == "self":
            return here + path[1:]
        if head == "super":
            base, rest = list(here), list(path)
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            return base + rest
        if not inline and head in self.children:
            return list(self.module) + path
        return None

    def _scan(self, modules):
        toks = self.tokens
        inline = []  # stack of (name, brace depth at open)
        depth = 0
        skip_until = None  # brace depth closing a skipped test module
        i = 0
        cfg_test = False
        while i < len(toks):
            kind, value, line = toks[i]
            if skip_until is not None:
                if value == "{":
                    depth += 1
                elif value == "}":
                    depth -= 1
                    if depth == skip_until:
                        skip_until = None
                i += 1
                continue
            if value == "#" and i + 1 < len(toks):
                # #[cfg(test)] marks the next item
                j = i + 1
                if toks[j][1] == "!":
                    j += 1
                if toks[j][1] == "[":
                    k, level, attr = j, 0, []
                    while k < len(toks):
                        if toks[k][1] == "[":
                            level += 1
                        elif toks[k][1] == "]":
                            level -= 1
                            if level == 0:
                                break
                        attr.append(toks[k][1])
                        k += 1
                    if attr[1:5] == ["cfg", "(", "test", ")"]:
                        cfg_test = True
                    i = k + 1
                    continue
            if kind == "ident" and value == "mod" and i + 2 < len(toks):
                name, after = toks[i + 1][1], toks[i + 2][1]
                if after == ";":
                    if not inline:
                        self.children.add(name)
                    i += 3
                    cfg_test = False
                    continue
                if after == "{":
                    if cfg_test:
                        skip_until = depth
                        depth += 1
                        i += 3
                        cfg_test = False
                        continue
                    inline.append((name, depth))
                    depth += 1
                    i += 3
                    continue
            if value == "{":
                depth += 1
            elif value == "}":
                depth -= 1
                if inline and inline[-1][1] == depth:
                    inline.pop()
            if kind == "ident" and value in ("fn", "struct", "enum", "impl", "const", "static", "type", "trait", "use", "let"):
                cfg_test = False
            names = [n for n, _ in inline]
            if kind == "ident" and value == "use":
                is_pub = i > 0 and toks[i - 1][1] in ("pub", ")")
                paths, i = use_paths(toks, i + 1)
                for p in paths:
                    absolute = self._absolute(p, names)
                    if absolute is None:
                        continue
                    self.named.append((absolute, line))
                    if is_pub and not names and absolute and absolute[-1] != "*":
                        self.reexports[p[-1]] = absolute
                continue
            if kind == "ident" and (i == 0 or toks[i - 1][0] != "path_sep"):
                # a path in code: ident (:: ident)*
                path, j = [value], i + 1
                while j + 1 < len(toks) and toks[j][0] == "path_sep" and toks[j + 1][0] == "ident":
                    path.append(toks[j + 1][1])
                    j += 2
                if len(path) > 1:
                    absolute = self._absolute(path, names)
                    if absolute is not None:
                        self.named.append((absolute, line))
                    i = j
                    continue
            i += 1


def resolve(path, files, by_module, seen=None):
    """The file defining what `path` (absolute) names: the longest module
    prefix that is a file, following that file's re-exports."""
    seen = seen or set()
    for cut in range(len(path), -1, -1):
        module = tuple(path[:cut])
        if module in by_module:
            f = by_module[module]
            rest = path[cut:]
            if rest and rest[0] in f.reexports and (module, rest[0]) not in seen:
                seen.add((module, rest[0]))
                return resolve(f.reexports[rest[0]] + rest[1:], files, by_module, seen)
            return module
    return None


def crate_cycles(crate_dir):
    modules = crate_files(crate_dir)
    by_module = {m: File(m, p, modules) for m, p in modules.items()}
    edges = {m: {} for m in by_module}
    for m, f in by_module.items():
        for path, line in f.named:
            target = resolve(path, modules, by_module)
            if target is not None and target != m:
                edges[m].setdefault(target, line)
    # Tarjan's strongly connected components.
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    return out, edges, by_module


def rel(path):
    return os.path.relpath(path, ROOT)


def check_cycles():
    found = 0
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        crate_dir = os.path.join(ROOT, "crates", crate)
        if not os.path.isdir(os.path.join(crate_dir, "src")):
            continue
        cycles, edges, by_module = crate_cycles(crate_dir)
        for comp in cycles:
            found += 1
            print(f"cycle in crates/{crate}: {len(comp)} files")
            members = set(comp)
            for m in comp:
                for t, line in sorted(edges[m].items()):
                    if t in members:
                        print(f"  {rel(by_module[m].path)}:{line} -> {rel(by_module[t].path)}")
    if not found:
        print("import cycles: none")
    return found


# ------------------------------------------------------------------ sizes


def rust_functions(tokens):
    """(name, first line, last line) of every `fn` with a body."""
    out = []
    for i, (kind, value, line) in enumerate(tokens):
        if kind != "ident" or value != "fn" or i + 1 >= len(tokens):
            continue
        if tokens[i + 1][0] != "ident":
            continue  # `fn(` types
        name = tokens[i + 1][1]
        j, level = i + 2, 0
        # the body's `{`: the first at bracket level 0 before any `;`
        while j < len(tokens):
            v = tokens[j][1]
            if v in "([<" and v != "<":
                level += 1
            elif v in ")]":
                level -= 1
            elif level == 0 and v == ";":
                j = None
                break
            elif level == 0 and v == "{":
                break
            j += 1
        if j is None or j >= len(tokens):
            continue
        depth = 0
        for k in range(j, len(tokens)):
            v = tokens[k][1]
            if v == "{":
                depth += 1
            elif v == "}":
                depth -= 1
                if depth == 0:
                    out.append((name, line, tokens[k][2]))
                    break
    return out


C_FUNCTION = re.compile(r"^[A-Za-z_][^;{}()]*?\b([A-Za-z_][A-Za-z0-9_]*)\s*\([^;]*$")


def c_functions(text):
    """(name, first line, last line) of C function definitions starting
    at column 0 and ending at a `}` in column 0."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = C_FUNCTION.match(lines[i])
        if m and not lines[i].startswith(("#", "struct ", "typedef")):
            # the body opens within a few lines
            j = i
            while j < len(lines) and j < i + 8 and "{" not in lines[j] and ";" not in lines[j]:
                j += 1
            if j < len(lines) and "{" in lines[j] and ";" not in lines[j].split("{")[0]:
                k = j
                while k < len(lines) and lines[k] != "}":
                    k += 1
                out.append((m.group(1), i + 1, k + 1))
                i = k
        i += 1
    return out


def source_files():
    for crate in sorted(os.listdir(os.path.join(ROOT, "crates"))):
        src = os.path.join(ROOT, "crates", crate, "src")
        for dirpath, _, names in sorted(os.walk(src)):
            for name in sorted(names):
                if name.endswith(".rs"):
                    yield os.path.join(dirpath, name)
    bpf = os.path.join(ROOT, "bpf")
    for name in sorted(os.listdir(bpf)) if os.path.isdir(bpf) else []:
        if name.endswith((".c", ".h")):
            yield os.path.join(bpf, name)


def test_module_lines(tokens):
    """Lines taken by inline `#[cfg(test)] mod NAME { ... }` modules (with
    or without a visibility)."""
    total = 0
    for i in range(len(tokens) - 8):
        if [t[1] for t in tokens[i : i + 7]] != ["#", "[", "cfg", "(", "test", ")", "]"]:
            continue
        # `mod`, `pub mod` or `pub(crate) mod` (a test module other
        # modules' tests borrow from is still a test module).
        j = i + 7
        if tokens[j][1] == "pub":
            j += 1
            if j < len(tokens) and tokens[j][1] == "(":
                while j < len(tokens) and tokens[j][1] != ")":
                    j += 1
                j += 1
        if j + 2 >= len(tokens) or tokens[j][1] != "mod" or tokens[j + 2][1] != "{":
            continue
        depth = 0
        for k in range(j + 2, len(tokens)):
            if tokens[k][1] == "{":
                depth += 1
            elif tokens[k][1] == "}":
                depth -= 1
                if depth == 0:
                    total += tokens[k][2] - tokens[i][2] + 1
                    break
    return total


def leading_comment(text):
    out = []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith(("//", "/*", "*")) or not s:
            out.append(s)
        else:
            break
    return "\n".join(out)


def check_sizes():
    over = 0
    for path in source_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n")
        tokens = lex(text) if path.endswith(".rs") else []
        code = lines - test_module_lines(tokens)
        if code > FILE_LIMIT and "kept larger" not in leading_comment(text):
            over += 1
            print(f"{rel(path)}: {code} lines besides its tests (limit {FILE_LIMIT}; or say why it is kept larger in its first comment)")
        if path.endswith(".rs"):
            functions = rust_functions(tokens)
        else:
            functions = c_functions(text)
        for name, first, last in functions:
            if last - first + 1 > FN_LIMIT:
                over += 1
                print(f"{rel(path)}:{first}: fn {name}: {last - first + 1} lines (limit {FN_LIMIT})")
    if not over:
        print(f"sizes: no file over {FILE_LIMIT} lines, no function over {FN_LIMIT}")
    return over


def selftest():
    """Runs both checks on a made-up tree with one cycle (through a
    re-export and a `super::` path), one long function and one long
    file, and one acyclic crate; returns 0 when each is found and nothing
    else is."""
    import contextlib
    import io
    import tempfile

    global ROOT
    saved = ROOT
    with tempfile.TemporaryDirectory() as tmp:
        ROOT = tmp
        files = {
            "crates/x/src/lib.rs": "mod a;\nmod b;\npub use a::Thing;\n",
            "crates/x/src/a.rs": "use crate::b::Other;\npub struct Thing(Other);\n",
            "crates/x/src/b.rs": "pub struct Other;\nfn f() -> crate::Thing { todo!() }\n"
            + "fn long() {\n" + "    let _ = 1;\n" * 200 + "}\n",
            "crates/y/src/lib.rs": "mod p;\nmod q;\nuse p::P;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            "crates/y/src/p.rs": "pub struct P(super::q::Q);\n",
            "crates/y/src/q.rs": "pub struct Q;\n" + "// filler\n" * 1200,
            # 990 lines of code and a long test module that other tests
            # borrow from: not over the limit.
            "crates/y/src/r.rs": "// r\n" + "const _: u8 = 0;\n" * 990
            + "#[cfg(test)]\npub(crate) mod tests {\n" + "    // t\n" * 300 + "}\n",
        }
        for name, text in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cycles = check_cycles()
            sizes = check_sizes()
        ROOT = saved
    text = out.getvalue()
    ok = (
        cycles == 1
        and "cycle in crates/x: 2 files" in text
        and sizes == 2
        and "fn long: 202 lines" in text
        and "crates/y/src/q.rs: 1201 lines" in text
    )
    print("selftest: " + ("passed" if ok else "FAILED\n" + text))
    return 0 if ok else 1


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    if what == "selftest":
        return selftest()
    if what not in ("all", "cycles", "sizes"):
        print(__doc__)
        return 2
    bad = 0
    if what in ("all", "cycles"):
        bad += check_cycles()
    if what in ("all", "sizes"):
        bad += check_sizes()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
