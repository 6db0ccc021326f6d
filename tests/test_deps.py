"""The Makefile's install step (deps-bench, deps-test), run for real by
make against stand-ins for dpkg-query, apt-get and id that come first on
PATH: nothing is installed, no package database is read, and whether the
step runs "as root" is up to the test."""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

DPKG_QUERY = """#!/bin/sh
# dpkg-query -W -f='${Package} ${db:Status-Status}\\n' PKG...: as dpkg-query does,
# a line per installed package, a message and exit 1 for each one listed
# in FAKE_MISSING (or every one: FAKE_MISSING=ALL)
shift 2
rc=0
for pkg; do
  case " $FAKE_MISSING " in
    *" ALL "*|*" $pkg "*)
      echo "dpkg-query: no packages found matching $pkg" >&2; rc=1;;
    *) echo "$pkg installed";;
  esac
done
exit $rc
"""

APT_GET = """#!/bin/sh
echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >> "$FAKE_APT_LOG"
case "$1" in "$FAKE_APT_FAIL") exit 100;; esac
exit 0
"""

ID = """#!/bin/sh
if [ "$1" = -u ]; then echo "$FAKE_UID"; exit 0; fi
exec /usr/bin/id "$@"
"""


def makefile_list(var, makefile=None):
    """A package list as make itself expands it (make -pn prints the
    variable data base without running any recipe)."""
    cmd = ["make", "-pn", "-C", str(REPO)]
    if makefile:
        cmd += ["-f", str(makefile)]
    out = subprocess.run(cmd + ["deps-bench"], capture_output=True, text=True,
                         env=clean_env()).stdout
    m = re.search(rf"^{var} :?= (.*)$", out, re.M)
    assert m, f"{var} not in make's data base"
    return m.group(1).split()


def clean_env():
    # a pytest run started by `make unit-test` must not hand its own make
    # flags (-n, -s, jobserver) to the make under test
    return {k: v for k, v in os.environ.items()
            if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}


@pytest.fixture
def standins(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("dpkg-query", DPKG_QUERY), ("apt-get", APT_GET), ("id", ID)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    log = tmp_path / "apt.log"

    def run(target, uid, missing="ALL", apt_fail="", makefile=None):
        env = dict(clean_env(), PATH=f"{bindir}:{os.environ['PATH']}",
                   FAKE_UID=str(uid), FAKE_MISSING=missing,
                   FAKE_APT_LOG=str(log), FAKE_APT_FAIL=apt_fail)
        cmd = ["make", "-C", str(REPO)]
        if makefile:
            cmd += ["-f", str(makefile)]
        p = subprocess.run(cmd + [target], env=env, capture_output=True,
                           text=True, timeout=60)
        calls = log.read_text().splitlines() if log.exists() else []
        return p, calls

    return run


def test_package_lists_are_read_from_the_makefile():
    bench = makefile_list("PKGS_bench")
    test = makefile_list("PKGS_test")
    for pkg in ("linux-source-6.1", "hyperfine", "qemu-system-x86", "clang",
                "python3-matplotlib", "python3-markdown", "time"):
        assert pkg in bench
    assert test[:len(bench)] == bench
    assert {"python3-pytest", "chromium"} <= set(test) - set(bench)


@pytest.mark.parametrize("target", ["deps-bench", "deps-test"])
def test_root_installs_every_missing_package(standins, target):
    pkgs = makefile_list("PKGS_" + target.split("-")[1])
    p, calls = standins(target, uid=0)
    assert p.returncode == 0, p.stderr
    assert len(calls) == 2, calls
    update, install = (c.split() for c in calls)
    assert update[1] == "update"
    assert install[0] == "DEBIAN_FRONTEND=noninteractive"
    assert install[1:5] == ["install", "-y", "-q", "--no-install-recommends"]
    assert install[5:] == pkgs
    assert "installing Debian packages: " + " ".join(pkgs) in p.stderr
    if target == "deps-test":
        assert "python3-pytest" in install and "chromium" in install
    else:
        assert "python3-pytest" not in install and "chromium" not in install


def test_root_installs_only_what_is_missing(standins):
    p, calls = standins("deps-bench", uid=0, missing="hyperfine qemu-system-x86")
    assert p.returncode == 0, p.stderr
    assert [c.split()[1] for c in calls] == ["update", "install"]
    # in the Makefile's order, not the order they were named in
    assert calls[1].split()[5:] == ["qemu-system-x86", "hyperfine"]


@pytest.mark.parametrize("target", ["deps-bench", "deps-test"])
def test_other_user_is_told_what_to_install(standins, target):
    pkgs = makefile_list("PKGS_" + target.split("-")[1])
    p, calls = standins(target, uid=1000)
    # the recipe exits 5; make itself always exits 2 when a recipe fails
    # and names the recipe's code as "Error 5"
    assert p.returncode == 2 and re.search(rf"\[Makefile:\d+: {target}\] Error 5$",
                                           p.stderr, re.M), p.stderr
    assert calls == []
    line = next(l for l in p.stderr.splitlines() if "missing Debian packages" in l)
    for pkg in pkgs:
        assert re.search(rf"(?<![\w.+-]){re.escape(pkg)}(?![\w.+-])", line), pkg
    assert "apt-get install " + " ".join(pkgs) in line


def test_nothing_missing_calls_no_apt_get(standins):
    for uid in (0, 1000):
        for target in ("deps-bench", "deps-test"):
            p, calls = standins(target, uid=uid, missing="")
            assert p.returncode == 0, p.stderr
            assert calls == []
            assert "missing" not in p.stderr and "installing" not in p.stderr


def test_failed_update_stops_before_install(standins):
    p, calls = standins("deps-bench", uid=0, apt_fail="update")
    assert p.returncode == 2 and "deps-bench] Error 5" in p.stderr, p.stderr
    assert "apt-get update failed" in p.stderr
    assert [c.split()[1] for c in calls] == ["update"]


def test_failed_install_is_reported(standins):
    p, calls = standins("deps-bench", uid=0, missing="hyperfine", apt_fail="install")
    assert p.returncode == 2 and "deps-bench] Error 5" in p.stderr, p.stderr
    assert "apt-get install hyperfine failed" in p.stderr
