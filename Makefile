# kexpand: measure how much the preprocessor expands kernel files per commit.
# See README.md. Python is Debian's (/usr/bin/python3) with Debian packages.
PY      ?= /usr/bin/python3
CC_HOST ?= gcc

# Debian packages each target needs; installed when missing (as root), or
# named in the error otherwise.
PKGS_bench := linux-source-6.1 gcc make flex bison bc libelf-dev libssl-dev libc6-dev \
              qemu-system-x86 \
              xz-utils git python3 python3-matplotlib python3-markdown clang lld llvm \
              hyperfine time g++ llvm-14-dev libclang-cpp14-dev libclang-14-dev \
              qemu-user python3-scipy python3-distributed bubblewrap zstd
PKGS_test  := $(PKGS_bench) python3-pytest chromium linux-source-6.12

.PHONY: all bench bench-analyzer bench-check boot scan sweep prepare plots compare bisect check track test unit-test clean deps-bench deps-test

# Every variable (A, B, FILES, KERNEL, ...) reaches the programs as
# environment, never as shell text: make puts command-line variables into
# the recipes' environment, and kbuild/settings.py reads and checks them.
# CC=gcc|clang|both counts only on the command line (make's own CC default
# and a CC in the environment are ignored).
# Their text reaches the programs as typed: make does not expand a '$' in
# them ($(shell ...) in A= runs nothing) and the shell never sees them.
KX_VARS := A B FILE FILES GOOD BAD KERNEL POINTS CASE RUNS JOBS BOOT_TIMEOUT ICOUNT_CAP \
           THRESHOLD TOTAL_THRESHOLD NO_TIME NO_BOOT NO_MACROS WRITE_FOCUS CONFIG KCONFIG KEXPAND_WORK KEXPAND_RESULTS \
           DASK_SCHEDULER POINT N PATCHES BASE NAME RANGE EVERY SCAN MAX_COMMITS FULL_BUILD \
           SANDBOX E_TIME_LIMIT E_MEM_LIMIT DASK_TLS_CA DASK_TLS_CERT DASK_TLS_KEY DASK_INSECURE \
           REPORT_FROM REPORTED_BY REPORT_URL
# The names of every variable on the command line, so that a misspelt one
# (FIELS=) or one the target does not take is named instead of ignored.
export KX_GIVEN := $(filter-out PY CC_HOST,$(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))
$(foreach v,$(KX_VARS),$(if $(filter command line,$(origin $(v))),$(eval override $(v) := $$(value $(v)))$(eval export $(v))))
export KX_CC := $(if $(filter command line,$(origin CC)),$(value CC))

# Run a program in the background and wait for it, passing TERM, INT and
# HUP on: make signals only its direct child (this shell), which would
# otherwise die and leave the program running with the lock held. `wait`
# returns early when a trapped signal arrives, so it is called until the
# program is gone. Sets rc to the program's exit code; after an interrupt,
# a program killed by the signal before it could take it (Python still
# starting: 143 for TERM) counts as interrupted too: 130, as documented.
fg = stop=; pid=; trap 'stop=1; [ -z "$$pid" ] || kill -TERM $$pid 2>/dev/null' TERM INT HUP; \
	$(1) & pid=$$!; [ -z "$$stop" ] || kill -TERM $$pid 2>/dev/null; \
	while wait $$pid; rc=$$?; kill -0 $$pid 2>/dev/null; do :; done; \
	[ -z "$$stop" ] || [ $$rc -le 128 ] || rc=130
# Run a measuring command, then draw the reports (also after build or boot
# failures, which are data, and after a regression found by make check);
# exit with the measuring command's code. An interrupt stops both.
measure = $(call fg,$(PY) bench/kexpand.py $(1)); mrc=$$rc; [ -z "$$stop" ] || exit $$mrc; \
	case $$mrc in 0|1|3|4) $(call fg,$(PY) report.py $(2)); [ $$rc = 0 ] || exit $$rc;; esac; exit $$mrc

T := bench/tools
TOOLS := $(T)/kx-analyze $(T)/kx-macros $(T)/kx-macrostack $(T)/kx-icount.so $(T)/kx-cc
all: $(TOOLS)

KX_ANALYZE := $(T)/kx-analyze.c $(T)/kx-includes.c $(T)/kx-names.c
$(T)/kx-analyze: $(KX_ANALYZE) $(T)/kx-includes.h $(T)/kx-names.h $(T)/kx-alloc.h $(T)/kx-lines.h \
		$(T)/kx-json.h $(T)/kx-marker.h
	$(CC_HOST) -O2 -g -Wall -Wextra -Werror -std=gnu11 -o $@ $(KX_ANALYZE)

$(T)/kx-macros: $(T)/kx-macros.c $(T)/kx-srcmap.c $(T)/kx-srcmap.h $(T)/kx-json.h \
		$(T)/kx-marker.h
	$(CC_HOST) -O2 -g -Wall -Wextra -Werror -std=gnu11 -o $@ $(T)/kx-macros.c $(T)/kx-srcmap.c

