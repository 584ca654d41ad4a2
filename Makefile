# The two commands of the README's quick start are `make demo` and
# `make test`. Both install what they need first (scripts/setup.sh).

TOPOLOGY := scenarios/topologies/wisp-backhaul.json
BRAID    := target/release/braid

.PHONY: demo test bench fuzz setup clean

# HiGHS's C++ compiles (highs-sys's build script, run by cmake) through
# ccache when it is installed: clippy's check and the tests' build each run
# that build script, and the second finds every object in the cache (as
# does a later clone on the same machine: ccache's own directory,
# ~/.cache/ccache). The base directory and no hashed working directory
# let build directories share objects. Evaluated when a recipe runs,
# after setup.
CCACHE := $$(command -v ccache >/dev/null && echo \
	CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache \
	CCACHE_BASEDIR=$(CURDIR) CCACHE_NOHASHDIR=1)

setup:
	@scripts/setup.sh

# Build everything and run the main job: the simulator demo (headline
# table on stdout, HTML report in out/demo/), then disjoint paths on the
# bundled example topology.
demo: setup
	env $(CCACHE) cargo build --release --workspace
	$(BRAID) demo
	@echo "== 3 node-disjoint paths from the gateway to the clinic (braid paths) =="
	$(BRAID) paths --topology $(TOPOLOGY) --from gw --to clinic --k 3

# Everything CI checks: formatting, lints, all tests (unit, property,
# scenario, CLI).
test: setup
	cargo fmt --all -- --check
	env $(CCACHE) cargo clippy --workspace --all-targets -- -D warnings
	# The router build: braid without the planner (docs/operations.md).
	env $(CCACHE) cargo clippy -p braid-cli --no-default-features -- -D warnings
	env $(CCACHE) cargo test --workspace

# Criterion benchmarks; figures go in docs/performance.md.
bench: setup
	env $(CCACHE) cargo bench --workspace

# Coverage-guided fuzzing of the parsers and the control plane (nightly,
# outside CI). FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 60
fuzz: setup
	@command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && cargo +nightly fuzz run parse_any -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run control_plane -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run node_datagram -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run access_frames -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run config_text -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run netjson -- -max_total_time=$(FUZZ_SECONDS)
	cd fuzz && cargo +nightly fuzz run scenario_text -- -max_total_time=$(FUZZ_SECONDS)

clean:
	cargo clean
