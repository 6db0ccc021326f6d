"""plots.checkreport: make check's report.txt stays within 72 columns with the
long paths of a defconfig build (the table, the details, the hottest
lines) and a PATCHES= list of many files, and its reproduce block is a
shell command that gives the same arguments back."""
import subprocess

from plots import checkreport as check

LONG = "drivers/gpu/drm/amd/display/dc/dml/dcn32/display_mode_vba_32.c"
PATCHES = [f"/home/dev/outgoing/v4-000{i}-minmax-umin.patch"
           for i in range(1, 6)] + ["/tmp/we$ird\"na`me\\.patch"]


def row(path, base, tip):
    return {"file": path, "bytes_base": base, "bytes_tip": tip, "change": tip / base - 1,
            "growth_bytes": tip - base, "longest_line_base": 10, "longest_line_tip": 20,
            "hot_lines_tip": [{"at": f"{path}:1234", "bytes": 123456789,
                               "source": "x = min3(a, b, c);"}],
            "per_patch": [{"patch": 1, "bytes": base, "ratio": 1.0, "subject": "s"},
                          {"patch": 2, "bytes": tip, "ratio": tip / base, "subject": "t"}]}


def record(command):
    rows = [row(LONG, 4_689_953, 49_663_669), row("arch/x86/kernel/cpu/cacheinfo.c", 2_401_118,
                                                  3_163_794), row("mm/compaction.c", 100, 200),
            row("net/ipv4/inet_connection_sock.c", 1_000_000, 1_200_000)]
    scan = {"n_files": 2793}
    return {"series": {"subject": "minmax: Add umin(a, b) and umax(a, b)", "version": 4,
                       "key": "k", "patches": [{"subject": "s"}, {"subject": "t"}]},
            "base": {"ref": "pre-6.7", "commit": "0" * 40, "subject": "base"},
            "tip": {"commit": "1" * 40}, "package": "linux-source-6.1",
            "config": "x86_64 defconfig + config.fragment", "compilers": {"gcc": "gcc 12"},
            "threshold": {"ratio": 1.1, "min_growth_bytes": 16384}, "path": "seeded",
            "results": {"gcc": {"regressions": rows, "improvements": [],
                                "scan_base": scan, "scan_tip": scan},
                        "clang": {"regressions": [row("mm/page-writeback.c", 10**6, 2 * 10**6)],
                                  "improvements": [], "scan_base": scan, "scan_tip": scan}},
            "make_command": command}


def test_long_paths_and_patch_lists_stay_within_72_columns():
    import shlex
    command = shlex.join(["make", "check", "PATCHES=" + " ".join(PATCHES), "BASE=pre-6.7",
                          "CONFIG=defconfig"])
    txt = check.report_txt(record(command))
    for line in txt.splitlines():
        # only a word longer than a line (a path) may go over, on its own
        assert len(line) <= 72 or " " not in line.strip().rstrip(" \\"), line
    lines = txt.splitlines()
    table = lines[lines.index("---------------- --------------- ----------------") + 1:
                  lines.index("Details are as below:") - 1]
    assert len(table) > 5 and all(len(x) <= 72 for x in table), table
    # a last part that does not fit in the path's column ends at column 72
    assert "  net/ipv4/\n" in txt and "\n" + " " * 50 + "inet_connection_sock.c\n" in txt
    assert "  mm/\n" + " " * 48 + "page-writeback.c (clang)\n" in txt
    # the table: the long path broken after a '/', going on in its column
    i = next(k for k, x in enumerate(lines) if "49,663,669  drivers/" in x)
    col = lines[i].index("drivers/")
    assert lines[i + 1][:col].strip() == "" and lines[i + 1][col:] != ""
    assert (lines[i][col:] + lines[i + 1][col:]).startswith(LONG[:40])
    assert "2,401,118          +31.8%        3,163,794  arch/x86/kernel/cpu/" in txt
    assert f"{LONG} (gcc):\n  4,689,953 -> 49,663,669 bytes (x10.59)" in txt
    assert f"    {LONG}:1234\n      123,456,789 bytes" in txt


def test_the_reproduce_block_gives_the_same_arguments_back():
    import shlex
    args = ["make", "check", "PATCHES=" + " ".join(PATCHES), "BASE=pre-6.7", "CONFIG=defconfig"]
    block = check.reproduce(shlex.join(args))
    assert len(block) > 6 and all(len(x) <= 72 for x in block), block
    assert block[0] == "        make check \\"
    script = "make() { printf '%s\\n' \"$@\"; }\n" + "\n".join(block)
    got = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert got[0] == "check" and got[2:] == ["BASE=pre-6.7", "CONFIG=defconfig"]
    assert got[1].split() == args[2].split()       # what kexpand's PATCHES= split gives
    # a path with a blank is one word, not a list: quoted whole, never split
    kernel = "KERNEL=/home/dev/src/my linux tree with a long name/linux-next-2024"
    block = check.reproduce(shlex.join(["make", "check", kernel, *args[2:]]))
    got = subprocess.run(["bash", "-c", "make() { printf '%s\\n' \"$@\"; }\n"
                          + "\n".join(block)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert got[1] == kernel and got[3:] == ["BASE=pre-6.7", "CONFIG=defconfig"]
    # a '!' (an interactive bash's history) keeps the list in single quotes
    bang = shlex.join(["make", "check", "PATCHES=" + " ".join(PATCHES[:5] + ["/tmp/wow!x.patch"])])
    assert not any('"' in x for x in check.reproduce(bang)), check.reproduce(bang)
    # a short command stays one line
    assert check.reproduce("make check PATCHES=a.mbox") == ["        make check PATCHES=a.mbox"]
