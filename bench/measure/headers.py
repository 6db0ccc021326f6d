"""Bytes by header (#31): one file's include graph from `kx-analyze -H`, and
the sums over a build.

Input: the analysis JSON of one C file with the fields -H adds,
    "headers": [[NAME, OWN_BYTES], ...]         (index 0: the main file)
    "unattributed_bytes": N
    "includes": [[INCLUDER, LINE, HEADER], ...] (indices into headers)
and its "bytes".  Every byte of the preprocessed output is in exactly one
file's OWN_BYTES or in unattributed_bytes.

Per file (`tu_stats`), on the graph whose nodes are the files and whose
edges are the include entries (lines ignored for reachability), rooted at
the main file:
  own       the file's bytes in the output (exact, from the line markers);
  expanded  own bytes of the header and of every node reachable from it,
            each once;
  added     own bytes of every node the header dominates (itself included):
            what the file loses if the header were included nowhere;
  per include entry (includer, line, header): "sole" when the file reaches
  the header through that entry only, and then the bytes it gets from it
  (= added of the header; otherwise dropping the entry loses nothing).
Over a build (`aggregate`): per header, occurrences (files whose graph has
it) and the sums of own, expanded and added; per entry "includer:line ->
header", the files that get the header only through it, the bytes they get
from it, and the files where it appears at all.

Chromium's tools/clang/scripts/analyze_includes.py (include-analysis.html)
computes the same quantities, and kexpand follows its definitions:
prevalence = our occurrences (roots whose graph has the file); tsizes
(transitive size) = our expanded; asizes (added size) = the sum over roots
of the sizes of the nodes a file dominates in the root's graph, exactly our
added; esizes (edge sizes) = the added size of a pseudo node that splits
the edge src -> (src,dst) -> dst, i.e. nonzero only when every path to dst
goes through that edge, which is our "sole" entry and its bytes.
Where kexpand differs:
- Sizes are the bytes each file contributes to the preprocessed output of
  that translation unit (exact, from its line markers: what survived #if,
  macro expansion counted where it lands), not the source files' sizes on
  disk; so a header's own bytes differ from file to file.
- The graph is each TU's own graph, not the union over the build of every
  file's includes (Chromium's graph: a header includes the union of what it
  included under any -D); so expanded is computed and summed per file
  (Chromium's tsizes is one value per header, from the union graph).
- Edges are include entries with their line: two #include lines of one
  header in one includer are two entries, neither sole (Chromium's edges
  are (src, dst) pairs, which would call it one dominating edge).
- Pseudo files `<built-in>`, `<command-line>`, `<command line>` are merged
  into the root (their bytes are the root's, their includes the root's);
  an entry's name keeps the pseudo includer ("<command-line>:0 -> x.h"), so
  the -include files of every C file add up in one row.
- Dominators: Cooper-Harvey-Kennedy iteration on reverse postorder
  (Chromium: Lengauer-Tarjan, earlier a fixed point of dominator sets).
- "Sole": the spec's "the TU's only include entry of h", refined for
  cycles (a trace header reached again through define_trace.h): an entry
  is sole when every other entry of h comes from a file reachable only
  through h, or from a file the root does not reach.  It is then exactly
  Chromium's dominating edge, and dropping the entry loses its bytes.
Names are normalized (`normalize`); two names of one file after that are
one node.  Unreachable nodes (should not happen) count in their own bytes
and their own expanded bytes only: no other node reaches them, they
dominate nothing (added 0).

Pure computation, standard library only, no I/O."""
from collections import defaultdict

RECORD_VERSION = 1
STATS = ("occurrences", "own", "expanded", "added")
EDGE_STATS = ("files_sole", "bytes_sole", "files")


def normalize(name):
    """A marker's file name -> the name reports use: a leading "../" (the
    build dir is a child of the tree) or "./" (a file generated in the build
    dir) is stripped, once; absolute names and pseudo names stay."""
    if name.startswith("../"):
        return name[3:]
    if name.startswith("./"):
        return name[2:]
    return name


def is_pseudo(name):
    """`<built-in>`, `<command-line>`, clang's `<command line>`: the
    compiler's own text, counted as the main file's."""
    return len(name) >= 2 and name[0] == "<" and name[-1] == ">"


def edge_key(includer, line, header):
    """The build-wide name of an include entry."""
    return f"{includer}:{line} -> {header}"


# ---------------------------------------------------------------- one TU

