#!/usr/bin/env bash
# Makes sure this machine can build and test braid; installs what it can,
# and says exactly what is missing when it cannot. Run by `make demo` and
# `make test`; safe to run again.
set -euo pipefail

missing=()
need_apt=()

have() { command -v "$1" >/dev/null 2>&1; }

# A C toolchain: Rust links with `cc`.
have cc || need_apt+=(build-essential)

# HiGHS, the MILP solver of `braid plan` (crates/plan), is built from
# source by the highs-sys crate: cmake and a C++ compiler, and libclang
# for bindgen's bindings to its C API.
have cmake || need_apt+=(cmake)
have c++ || need_apt+=(g++)
ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' || need_apt+=(libclang-dev)
# ccache, when it can be installed: cargo runs highs-sys's build once for
# `cargo clippy` and once for `cargo test` (their units differ), and the
# Makefile hands HiGHS's C++ compiles to ccache, so the second build
# finds them all (1 min 4 s instead of 4 min 45 s for highs-sys and its
# build tools, measured). Only a speed-up: never required.
if ! have ccache; then
    if [ "$(id -u)" = 0 ] && have apt-get; then
        need_apt+=(ccache)
    else
        echo "setup: note: ccache (a Debian package) is not installed: HiGHS is compiled afresh in each build profile"
    fi
fi

# Python 3 runs scripts/structure.py (import cycles and size limits),
# which the architecture test runs.
have python3 || need_apt+=(python3)

# The lab (braid lab, and the lab tests that `make test` runs as root):
# iproute2 (ip, tc), clang and libbpf headers to compile braid's eBPF loss
# program when braid is built (without them braid builds without it, and
# says so), iperf3 and babeld as real peers, mptcpd for mptcpize (iperf3
# over Linux MPTCP), tshark (and its dumpcap) for the Wireshark
# dissector's test (dist/wireshark/braid.lua). Without root the test
# runner lists the lab tests as ignored, so these are only installed,
# never required, for other users.
lab_apt=()
have ip || lab_apt+=(iproute2)
have tc || lab_apt+=(iproute2)
have clang || lab_apt+=(clang)
[ -e /usr/include/bpf/bpf_helpers.h ] || lab_apt+=(libbpf-dev)
have iperf3 || lab_apt+=(iperf3)
have babeld || lab_apt+=(babeld)
have ethtool || lab_apt+=(ethtool)
# ping: the getting-started walk-through (docs/operations.md) pings across
# the mesh.
have ping || lab_apt+=(iputils-ping)
have mptcpize || lab_apt+=(mptcpd)
# Headless Chromium: the dashboard test loads the daemon's page in it.
have chromium || lab_apt+=(chromium)
[ -x /usr/lib/frr/ospfd ] && [ -x /usr/lib/frr/bfdd ] || lab_apt+=(frr)
have tshark && have dumpcap || lab_apt+=(tshark)
# nft: the uplink walk-through's gateways NAT their uplinks
# (docs/operations.md, "Uplink health").
have nft || lab_apt+=(nftables)
if ((${#lab_apt[@]})); then
    if [ "$(id -u)" = 0 ] && have apt-get; then
        need_apt+=($(printf '%s\n' "${lab_apt[@]}" | sort -u))
    else
        echo "setup: note: the lab needs ${lab_apt[*]} (Debian packages) and root; its tests will be skipped"
    fi
fi

if ((${#need_apt[@]})); then
    if [ "$(id -u)" = 0 ] && have apt-get; then
        echo "setup: installing ${need_apt[*]} (apt)"
        apt-get update -qq
        # tshark's package asks whether users other than root may capture:
        # no (the lab captures as root).
        if printf '%s\n' "${need_apt[@]}" | grep -qx tshark && have debconf-set-selections; then
            echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        missing+=("Debian packages: ${need_apt[*]} (run: sudo apt-get install ${need_apt[*]})")
    fi
fi

if ! have cargo; then
    missing+=("Rust toolchain (cargo, rustc 1.85 or newer): install rustup from your distribution or https://rustup.rs, then run: rustup default stable")
else
    if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
        if have rustup; then
            echo "setup: adding rustfmt and clippy (rustup)"
            rustup component add rustfmt clippy >/dev/null 2>&1 || true
        fi
        cargo fmt --version >/dev/null 2>&1 || missing+=("rustfmt (run: rustup component add rustfmt)")
        cargo clippy --version >/dev/null 2>&1 || missing+=("clippy (run: rustup component add clippy)")
    fi
fi

if ((${#missing[@]})); then
    echo "setup: cannot continue; missing:" >&2
    for m in "${missing[@]}"; do echo "  - $m" >&2; done
    exit 1
fi
