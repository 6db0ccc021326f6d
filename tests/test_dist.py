"""Scans on Dask (bench/dist.py): a scheduler and two workers as separate
processes with separate work directories on this machine (two machines in
miniature), on the fake tree with 24 more C files. The results must be
byte-identical to the local scan's, also when a worker is killed mid-scan."""
import json
import shutil
import signal
import socket
import subprocess
import tarfile
import time

import pytest

from test_faults import FAKE, REPO, fake, mk  # noqa: F401

from bench.measure import dist
from kbuild import settings
from kbuild.util import KexpandError

N_EXTRA = 24


@pytest.fixture
def many(fake):
    """The fake tree plus N_EXTRA C files that use min3/max."""
    base, env = fake
    src = base / "src" / "linux-source-6.1"
    shutil.copytree(FAKE, src)
    for i in range(N_EXTRA):
        d = src / "lib" / f"gen{i // 8}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:02}.c").write_text(
            "#include <linux/minmax.h>\n" + "".join(
                f"int g{j}(int a, int b) {{ return min3(a, b, {i * j}) + max(a, {j}); }}\n"
                for j in range(i + 1)))
    with tarfile.open(env["KEXPAND_TARBALL"], "w:xz") as t:
        t.add(src, arcname="linux-source-6.1")
    return base, env


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """`dask scheduler` and `dask worker`s, as the README starts them."""

    def __init__(self, base, env, n=2, worker_env=None):
        self.addr = f"tcp://127.0.0.1:{free_port()}"
        self.logs = base / "dask-logs"
        self.logs.mkdir()
        host, port = self.addr[6:].rsplit(":", 1)
        self.sched = self._start("scheduler", ["dask", "scheduler", "--host", host,
                                               "--port", port, "--no-dashboard"], env)
        self.workers = []
        for i in range(n):
            wenv = dict(env, KEXPAND_WORK=str(base / f"worker{i}"),
                        PYTHONPATH=f"{REPO}:{REPO / 'kernel-build'}", **(worker_env or {}))
            self.workers.append(self._start(
                f"worker{i}", ["dask", "worker", self.addr, "--nthreads", "1",
                               "--no-nanny", "--no-dashboard", "--name", f"w{i}"], wenv))
        from distributed import Client
        with Client(self.addr, timeout="30s") as c:
            c.wait_for_workers(n, timeout=60)

    def _start(self, name, argv, env):
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                stderr=open(self.logs / f"{name}.log", "w"),
                                start_new_session=True)

    def stop(self):
        for p in self.workers + [self.sched]:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.workers + [self.sched]:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def scan(env, base, name, **extra):
    e = dict(env, KEXPAND_RESULTS=str(base / f"results-{name}"),
             KEXPAND_WORK=str(base / f"work-{name}"))
    p = mk(e, "scan", CASE="fake", A="before", B="after", timeout=600, **extra)
    assert p.returncode == 0, p.stderr[-3000:]
    res = base / f"results-{name}"
    files, recs = scanned(res)
    for r in recs:
        hosts = {v["host"] for v in r["files"].values()}
        assert hosts and all(hosts)       # every file names who measured it
    return (res / "scan/before..after/ranking.csv").read_bytes(), files, p


def scanned(res):
    """The measured figures of each commit's scan record under `res` (not
    the seconds or hosts, which differ from run to run), and the records."""
    files, recs = {}, []
    for rec in sorted(res.glob("*/scan-gcc.json")):
        r = json.loads(rec.read_text())
        recs.append(r)
        files[r["commit"]] = {f: {k: v[k] for k in ("status", "bytes", "lines",
                                                    "longest_line_bytes", "hot")}
                              for f, v in r["files"].items()}
    return files, recs


def test_dask_workers_give_the_local_results(many):
    base, env = many
    local_rank, local_files, _ = scan(env, base, "local")
    assert len(local_rank.splitlines()) == 1 + 2 + N_EXTRA
    cl = Cluster(base, env)
    try:
        rank, files, p = scan(env, base, "dask", DASK_SCHEDULER=cl.addr)
    finally:
        cl.stop()
    assert rank == local_rank and files == local_files
    assert "2 Dask workers" in p.stderr
    # each worker prepared its own tree from the tarball and cases/
    for i in range(2):
        assert (base / f"worker{i}/tree/.git").is_dir()


