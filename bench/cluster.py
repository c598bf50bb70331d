"""Scale-out: one mixed bulk job on a local Dask cluster, against the hand split and one process.

    python -m bench.cluster [--count 10000] [--runs 3] [--workers 2] [--report DIR] [--compare TREE] [--work DIR]

Four hosts (nginx over HTTP, vsftpd over FTP, two in-repo Gopher servers),
`--count` URLs spread evenly over them, 4 KiB each.  Three ways to run it:

- one process: `fetch -i ALL -d OUT -j 8 --per-host 8`;
- hand split: two such processes side by side, one per half of the hosts
  (HTTP + Gopher 1, FTP + Gopher 2): the ideal a user gets by sharding by hand;
- cluster: `fetch -i ALL -d OUT -j 8 --per-host 8 --cluster local:2` (starting
  the local cluster is part of its time).

Two more rows run 4 URLs (one per host) in one process and on the
cluster: their difference is the cluster's fixed cost (importing dask,
starting and stopping the workers), reported beside the per-URL overhead
that remains once it is taken off.

`--compare TREE` adds a row, the cluster run of another checkout
(`PYTHONPATH=TREE`, e.g. `git worktree add /tmp/before HEAD~3`), in the
same alternated rounds: before/after figures from one sitting.

Output (and the URL lists) go to tmpfs (/dev/shm), as in the other bulk
benches: on this machine /tmp is ext4 on a virtual disk, where the same
one-process run's system time varied 0.84 -> 4.3 s (wall 2.66 -> 6.45 s)
from run to run, so the rows measured the disk's noise, not fetcher; on
tmpfs the same run is steady (2.38-2.49 s).  `--work DIR` puts them in a
directory of DIR instead (e.g. a disk, to see what it costs).

The per-URL overhead of the cluster path is (cluster - hand split) / count,
in wall time and in CPU seconds (user + system of the process tree: the
driver and its forked workers; the steadier figure on a shared machine).
On a 2-core machine the servers share the cores with the clients.  vsftpd
needs root.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import Figure, fetch_bulk_command, markdown, measure, write_report
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import start_vsftpd, vsftpd_missing
from tests.interop.nginx_server import find_nginx, run_nginx
from tests.interop.processes import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--report", type=Path)
    parser.add_argument("--compare", type=Path, metavar="TREE", help="also run the cluster with PYTHONPATH=TREE")
    parser.add_argument("--layout", choices=("flat", "tree"), default="flat",
                        help="every run's --layout (tree: a directory per host, none shared by workers)")  # fmt: skip
    parser.add_argument("--work", type=Path, metavar="DIR",
                        help="write URL lists and output under DIR (default: tmpfs, /dev/shm)")  # fmt: skip
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None or vsftpd_missing():
        sys.exit("needs nginx and vsftpd (apt-get install nginx-light vsftpd) and root")
    content = public_tempdir("fetcher-bench-cluster-")
    shm = Path("/dev/shm")
    parent = args.work if args.work is not None else shm if shm.is_dir() else None
    work = Path(tempfile.mkdtemp(prefix="fetcher-bench-cluster-out-", dir=parent))
    (content / "files").mkdir(mode=0o755)
    names = 2000
    for index in range(names):
        (content / "files" / f"f{index:05d}.bin").write_bytes(os.urandom(4096))
    gopher_ports = [free_port()]
    while len(gopher_ports) < 2:  # free_port() may hand out the same free port twice
        port = free_port()
        if port not in gopher_ports:
            gopher_ports.append(port)
    gophers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.servers.gopher", "--port", str(port), "--items", str(names)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
        )
        for port in gopher_ports
    ]
    ftp = start_vsftpd(content)
    shown = ", --layout tree" if args.layout == "tree" else ""
    title = f"cluster ({args.count} URLs over 4 hosts: http, ftp, 2 x gopher{shown})"
    figure = Figure(title, "cluster <= 1.10 x hand split")
    try:
        for port in gopher_ports:
            wait_for_port(port)
        with run_nginx(content, nginx=nginx) as web:
            os.environ.update({"http_proxy": "", "no_proxy": "*"})
            hosts = [
                lambda i: f"{web.url('').rstrip('/')}/files/f{i % names:05d}.bin",
                lambda i: f"{gopher_url(gopher_ports[0])}/0/item/{i % names:05d}.txt",
                lambda i: f"{ftp.url}/files/f{i % names:05d}.bin",
                lambda i: f"{gopher_url(gopher_ports[1])}/0/item/{i % names:05d}.txt",
            ]
            urls = [hosts[i % 4](i // 4) for i in range(args.count)]
            halves = [[u for i, u in enumerate(urls) if i % 4 < 2], [u for i, u in enumerate(urls) if i % 4 >= 2]]
            every = work / "all.txt"
            every.write_text("\n".join(urls) + "\n")
            four = work / "four.txt"
            four.write_text("\n".join(urls[:4]) + "\n")
            parts = [work / "half0.txt", work / "half1.txt"]
            for path, half in zip(parts, halves, strict=True):
                path.write_text("\n".join(half) + "\n")
            out = work / "out"
            layout = ["--layout", args.layout]
            one = [*fetch_bulk_command(every, out / "one", args.jobs), *layout]
            # Both halves at once; the exit status is the first failure's (a bare `wait` would say 0).
            split = "; ".join(
                f"{shlex.join([*fetch_bulk_command(part, out / f'half{n}', args.jobs), *layout])} & p{n}=$!"
                for n, part in enumerate(parts)
            )
            split += "; wait $p0; a=$?; wait $p1; b=$?; [ $a -eq 0 ] && [ $b -eq 0 ]"
            commands = {
                "one process": one,
                "hand split (2 processes)": ["sh", "-c", split],
                f"cluster local:{args.workers}": [
                    *fetch_bulk_command(every, out / "cluster", args.jobs),
                    *layout,
                    "--cluster",
                    f"local:{args.workers}",
                ],
                "one process, 4 URLs": [*fetch_bulk_command(four, out / "one4", args.jobs), *layout],
                f"cluster local:{args.workers}, 4 URLs": [
                    *fetch_bulk_command(four, out / "cluster4", args.jobs),
                    *layout,
                    "--cluster",
                    f"local:{args.workers}",
                ],
            }
            # Every command runs in `work`, with PYTHONPATH naming the tree it runs: `python -m`
            # puts its working directory first on sys.path, so a run from a checkout would
            # run that checkout whatever PYTHONPATH says.
            environments = {name: {"PYTHONPATH": str(ROOT)} for name in commands}
            if args.compare is not None:
                compared = f"cluster local:{args.workers} ({args.compare})"
                commands[compared] = commands[f"cluster local:{args.workers}"]
                environments[compared] = {"PYTHONPATH": str(args.compare.resolve())}
                commands[f"{compared}, 4 URLs"] = commands[f"cluster local:{args.workers}, 4 URLs"]
                environments[f"{compared}, 4 URLs"] = environments[compared]
            for run in range(args.runs + 1):  # the first round warms the caches and is dropped
                for name, argv in commands.items():
                    shutil.rmtree(out, ignore_errors=True)
                    sample = measure(argv, cwd=work, env=environments[name])
                    if sample.returncode != 0:
                        sys.exit(f"{name} failed")
                    if run:
                        figure.samples.setdefault(name, []).append(sample)
    finally:
        ftp.stop()
        for gopher in gophers:
            gopher.terminate()
            gopher.wait(timeout=10)
        remove_tree(content)
        shutil.rmtree(work, ignore_errors=True)
    print(markdown([figure]))
    medians = {name: statistics.median(s.seconds for s in samples) for name, samples in figure.samples.items()}
    hand = medians["hand split (2 processes)"]
    cluster = medians[f"cluster local:{args.workers}"]
    cpu = {name: statistics.median(s.cpu_s for s in samples) for name, samples in figure.samples.items()}
    hand_cpu, cluster_cpu = cpu["hand split (2 processes)"], cpu[f"cluster local:{args.workers}"]
    print(
        f"\nhand split / one process: {hand / medians['one process']:.2f}; "
        f"cluster / hand split: {cluster / hand:.2f} (CPU {cluster_cpu / hand_cpu:.2f}); "
        f"cluster overhead per URL: {(cluster - hand) / args.count * 1e6:.0f} us wall, "
        f"{(cluster_cpu - hand_cpu) / args.count * 1e6:.0f} us CPU"
    )
    fixed = medians[f"cluster local:{args.workers}, 4 URLs"] - medians["one process, 4 URLs"]
    fixed_cpu = cpu[f"cluster local:{args.workers}, 4 URLs"] - cpu["one process, 4 URLs"]
    print(
        f"cluster fixed cost: {fixed:.2f} s wall ({fixed / hand:.2f} of the hand split), {fixed_cpu:.2f} s CPU; "
        f"per URL beyond it: {(cluster - hand - fixed) / args.count * 1e6:.0f} us wall, "
        f"{(cluster_cpu - hand_cpu - fixed_cpu) / args.count * 1e6:.0f} us CPU"
    )
    if args.compare is not None:
        name = f"cluster local:{args.workers} ({args.compare})"
        print(f"{args.compare} cluster / hand split: {medians[name] / hand:.2f} (CPU {cpu[name] / hand_cpu:.2f})")
        small = medians[f"{name}, 4 URLs"] - medians["one process, 4 URLs"]
        small_cpu = cpu[f"{name}, 4 URLs"] - cpu["one process, 4 URLs"]
        print(f"{args.compare} cluster fixed cost: {small:.2f} s wall, {small_cpu:.2f} s CPU")
    if args.report is not None:
        write_report([figure], args.report)
    return 0


def gopher_url(port: int) -> str:
    return f"gopher://127.0.0.1:{port}"


if __name__ == "__main__":
    sys.exit(main())
