"""Kbuild's command files (<bdir>/<dir>/.<name>.o.cmd): the exact compile
command of an object, the files it was made from, and that command turned
into preprocess-only or scratch-object form."""
import os
import re
import shlex
from pathlib import Path

from .util import KexpandError


# a command of plain words and quoted parts with nothing for the shell to
# interpret inside (no backslash, $ or backquote) is split here, in one
# pass: shlex costs 1.3 ms a Kbuild command (4 s for a defconfig's 2,800).
# Whitespace is shlex's (and the shell's): space, tab, CR, LF, not \s
_PIECE = re.compile(r"""([ \t\r\n]+)|"([^"\\$`]*)"|'([^']*)'|([^ \t\r\n'"\\$`]+)""")


def split(command):
    """shlex.split(command), faster for the commands Kbuild writes."""
    words, word, pos = [], None, 0
    for m in _PIECE.finditer(command):
        if m.start() != pos:
            return shlex.split(command)     # something for the shell: shlex
        pos = m.end()
        if m.group(1) is not None:
            if word is not None:
                words.append(word)
            word = None
        else:
            word = (word or "") + next(g for g in m.groups()[1:] if g is not None)
    if pos != len(command):
        return shlex.split(command)
    return words + ([word] if word is not None else [])


def obj_of(src):
    if not src.endswith(".c"):
        raise KexpandError(f"focus file {src} is not a .c file")
    return src[:-2] + ".o"


def cmd_file(bdir, src):
    """Kbuild's command file of src's object: <bdir>/<dir>/.<name>.o.cmd."""
    obj = Path(obj_of(src))
    return Path(bdir) / obj.parent / f".{obj.name}.cmd"


CMD_LINE = re.compile(r"^(?:saved)?cmd_\S+ := (.*)$", re.M)


def dependencies(cmdfile):
    """The files a Kbuild object was made from, from its .cmd file: the
    source (`source_<obj> := ...`) and the `deps_<obj> := \\` list, paths
    relative to the build dir (`$(wildcard X)` entries as X). fixdep drops
    include/generated/autoconf.h from the list (the config's options stand
    in as include/config/<OPTION>, empty files): whoever hashes the inputs
    must add autoconf.h. None when the file has no dependency list."""
    text = Path(cmdfile).read_text(errors="replace")
    src = re.search(r"^source_\S+ := (\S+)$", text, re.M)
    m = re.search(r"^deps_\S+ := \\\n((?:.*\\\n)*)", text, re.M)
    if not src or not m:
        return None
    out = [src.group(1)]
    for line in m.group(1).splitlines():
        item = line.strip().rstrip("\\").strip()
        w = re.fullmatch(r"\$\(wildcard (\S+)\)", item)
        if w:
            out.append(w.group(1))
        elif item:
            out.append(item)
    return out


def compile_command(bdir, src):
    """The exact compile command Kbuild ran for `src`, as an argv list,
    from <bdir>/<dir>/.<name>.o.cmd. Kbuild writes `cmd_<target> := ...`
    up to v6.2 and `savedcmd_<target> := ...` since v6.3 (commit
    92215e7a801d); both are read. Post-steps that Kbuild chains with ';'
    (objtool) are dropped."""
    obj = obj_of(src)
    cmdfile = cmd_file(bdir, src)
    if not cmdfile.exists():
        raise KexpandError(f"{cmdfile} missing: {src} was not compiled by this "
                           "config (is it in the build?)", "build")
    text = cmdfile.read_text(errors="replace")
    m = CMD_LINE.search(text)
    if not m:
        raise KexpandError(f"{cmdfile}: no 'cmd_{obj} := ...' or 'savedcmd_{obj} "
                           ":= ...' line; kexpand cannot read this Kbuild's "
                           "command files (please report it)", "infra")
    try:
        # ';' separates Kbuild's post-steps even when glued to a word
        lex = shlex.shlex(m.group(1), posix=True, punctuation_chars=";")
        lex.whitespace_split = True
        toks = list(lex)
    except ValueError as e:
        raise KexpandError(f"{cmdfile}: cannot split the command ({e})", "infra")
    argv = []
    for tok in toks:
        if tok == ";":
            break
        argv.append(tok)
    return unwrapped(argv)


WRAPPER = "kx-cc"


def unwrapped(argv):
    """A command of a scan dir's without the wrapper in front (kexpand's
    kx-cc, and its --host): the compiler's own command, as a full build
    runs it."""
    if argv and os.path.basename(argv[0]) == WRAPPER:
        argv = argv[2:] if argv[1:2] == ["--host"] else argv[1:]
    return argv


def include_dirs(argv):
    """The -I directories of a compile command, as written (`-Idir` or
    `-I dir`), in order."""
    return [a[2:] if len(a) > 2 else argv[k + 1] for k, a in enumerate(argv)
            if a.startswith("-I") and (len(a) > 2 or k + 1 < len(argv))]


def output_file(argv):
    """The -o file of a compile command (normalized), or None."""
    for k, tok in enumerate(argv[:-1]):
        if tok == "-o":
            return os.path.normpath(argv[k + 1])
    return None


def strip_output(argv):
    """argv without the dependency-file option, -c/-E/-S and -o X;
    returns (flags, source)."""
    out, skip = [], False
    for tok in argv:
        if skip:
            skip = False
            continue
        if tok.startswith("-Wp,-MMD") or tok.startswith("-Wp,-MD"):
            continue
        if tok in ("-c", "-E", "-S"):
            continue
        if tok == "-o":
            skip = True
            continue
        out.append(tok)
    return out[:-1], out[-1]


def preprocess_command(argv, output="-"):
    """The compile command as preprocess-only, to stdout by default."""
    flags, src = strip_output(argv)
    return flags + ["-E", "-o", output, src]


def object_command(argv, obj):
    """The compile command writing a scratch object (for timing -c)."""
    flags, src = strip_output(argv)
    return flags + ["-c", "-o", obj, src]