def test_a_worker_killed_mid_scan_loses_nothing(many):
    base, env = many
    local_rank, local_files, _ = scan(env, base, "local")
    # slow builds (0.2 s per object), so the kill lands inside a chunk
    cl = Cluster(base, env, worker_env={"FAKE_SLOW": "0.2"})
    victim = cl.workers[1]
    try:
        e = dict(env, KEXPAND_RESULTS=str(base / "results-dask"),
                 KEXPAND_WORK=str(base / "work-dask"))
        run = subprocess.Popen(
            ["make", "-s", "-C", str(REPO), "scan", "CASE=fake", "A=before", "B=after",
             f"DASK_SCHEDULER={cl.addr}"], env=e, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        # worker 1 has started building: some object of its first chunk exists
        while not list((base / "worker1").glob("tree/kb-*/lib/gen*/*.o")):
            assert time.monotonic() < deadline and run.poll() is None, run.stderr
            time.sleep(0.1)
        victim.send_signal(signal.SIGKILL)
        out, err = run.communicate(timeout=600)
        assert run.returncode == 0, err[-3000:]
        assert victim.poll() == -signal.SIGKILL
    finally:
        cl.stop()
    res = base / "results-dask"
    assert (res / "scan/before..after/ranking.csv").read_bytes() == local_rank
    files, recs = scanned(res)
    by = {v["worker"] for r in recs for v in r["files"].values()}
    assert files == local_files
    # the survivor measured what the killed worker was doing
    assert "w0" in by


def test_unreachable_scheduler_is_exit_5_naming_it(fake):
    base, env = fake
    addr = f"tcp://127.0.0.1:{free_port()}"
    p = mk(env, "scan", CASE="fake", A="before", B="after", DASK_SCHEDULER=addr)
    assert "Error 5" in p.stderr and addr in p.stderr and "Traceback" not in p.stderr
    p = mk(env, "scan", CASE="fake", A="before", B="after", DASK_SCHEDULER="8786")
    assert "Error 2" in p.stderr and "DASK_SCHEDULER='8786'" in p.stderr


def test_a_track_on_dask_workers_gives_the_local_results(fake, tmp_path):
    """make track with DASK_SCHEDULER=: each commit measured by a worker
    in its own work directory (its own clone of the user's tree): the same
    values (bytes and longest lines exactly, -c instructions within ten per
    million) and the same interesting changes as a local run. (Counts are
    hermetic but for the length of the work directory's path, which gcc's
    realpath() of its include dirs sees: the local run's has the workers'
    length; and gcc's own random seed, its -frandom-seed default, which
    moves a count by a few tens of instructions now and then.)"""
    from test_track import COMP, SETUP, history
    base, env = fake
    user = tmp_path / "user"
    g, ids = history(user)

    def run(name, **extra):
        e = dict(env, KEXPAND_RESULTS=str(base / f"res-{name}"),
                 KEXPAND_WORK=str(base / f"work-{name}"[:7]))   # as long as "worker0"
        p = mk(e, "track", CASE="fake", KERNEL=user, RANGE=f"{ids[0]}..HEAD", CC="gcc",
               FILES=f"{SETUP} {COMP}", NAME="t", NO_MACROS=1, timeout=900, **extra)
        assert p.returncode == 0, p.stderr[-3000:]
        [d] = (base / f"res-{name}/track").iterdir()
        rec = json.loads((d / "track.json").read_text())
        return rec, p

    local, _ = run("local")
    cl = Cluster(base, env)
    try:
        remote, p = run("dask", DASK_SCHEDULER=cl.addr)
    finally:
        cl.stop()
    assert "Dask workers" in p.stderr
    def exact(rec):
        return [{f: {k: v for k, v in x.items() if k != "instructions_c"}
                 for f, x in c["values"]["gcc"].items()} for c in rec["commits"]]
    assert exact(remote) == exact(local)
    for cr, cl in zip(remote["commits"], local["commits"]):
        for f in cl["values"]["gcc"]:
            a, b = cl["values"]["gcc"][f]["instructions_c"], cr["values"]["gcc"][f]["instructions_c"]
            assert a and b and abs(a - b) <= 1e-5 * a, (f, a, b)
    same = lambda xs: [(x["commit"], x["file"], x["metric"], x["before"], x["after"])  # noqa: E731
                       for x in xs if x["metric"] != "instructions_c"]
    assert same(remote["interesting"]) == same(local["interesting"])
    hosts = {c["setup"]["host"] for c in remote["commits"]}
    assert hosts and all(hosts)
    for i in range(2):            # each worker made its own clone of the user's tree
        assert list((base / f"worker{i}/trees").glob("*/.git"))


def tls_files(d):
    """A CA, and a certificate and key signed by it for the scheduler and
    for the client (openssl), in `d`."""
    def ossl(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
         "ca.pem", "-days", "2", "-subj", "/CN=kexpand-test-ca")
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for n in ("sched", "client"):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{n}.key", "-out",
             f"{n}.csr", "-subj", f"/CN={n}")
        ossl("x509", "-req", "-in", f"{n}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{n}.pem", "-days", "2", "-extfile", "ext")


def test_a_tls_scheduler_takes_the_certificates_and_refuses_none(tmp_path):
    tls_files(tmp_path)
    port = free_port()
    sched = subprocess.Popen(
        ["dask", "scheduler", "--protocol", "tls", "--host", "127.0.0.1", "--port",
         str(port), "--no-dashboard", "--tls-ca-file", "ca.pem", "--tls-cert",
         "sched.pem", "--tls-key", "sched.key"], cwd=tmp_path, stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "sched.log", "w"), start_new_session=True)
    try:
        t0 = time.monotonic()
        while True:             # until the scheduler listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert sched.poll() is None, (tmp_path / "sched.log").read_text()
            assert time.monotonic() - t0 < 60
            time.sleep(0.05)
        env = {"KEXPAND_WORK": str(tmp_path / "w"), "KEXPAND_RESULTS": str(tmp_path / "r"),
               "DASK_SCHEDULER": f"tls://127.0.0.1:{port}"}
        req = settings.from_env("scan", env=dict(
            env, DASK_TLS_CA=str(tmp_path / "ca.pem"),
            DASK_TLS_CERT=str(tmp_path / "client.pem"),
            DASK_TLS_KEY=str(tmp_path / "client.key")))
        with dist.client(req) as c:
            assert c.scheduler_info()["address"] == f"tls://127.0.0.1:{port}"
        # without certificates: exit 2 naming the address and the settings
        req = settings.from_env("scan", env=env)
        with pytest.raises(KexpandError) as e:
            with dist.client(req):
                pass
        assert e.value.exit_code == 2 and f"tls://127.0.0.1:{port}" in str(e.value)
        assert "DASK_TLS_CERT=" in str(e.value)
    finally:
        sched.send_signal(signal.SIGTERM)
        sched.wait(timeout=30)