def _graph(analysis):
    """The TU's graph from -H fields: (names, own, entries, pseudo) with
    names[0] the root, own parallel to names, entries distinct
    (includer node, line, header node, includer's name in the key), pseudo
    the pseudo names merged into the root."""
    if "headers" not in analysis:
        raise ValueError("analysis without 'headers' (kx-analyze without -H)")
    files = analysis["headers"]
    names, own, node_of, pseudo = [], [], {}, []
    index, via_of, enter = [], [], []    # per analysis index
    for i, (name, nbytes) in enumerate(files):
        n = normalize(name)
        if i > 0 and is_pseudo(n):
            node = 0
            if n not in pseudo:
                pseudo.append(n)
        else:
            node = node_of.get(n)
            if node is None:
                node = node_of[n] = len(names)
                names.append(n)
                own.append(0)
        index.append(node)
        via_of.append(n if node == 0 and i > 0 and is_pseudo(n) else None)
        enter.append(via_of[-1] is None)   # entering a pseudo file: no include
        own[node] += nbytes
    entries, seen = [], set()
    for inc, line, hdr in analysis.get("includes", ()):
        if not enter[hdr]:
            continue
        u, h = index[inc], index[hdr]
        via = via_of[inc] or names[u]
        key = (via, line, h)
        if key not in seen:
            seen.add(key)
            entries.append((u, line, h, via))
    return names, own, entries, pseudo


def _rpo(n, succ, root=0):
    """Reverse postorder of the nodes reachable from root (iterative DFS)."""
    post, seen = [], [False] * n
    seen[root] = True
    stack = [(root, iter(succ[root]))]
    while stack:
        v, it = stack[-1]
        for w in it:
            if not seen[w]:
                seen[w] = True
                stack.append((w, iter(succ[w])))
                break
        else:
            stack.pop()
            post.append(v)
    post.reverse()
    return post


def idoms(n, succ, pred, root=0):
    """Immediate dominators (Cooper, Harvey, Kennedy, "A Simple, Fast
    Dominance Algorithm", 2001): (idom, rpo), idom[v] None for nodes the
    root does not reach, idom[root] == root."""
    rpo = _rpo(n, succ, root)
    order = [-1] * n
    for i, v in enumerate(rpo):
        order[v] = i
    idom = [None] * n
    idom[root] = root
    changed = True
    while changed:
        changed = False
        for v in rpo[1:]:
            new = None
            for p in pred[v]:
                if idom[p] is None:
                    continue         # unreachable, or not processed yet
                if new is None:
                    new = p
                    continue
                a, b = p, new        # intersect: walk up to the common one
                while a != b:
                    while order[a] > order[b]:
                        a = idom[a]
                    while order[b] > order[a]:
                        b = idom[b]
                new = a
            if idom[v] != new:
                idom[v] = new
                changed = True
    return idom, rpo


def _sccs(n, succ):
    """Strongly connected components (Tarjan, iterative), sinks first:
    (comp of each node, list of components' node lists)."""
    index, low, comp = [-1] * n, [0] * n, [-1] * n
    onstack, stack, comps, counter = [False] * n, [], [], 0
    for s in range(n):
        if index[s] >= 0:
            continue
        work = [(s, iter(succ[s]))]
        index[s] = low[s] = counter
        counter += 1
        stack.append(s)
        onstack[s] = True
        while work:
            v, it = work[-1]
            for w in it:
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    onstack[w] = True
                    work.append((w, iter(succ[w])))
                    break
                if onstack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] == index[v]:
                    members = []
                    while True:
                        w = stack.pop()
                        onstack[w] = False
                        comp[w] = len(comps)
                        members.append(w)
                        if w == v:
                            break
                    comps.append(members)
    return comp, comps


def _expanded(n, succ, own):
    """Own bytes of each node plus those of every node it reaches, each once:
    reach sets as bit sets over the components (sinks first), their weight
    as sum over bit planes of the weights: 2**j * popcount(reach & plane_j)."""
    comp, comps = _sccs(n, succ)
    reach = [0] * len(comps)
    for c, members in enumerate(comps):      # successors' comps come first
        r = 0
        for v in members:
            r |= 1 << v
            for w in succ[v]:
                if comp[w] != c:
                    r |= reach[comp[w]]
        reach[c] = r
    planes = []
    for j in range(max(own, default=0).bit_length()):
        m = 0
        for v in range(n):
            if own[v] >> j & 1:
                m |= 1 << v
        planes.append((j, m))
    size = [sum(((r & m).bit_count() << j) for j, m in planes) for r in reach]
    return [size[comp[v]] for v in range(n)]


