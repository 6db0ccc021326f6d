#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# NIPA test: preprocessor expansion of HEAD~..HEAD (a patch test) or
# BRANCH_BASE..HEAD (a series test: FIRST_IN_SERIES not set) by kexpand's
# make check. Exit 0: no regression; 250: the whole build grew by more
# than half of TOTAL_THRESHOLD; 1: a regression; anything else: kexpand
# itself failed (its exit code). One line to DESC_FD; the report in
# RESULTS_DIR. Link this folder into nipa's tests/patch/ (and
# tests/series/), or set KEXPAND_DIR to kexpand's checkout. ci/README.md.
kx=${KEXPAND_DIR:-$(dirname "$(readlink -f "$0")")/../../..}
exec /usr/bin/python3 "$kx/ci/kexpand_ci.py" nipa