# the compiler wrapper of a Kbuild-driven scan
$(T)/kx-cc: $(T)/kx-cc.c $(T)/kx-ccargs.h $(T)/kx-elf.h $(T)/kx-json.h
	$(CC_HOST) -O2 -g -Wall -Wextra -Werror -std=gnu11 -o $@ $<

# a QEMU TCG plugin (user mode): instruction counts where perf has no PMU
$(T)/kx-icount.so: $(T)/kx-icount.c
	$(CC_HOST) -O2 -g -Wall -Wextra -Werror -std=gnu11 -fPIC -shared -o $@ $<

# clang's preprocessor API is C++ (Debian's libclang-14-dev, libclang-cpp14-dev)
LLVM_DIR := /usr/lib/llvm-14
$(T)/kx-macrostack: $(T)/kx-macrostack.cpp $(T)/kx-json.h $(T)/kx-stacks.h
	g++ -O2 -g -std=c++17 -Wall -Wextra -Werror -isystem $(LLVM_DIR)/include -o $@ $< \
	  -L$(LLVM_DIR)/lib -Wl,-rpath,$(LLVM_DIR)/lib -lclang-cpp -lLLVM-14

# Explicit targets, not a pattern rule: make never searches implicit rules
# for .PHONY targets, so a `deps-%` rule silently did nothing. One
# dpkg-query for all packages: every make target runs this.
deps-bench deps-test:
	@inst=" $$(dpkg-query -W -f='$${Package} $${db:Status-Status}\n' $(PKGS_$(@:deps-%=%)) 2>/dev/null | \
	  awk '$$2 == "installed" { print $$1 }' | tr '\n' ' ') "; \
	missing=$$(for p in $(PKGS_$(@:deps-%=%)); do case "$$inst" in *" $$p "*) ;; *) echo $$p;; esac; done); \
	missing=$$(echo $$missing); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" != 0 ]; then echo "kexpand: missing Debian packages: $$missing; install them with: sudo apt-get install $$missing" >&2; exit 5; fi; \
	  echo "kexpand: installing Debian packages: $$missing" >&2; \
	  apt-get update -q >/dev/null || { echo "kexpand: apt-get update failed; check the network or the apt sources" >&2; exit 5; }; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing >/dev/null || \
	    { echo "kexpand: apt-get install $$missing failed" >&2; exit 5; }; \
	fi

# The whole story on the packaged tree: prepare the series points, boot and
# measure every point and focus file, write results/ and the plots.
bench: deps-bench $(TOOLS)
	@$(call measure,bench,)

prepare: deps-bench
	@$(call fg,$(PY) bench/kexpand.py prepare); exit $$rc

plots:
	@$(call fg,$(PY) report.py); exit $$rc

# Boot-check points (POINTS="a b", default all) in QEMU + conformance matrix.
boot: deps-bench $(TOOLS)
	@$(call measure,boot,)

# Scan every C file the build compiled: all points, or rank A..B by growth
# (WRITE_FOCUS=path writes the top files as a focus-file list).
scan: deps-bench $(TOOLS)
	@$(call measure,scan,$(if $(A),--scan,--index))

# Which config options multiply FILE's expansion at POINT (N configurations).
sweep: deps-bench $(TOOLS)
	@$(call measure,sweep,--sweep)

# Throughput of the C analyzer, and its cost relative to gcc -E (setup.c, laight-v4).
# How long make check takes here (cold, base cached, one .c file) next to
# its floor; results/check-bench-<config>.json (CONFIG=defconfig: the big one).
# Its checks draw their reports in a results dir of their own.
bench-check: deps-bench $(TOOLS)
	@$(call fg,$(PY) bench/kexpand.py check-bench); exit $$rc

bench-analyzer: deps-bench $(TOOLS)
	@$(call fg,$(PY) bench/kexpand.py analyzer-bench); exit $$rc

# Compare two commits: series tags, or any commit-ish of KERNEL=<git tree>.
compare: deps-bench $(TOOLS)
	@$(call measure,compare,--compare)

# First commit between GOOD and BAD that pushes FILE's expansion past THRESHOLD.
bisect: deps-bench $(TOOLS)
	@$(call measure,bisect,--index)

# Does a posted series blow up any file the build compiles? PATCHES=<mbox,
# directory or patch files> [BASE=], or A= B= in KERNEL=; exit 1: a regression.
check: deps-bench $(TOOLS)
	@$(call measure,check,--check)

# A tree's history (RANGE=A..B in KERNEL=), every commit measured once, the
# changes beyond the history's noise pointed out; nightly: only new commits.
track: deps-bench $(TOOLS)
	@$(call measure,track,--track)

unit-test: deps-test $(TOOLS)
	$(PY) -m pytest -q tests -m "not integration"

test: deps-test $(TOOLS)
	$(PY) tests/lanes.py

clean:
	rm -f $(TOOLS)
	rm -rf tests/__pycache__ bench/__pycache__ bench/cmd/__pycache__ bench/measure/__pycache__ \
	  kernel-build/kbuild/__pycache__ plots/__pycache__ .pytest_cache