def tu_stats(analysis):
    """One file's -H analysis -> {"root": name, "bytes", "unattributed",
    "root_own": own bytes of the main file and the pseudo files,
    "reached": bytes of every file the root reaches (== bytes - unattributed
    when all are reached), "headers": {name: {"own", "expanded", "added"}}
    (every node but the root), "edges": [{"includer", "line", "header",
    "sole", "bytes"}] (bytes: the header's added bytes when sole, else 0)}."""
    names, own, entries, pseudo = _graph(analysis)
    n = len(names)
    total = analysis.get("bytes", sum(own) + analysis.get("unattributed_bytes", 0))
    out = {"root": names[0] if n else None, "bytes": total,
           "unattributed": analysis.get("unattributed_bytes", 0),
           "root_own": own[0] if n else 0, "reached": 0,
           "headers": {}, "edges": [], "pseudo": pseudo}
    if not n:
        return out
    core = _core(names, own, entries)
    expanded, added, sole = core
    out["reached"] = added[0]
    out["headers"] = {names[v]: {"own": own[v], "expanded": expanded[v],
                                 "added": added[v]} for v in range(1, n)}
    out["edges"] = [{"includer": via, "line": line, "header": names[h],
                     "sole": s, "bytes": added[h] if s else 0}
                    for (u, line, h, via), s in zip(entries, sole)]
    return out


def _core(names, own, entries):
    """(expanded, added, sole per entry) of the graph."""
    n = len(names)
    succ = [[] for _ in range(n)]
    pred = [[] for _ in range(n)]
    for u, _line, h, _via in entries:
        succ[u].append(h)
        pred[h].append(u)
    idom, rpo = idoms(n, succ, pred)
    added = [0] * n
    for v in rpo:
        added[v] = own[v]
    for v in reversed(rpo[1:]):              # children before their idom
        added[idom[v]] += added[v]
    # h dominates v <=> v in h's subtree of the dominator tree: intervals
    kids = [[] for _ in range(n)]
    for v in rpo[1:]:
        kids[idom[v]].append(v)
    pre, last, t, stack = [0] * n, [0] * n, 0, [(0, False)]
    while stack:
        v, done = stack.pop()
        if done:
            last[v] = t - 1
            continue
        pre[v] = t
        t += 1
        stack.append((v, True))
        stack.extend((k, False) for k in kids[v])

    def dominated(v, h):                     # both reachable
        return pre[h] <= pre[v] <= last[h]

    # entries of h from reached files not dominated by h: the ways in
    ways = defaultdict(int)
    for u, _line, h, _via in entries:
        if idom[u] is not None and h != 0 and not dominated(u, h):
            ways[h] += 1
    sole = [idom[u] is not None and h != 0 and not dominated(u, h)
            and ways[h] == 1 for u, _line, h, _via in entries]
    return _expanded(n, succ, own), added, sole


# ------------------------------------------------------- compact record

def record(analysis):
    """The compact, JSON-serializable per-file record a scan stores:
    {"v": 1, "bytes", "unattributed",
     "names": [root, header, ..., pseudo...]   (each name once),
     "own", "expanded", "added": lists parallel to the nodes, names[0:len(own)]
        (node 0: the root; expanded/added of the root: the bytes it reaches),
     "e_from", "e_line", "e_to", "e_sole": the include entries, parallel
        lists; e_from/e_to index names (e_from may index a pseudo name after
        the nodes: the includer in the entry's name, merged into the root),
        e_sole: the bytes the entry brings when sole, else null}."""
    names, own, entries, pseudo = _graph(analysis)
    nodes = list(names)
    rec = {"v": RECORD_VERSION,
           "bytes": analysis.get("bytes", sum(own) + analysis.get("unattributed_bytes", 0)),
           "unattributed": analysis.get("unattributed_bytes", 0),
           "names": nodes + pseudo, "own": own, "expanded": [], "added": [],
           "e_from": [], "e_line": [], "e_to": [], "e_sole": []}
    if not names:
        return rec
    expanded, added, sole = _core(names, own, entries)
    rec["expanded"], rec["added"] = expanded, added
    at = {name: i for i, name in enumerate(rec["names"])}
    for (u, line, h, via), s in zip(entries, sole):
        rec["e_from"].append(at[via] if via in pseudo else u)
        rec["e_line"].append(line)
        rec["e_to"].append(h)
        rec["e_sole"].append(added[h] if s else None)
    return rec


def record_root(rec):
    """The record's main file, or None for an empty file."""
    return rec["names"][0] if rec["own"] else None


def record_headers(rec):
    """{header: (own, expanded, added)} of one record (root excluded)."""
    names, own, exp, add = rec["names"], rec["own"], rec["expanded"], rec["added"]
    return {names[v]: (own[v], exp[v], add[v]) for v in range(1, len(own))}


def own_bytes(rec, header):
    """Own bytes of a header in this file (0 if the file does not have it);
    header in report form (normalize it first)."""
    names = rec["names"]
    for v in range(1, len(rec["own"])):
        if names[v] == header:
            return rec["own"][v]
    return 0


def record_edges(rec):
    """The record's include entries: [(includer, line, header, sole_bytes or
    None)], names in report form."""
    names = rec["names"]
    return [(names[u], line, names[h], s) for u, line, h, s in
            zip(rec["e_from"], rec["e_line"], rec["e_to"], rec["e_sole"])]
