#!/usr/bin/env bash
# Builds braid's Debian package: out/deb/braid_<version>_<arch>.deb.
#
#   scripts/deb.sh                      build the release binary, then the package
#   scripts/deb.sh --binary PATH        package this binary instead (no build)
#   scripts/deb.sh --out DIR            write the package into DIR
#
# The package's own files are in dist/deb/ (the unit, the default config,
# the maintainer scripts, copyright); the man pages and shell completions
# are made by the binary itself (`braid generate`). Needs dpkg-deb, gzip
# and, to build, cargo with clang and libbpf-dev (the eBPF programs).
# Prints the package's path last.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
binary=
out=$root/out/deb

while (($#)); do
    case "$1" in
    --binary) binary=${2:?--binary needs a path}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "deb.sh: unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

for tool in dpkg-deb dpkg gzip; do
    command -v "$tool" >/dev/null || { echo "deb.sh: $tool is not installed (Debian: dpkg, gzip)" >&2; exit 1; }
done

if [ -z "$binary" ]; then
    # The eBPF programs are compiled by crates/bpf/build.rs; a build
    # without clang would carry none, and the package would lack the
    # kernel data path without a word. Refuse that here.
    if ! command -v clang >/dev/null || [ ! -e /usr/include/bpf/bpf_helpers.h ]; then
        echo "deb.sh: building needs clang and libbpf-dev (the eBPF programs): apt-get install clang libbpf-dev" >&2
        exit 1
    fi
    (cd "$root" && cargo build --release --locked -p braid-cli)
    binary=${CARGO_TARGET_DIR:-$root/target}/release/braid
fi
[ -x "$binary" ] || { echo "deb.sh: $binary is not an executable" >&2; exit 1; }

# `braid 0.1.0` -> 0.1.0; the binary says which version it is.
version=$("$binary" --version | awk '{print $2}')
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || { echo "deb.sh: cannot read a version from $binary --version" >&2; exit 1; }
arch=$(dpkg --print-architecture)
deb=braid_${version}_${arch}.deb

stage=$(mktemp -d "${TMPDIR:-/tmp}/braid-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
umask 022
chmod 0755 "$stage"

install -D -m 0755 "$binary" "$stage/usr/bin/braid"
# Debian ships stripped binaries (the release build carries line tables).
command -v strip >/dev/null && strip --strip-unneeded --remove-section=.comment "$stage/usr/bin/braid"

install -D -m 0644 "$root/dist/deb/braid.service" "$stage/lib/systemd/system/braid.service"
install -D -m 0644 "$root/dist/deb/braid.toml" "$stage/etc/braid/braid.toml"

# Man pages: braid.1 and one per subcommand, compressed.
"$stage/usr/bin/braid" generate man "$stage/usr/share/man/man1"
gzip -9n "$stage"/usr/share/man/man1/*.1

# Shell completions, where each shell's Debian package looks for them.
install -d "$stage/usr/share/bash-completion/completions" \
    "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d"
"$stage/usr/bin/braid" generate completions bash >"$stage/usr/share/bash-completion/completions/braid"
"$stage/usr/bin/braid" generate completions zsh >"$stage/usr/share/zsh/vendor-completions/_braid"
"$stage/usr/bin/braid" generate completions fish >"$stage/usr/share/fish/vendor_completions.d/braid.fish"

doc=$stage/usr/share/doc/braid
install -D -m 0644 "$root/dist/deb/copyright" "$doc/copyright"
for f in README.md docs/operations.md docs/security.md docs/protocol.md; do
    install -m 0644 "$root/$f" "$doc/$(basename "$f")"
    gzip -9n "$doc/$(basename "$f")"
done
# Every Debian package has a changelog; this (native) one is generated.
cat >"$doc/changelog" <<EOF
braid ($version) unstable; urgency=medium

  * Package built by scripts/deb.sh from the braid source tree.

 -- braid maintainers <braid@example.invalid>  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$root/Cargo.toml")}")
EOF
gzip -9n "$doc/changelog"

# Depends: the shared libraries the binary links, by their Debian package.
needed=$(objdump -p "$stage/usr/bin/braid" | awk '/NEEDED/ {print $2}')
depends=()
for lib in $needed; do
    case "$lib" in
    libc.so.6 | libm.so.6 | libdl.so.2 | libpthread.so.0 | librt.so.1 | ld-linux*) ;;
    libgcc_s.so.1) depends+=("libgcc-s1") ;;
    libstdc++.so.6) depends+=("libstdc++6") ;; # HiGHS, the planner's solver, is C++
    *)
        # Any other library: the package dpkg says installed the file the
        # binary loads here.
        path=$(ldd "$stage/usr/bin/braid" | awk -v lib="$lib" '$1 == lib {print $3; exit}')
        package=$(dpkg-query -S "${path:-/nonexistent}" 2>/dev/null | head -1 | cut -d: -f1)
        if [ -z "$package" ]; then
            echo "deb.sh: the binary links $lib, which this script does not know the package of" >&2
            exit 1
        fi
        depends+=("$package")
        ;;
    esac
done
glibc=$(objdump -T "$stage/usr/bin/braid" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
depends=("libc6 (>= ${glibc:-2.17})" "${depends[@]}" "iproute2" "adduser")
dep_line=$(printf '%s, ' "${depends[@]}")

install -d "$stage/DEBIAN"
for script in postinst prerm postrm; do
    install -m 0755 "$root/dist/deb/$script" "$stage/DEBIAN/$script"
done
echo /etc/braid/braid.toml >"$stage/DEBIAN/conffiles"
(cd "$stage" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat >"$stage/DEBIAN/control" <<EOF
Package: braid
Version: $version
Architecture: $arch
Maintainer: braid maintainers <braid@example.invalid>
Installed-Size: $size
Depends: ${dep_line%, }
Recommends: ethtool
Section: net
Priority: optional
Description: multipath routing daemon for wireless mesh networks
 braid measures every link of a wireless mesh or backhaul, computes
 several disjoint paths between where traffic enters and leaves it, and
 sends each packet over one path, stripes packets across paths, mirrors
 them or adds parity, so that a fading link or a roaming client loses
 nothing. The daemon runs on each router (TUN device, UDP underlay, an
 optional kernel data path in eBPF); braid ctl asks it what it does.
EOF

mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/$deb" >/dev/null
echo "$out/$deb"
