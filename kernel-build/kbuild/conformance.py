"""Conformance matrix: small C snippets compiled with a point's exact Kbuild
flags against its headers; each is accepted, warned about or rejected.

Snippets live in cases/<case>/conformance/*.c. Their leading comment holds
the question and, optionally, the seeds' claims:
    expect <point>: accepted|warned|rejected -- <where the claim comes from>
"""
import hashlib
import re
from pathlib import Path

from . import kcmd, sandbox
from .proc import run
from .util import KexpandError

EXPECT = re.compile(r"expect ([\w.+-]+): (accepted|warned|rejected)(?: -- (.*))?")


def load_snippets(case_dir):
    out = []
    for p in sorted(Path(case_dir, "conformance").glob("*.c")):
        text = p.read_text()
        head = text.split("*/", 1)[0]
        title = head.lstrip("/* ").splitlines()[0].strip()
        expects = {m.group(1): {"verdict": m.group(2), "claim": (m.group(3) or "").strip()}
                   for m in EXPECT.finditer(head)}
        out.append({"name": p.stem, "path": p, "title": title,
                    "expect": expects,
                    "hash": hashlib.sha256(text.encode()).hexdigest()[:16]})
    return out


def template_command(bdir, files):
    """A compile command of this build dir to borrow the flags from."""
    for f in files:
        try:
            return kcmd.compile_command(bdir, f)
        except KexpandError:
            continue
    return None


def compile_snippet(bdir, template, snippet_path):
    flags, _src = kcmd.strip_output(template)
    flags = [t for t in flags if not t.startswith(("-DKBUILD_", "-D__KBUILD_"))]
    snippet_path = Path(snippet_path).resolve()
    if not snippet_path.is_file():
        raise KexpandError(f"conformance snippet {snippet_path} missing", "infra")
    cmd = flags + ["-c", "-o", "/dev/null", str(snippet_path)]
    p = run(sandbox.wrap(cmd, bdir, ro=[snippet_path]), cwd=bdir, check=False)
    text = p.stdout or ""
    if "fatal error:" in text and p.returncode != 0 and "No such file" in text:
        raise KexpandError(f"compiling {snippet_path.name}: {text.strip()[-300:]}",
                           "infra")
    diag = [l for l in text.splitlines() if re.search(r"\b(error|warning):", l)]
    if p.returncode != 0:
        verdict = "rejected"
        first = next((l for l in diag if "error:" in l), diag[0] if diag else text[-200:])
    elif diag:
        verdict = "warned"
        first = diag[0]
    else:
        verdict, first = "accepted", ""
    first = re.sub(r"^\S+?:\d+:\d+: ", "", first.strip())
    return {"verdict": verdict, "message": first[:300], "exit": p.returncode}
