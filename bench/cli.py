"""kexpand's command line. Every subcommand reads its settings once, up
front, into a Request (kernel-build/kbuild/settings.py: flags here win
over the environment the Makefile passes), checks them before any work,
and returns an exit code (README, "Exit codes").

  kexpand.py prepare                       unpack the tree, apply the series
  kexpand.py bench   [--points] [--files] [--cc] [--no-time] [--no-boot]
  kexpand.py boot    [--points]            boot checks + conformance only
  kexpand.py compare --a REF --b REF [--kernel DIR] [--files] [--cc]
  kexpand.py bisect  --file F --good REF --bad REF [--threshold T] [--kernel]
  kexpand.py scan    [--a REF --b REF] [--kernel DIR] [--write-focus PATH]
  kexpand.py sweep   --file F --point REF [--n N]  configs that multiply F
  kexpand.py check   --patches P... [--base REF] [--kernel DIR] [--threshold T]
                     (or --a REF --b REF): a series against every compiled file
  kexpand.py track   --range A..B [--every N] [--kernel DIR] [--files] [--scan]
                     a tree's history, every commit measured once
  kexpand.py analyzer-bench                kx-analyze throughput
  kexpand.py bisect-step ...               internal: one `git bisect run` step

Reports (plots, tables, index.html) are drawn by report.py afterwards."""
import argparse

from kbuild import proc, sandbox, series, settings
from kbuild.util import KexpandError, main_wrapper

from .cmd import (analyzer, bench, bisection, boot, check, checkbench, compare, prepare,
                  scan, sweep, track)

COMMON = ("case", "points", "files", "cc", "kernel", "a", "b", "file", "good",
          "bad", "threshold", "write_focus", "config", "kconfig")


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise KexpandError(f"{message}; see 'kexpand.py --help'")


def parser():
    ap = Parser(prog="kexpand", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    specs = {
        "prepare": [], "boot": ["points"],
        "bench": ["points", "files", "cc", "no_time", "no_boot", "no_macros"],
        "compare": ["a", "b", "kernel", "files", "cc", "no_time", "no_macros",
                    "config", "kconfig"],
        "bisect": ["file", "good", "bad", "kernel", "threshold", "no_macros", "config",
                   "kconfig"],
        "scan": ["a", "b", "points", "kernel", "cc", "top", "write_focus",
                 "config", "kconfig"],
        "sweep": ["file", "point", "n", "config"],
        "check": ["patches", "base", "a", "b", "kernel", "cc", "config", "kconfig",
                  "threshold", "total_threshold", "no_macros", "name", "full_build",
                  "report_from", "reported_by", "report_url"],
        "track": ["range", "every", "kernel", "files", "cc", "config", "kconfig",
                  "scan", "name", "no_macros", "max_commits"],
        "analyzer-bench": ["repeat"],
        "check-bench": ["config", "kconfig"],
        "bisect-step": ["file", "tree", "step_threshold", "strict_config"],
    }
    for name, opts in specs.items():
        p = sub.add_parser(name)
        p.add_argument("--case")
        for o in opts:
            flag = "--" + o.replace("_", "-")
            if o in ("no_time", "no_boot", "no_macros", "full_build", "scan"):
                p.add_argument(flag, action="store_true", default=None)
            elif o == "step_threshold":
                p.add_argument("--threshold", dest="step_threshold", type=int,
                               required=True)
            else:
                p.add_argument(flag)
    return ap


def main(argv=None):
    """Parse argv (default: sys.argv[1:]), build the Request, run the
    subcommand; returns its exit code. Callable in-process (tests)."""
    args = vars(parser().parse_args(argv))
    cmd = args.pop("cmd")
    extra = {k: args.pop(k, None) for k in ("tree", "step_threshold")}
    req = settings.from_env(cmd, args)
    proc.set_limits(req.e_time_limit, req.e_mem_limit)
    case = series.load_case(req.case, req.cases_dir)
    if cmd != "prepare":
        sandbox.check()       # before any work: refuse rather than run bare
    if cmd == "bisect-step":
        return bisection.cmd_bisect_step(req, case, extra["tree"], extra["step_threshold"])
    return {"prepare": prepare.cmd_prepare, "bench": bench.cmd_bench,
            "boot": boot.cmd_boot, "compare": compare.cmd_compare,
            "analyzer-bench": analyzer.cmd_analyzer_bench,
            "bisect": bisection.cmd_bisect, "scan": scan.cmd_scan,
            "sweep": sweep.cmd_sweep, "check": check.cmd_check,
            "track": track.cmd_track, "check-bench": checkbench.cmd_check_bench}[cmd](req, case)


def run(argv=None):
    main_wrapper(main, argv)
