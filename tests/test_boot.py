"""Boot-check parsing against checked-in console logs (a good boot, a
failing test, a panic, a hang), the initramfs writer, the /init program,
and the conformance snippets' metadata."""
import subprocess
from pathlib import Path

import pytest

from kbuild import boot
from kbuild import conformance

DATA = Path(__file__).parent / "data" / "boot"
REPO = Path(__file__).resolve().parent.parent


def run_of(name, timed_out=False, rc=0):
    lines = DATA.joinpath(name).read_text().splitlines()
    return boot.BootRun(None if timed_out else rc, timed_out,
                        [(0.01 * i, t) for i, t in enumerate(lines)], 3.0)


def test_booted_log():
    r = boot.classify(run_of("booted.log"))
    assert r["status"] == "booted" and r["class"] is None
    assert (r["tests_passed"], r["tests_failed"], r["tests_skipped"]) == (9, 0, 0)
    assert r["reached_init"] and r["boot_s"] is not None
    assert r["verdict"].endswith("status=ok")


def test_failing_test_is_named():
    r = boot.classify(run_of("test-failure.log"))
    assert r["status"] == "test-failure" and r["class"] == "boot"
    assert r["failures"] == ["minmax_typed"]
    assert (r["tests_passed"], r["tests_failed"]) == (8, 1)


def test_panic_log():
    r = boot.classify(run_of("panic.log"))
    assert r["status"] == "kernel-panic" and r["class"] == "boot"
    assert "No working init found" in r["panic"]
    assert not r["reached_init"]
    assert "Kernel panic" in r["log_tail"]


def test_hang_is_a_timeout():
    r = boot.classify(run_of("hang.log", timed_out=True))
    assert r["status"] == "timeout" and r["class"] == "boot"
    assert r["reached_init"] and r["verdict"] is None


def test_qemu_that_never_started_is_infra():
    r = boot.classify(boot.BootRun(1, False, [(0.0, "qemu: could not load kernel")], 0.1))
    assert r["status"] == "infra-error" and r["class"] == "infra"


def test_ktap_parser_handles_skip_and_dash_forms():
    s = boot.parse_ktap(["    # Subtest: s", "    ok 1 - a", "    not ok 2 b",
                         "    ok 3 c # SKIP no", "[    1.000000]     ok 4 d"])
    assert s["s"] == {"passed": ["a", "d"], "failed": ["b"], "skipped": ["c"]}


def cpio_entries(data):
    """(name, file type, size) of each entry of a newc cpio archive."""
    names, i = [], 0
    while i < len(data):
        h = data[i:i + 110]
        assert h[:6] == b"070701", f"not a newc header at {i}"
        ns, fs, mode = int(h[94:102], 16), int(h[54:62], 16), int(h[14:22], 16)
        name = data[i + 110:i + 110 + ns - 1].decode()
        names.append((name, mode >> 12, fs))
        j = i + 110 + ns
        j += -j % 4
        i = j + fs + (-(j + fs) % 4)
        if name == "TRAILER!!!":
            break
    return names


def test_initramfs_spec(tmp_path):
    """The spec handed to gen_init_cpio (a stand-in that prints it): the
    console node, executable /init, the module."""
    tool = tmp_path / "fake_gen_init_cpio"
    tool.write_text("#!/bin/sh\ncat \"$1\"\n")
    tool.chmod(0o755)
    (tmp_path / "init").write_bytes(b"\x7fELF")
    (tmp_path / "m.ko").write_bytes(b"12345")
    out = boot.make_initramfs(tool, tmp_path / "i.cpio",
                              {"init": tmp_path / "init", "m.ko": tmp_path / "m.ko"},
                              tmp_path / "kb-x")
    assert out.read_text().splitlines() == [
        "dir /dev 0755 0 0", "nod /dev/console 0600 0 0 c 5 1",
        f"file /init {tmp_path / 'init'} 0755 0 0",
        f"file /m.ko {tmp_path / 'm.ko'} 0644 0 0"]


def test_initramfs_tool_failure_is_infra(tmp_path):
    tool = tmp_path / "t"
    tool.write_text("#!/bin/sh\necho broken >&2; exit 1\n")
    tool.chmod(0o755)
    with pytest.raises(boot.KexpandError, match="(?s)gen_init_cpio.*broken") as e:
        boot.make_initramfs(tool, tmp_path / "i.cpio", {}, tmp_path / "kb-x")
    assert e.value.klass == "infra"


def test_init_builds_static(tmp_path):
    """No program interpreter: the kernel runs /init with no libc around."""
    init = boot.build_init(tmp_path)
    hdr = subprocess.run(["readelf", "-l", str(init)], capture_output=True,
                         text=True, check=True).stdout
    assert "Elf file type is" in hdr and "INTERP" not in hdr


def test_qemu_command_is_isolated():
    cmd = boot.qemu_command("bz", "rd")
    for flag in ("-no-reboot", "-nographic"):
        assert flag in cmd
    assert cmd[cmd.index("-nic") + 1] == "none"
    assert cmd[cmd.index("-accel") + 1] == "tcg"
    assert "panic=-1" in cmd[cmd.index("-append") + 1]


def test_conformance_snippets_have_questions_and_claims():
    snippets = conformance.load_snippets(REPO / "cases/minmax")
    assert len(snippets) >= 12
    names = [s["name"] for s in snippets]
    assert "04-min-uint-4" in names and "05-min-int-4u" in names
    by = {s["name"]: s for s in snippets}
    assert by["04-min-uint-4"]["expect"]["laight-v4"]["verdict"] == "accepted"
    assert by["05-min-int-4u"]["expect"]["laight-v4"]["verdict"] == "rejected"
    assert by["11-min_t-static-init"]["expect"]["torvalds-fixes"]["verdict"] == "rejected"
    assert all(s["title"] for s in snippets)


def test_conformance_matrix_marks_differences():
    snippets = [{"name": "a", "title": "q", "expect": {
        "p1": {"verdict": "accepted", "claim": "c1"}}}]
    from plots.tables import matrix_rows
    rows = matrix_rows(snippets, {"p1": {"a": {"verdict": "rejected"}},
                                              "p2": {"a": {"verdict": "accepted"}}},
                                   ["p1", "p2"])
    assert rows[0]["p1"] == "rejected" and rows[0]["p2"] == "accepted"
    assert rows[0]["differs_from_claim"] == "p1"
    assert rows[0]["expected"] == "p1: accepted"


def test_conformance_compile_classifies(tmp_path):
    """With the host compiler standing in for a kernel command: a snippet
    that does not compile is 'rejected', one that warns is 'warned'."""
    bad = tmp_path / "bad.c"
    bad.write_text("int f(void) { return undefined_thing; }\n")
    warn = tmp_path / "warn.c"
    warn.write_text("int f(void) { int unused; return 0; }\n")
    good = tmp_path / "good.c"
    good.write_text("int f(int a) { return a; }\n")
    template = ["gcc", "-Wall", "-c", "-o", "x.o", "src.c"]
    verdict = lambda p: conformance.compile_snippet(tmp_path, template, p)["verdict"]  # noqa: E731
    assert verdict(bad) == "rejected"
    assert verdict(warn) == "warned"
    assert verdict(good) == "accepted"
