# kexpand: measure how much the preprocessor expands kernel files per commit.
# See README.md. Python is Debian's (/usr/bin/python3) with Debian packages.
PY      ?= /usr/bin/python3
CC_HOST ?= gcc
CASE    ?= minmax

# Debian packages each target needs; installed when missing (as root), or
# named in the error otherwise.
PKGS_bench := linux-source-6.1 gcc make flex bison bc libelf-dev libssl-dev libc6-dev \
              qemu-system-x86 \
              xz-utils git python3 python3-matplotlib clang lld llvm hyperfine time
PKGS_test  := $(PKGS_bench) python3-pytest chromium

.PHONY: all bench bench-analyzer boot scan prepare plots compare bisect test unit-test clean deps-bench deps-test

# CC=gcc|clang|both on the command line picks the compilers (make's own CC
# default is ignored); FILES="a.c b.c" limits the files.
CC_ARG  = $(if $(filter command line,$(origin CC)),--cc "$(CC)")
OPT_ARGS = $(CC_ARG) $(if $(FILES),--files "$(FILES)") $(if $(KERNEL),--kernel "$(KERNEL)")

all: bench/kx-analyze

bench/kx-analyze: bench/kx-analyze.c
	$(CC_HOST) -O2 -g -Wall -Wextra -Werror -std=gnu11 -o $@ $<

# Explicit targets, not a pattern rule: make never searches implicit rules
# for .PHONY targets, so a `deps-%` rule silently did nothing.
deps-bench deps-test:
	@missing=$$(for p in $(PKGS_$(@:deps-%=%)); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	missing=$$(echo $$missing); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "kexpand: missing Debian packages: $$missing; install them with: sudo apt-get install $$missing" >&2; exit 5; fi; \
	  echo "kexpand: installing Debian packages: $$missing" >&2; \
	  apt-get update -q >/dev/null || { echo "kexpand: apt-get update failed; check the network or the apt sources" >&2; exit 5; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	    { echo "kexpand: apt-get install $$missing failed" >&2; exit 5; }; \
	fi

# The whole story on the packaged tree: prepare the series points, measure
# every point and focus file, write results/ and the plots.
bench: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py bench --case $(CASE) $(CC_ARG) $(if $(FILES),--files "$(FILES)")
	$(PY) compare.py --case $(CASE)

prepare: deps-bench
	$(PY) bench/kexpand.py prepare --case $(CASE)

plots:
	$(PY) compare.py --case $(CASE)

# Boot-check points (POINTS="a b", default all) in QEMU + conformance matrix.
boot: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py boot --case $(CASE)
	$(PY) compare.py --case $(CASE)

# Scan every C file the build compiled: all points, or rank A..B by growth
# (WRITE_FOCUS=path writes the top files as a focus-file list).
scan: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py scan --case $(CASE) $(if $(A),--a "$(A)") $(if $(B),--b "$(B)") \
	  $(if $(WRITE_FOCUS),--write-focus "$(WRITE_FOCUS)") $(if $(KERNEL),--kernel "$(KERNEL)") \
	  $(if $(filter command line,$(origin CC)),--cc "$(CC)")
	$(PY) compare.py --case $(CASE)

# Throughput of the C analyzer, and its cost relative to gcc -E (setup.c, laight-v4).
bench-analyzer: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py analyzer-bench --case $(CASE)

# Compare two commits: series tags, or any commit-ish of KERNEL=<git tree>.
compare: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py compare --case $(CASE) --a "$(A)" --b "$(B)" $(OPT_ARGS)

# First commit between GOOD and BAD that pushes FILE's expansion past THRESHOLD.
bisect: deps-bench bench/kx-analyze
	$(PY) bench/kexpand.py bisect --case $(CASE) --file "$(FILE)" --good "$(GOOD)" \
	  --bad "$(BAD)" $(if $(THRESHOLD),--threshold "$(THRESHOLD)") $(if $(KERNEL),--kernel "$(KERNEL)")

unit-test: deps-test bench/kx-analyze
	$(PY) -m pytest -q tests -m "not integration"

test: deps-test bench/kx-analyze
	$(PY) -m pytest -q tests

clean:
	rm -f bench/kx-analyze
	rm -rf tests/__pycache__ bench/__pycache__ kernel-build/__pycache__ plots/__pycache__ .pytest_cache
