"""Many small files from a private loopback nginx: `fetch -i LIST -d DIR` against `curl --parallel`.

    python bench/http_bulk.py [--count 2000] [--size 4096] [--jobs 8] [--runs 5] [--report DIR]

Issue 4's goal: at most 1.0 x curl's median wall time.  Both tools get the
same list of URLs and the same number of simultaneous transfers (`--jobs`,
also used as fetcher's --per-host since all URLs share one host; curl's
--parallel-max); both reuse connections.  A second curl row runs with
curl's default of 50 parallel transfers.  Output directories are on tmpfs
and emptied before every run; runs alternate after one warm-up round.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Figure, alternate, curl_parallel_command, fetch_bulk_command, fresh_directories, report
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.nginx_server import find_nginx, run_nginx


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None:
        sys.exit("nginx is not installed (apt-get install nginx-light)")
    content = public_tempdir("fetcher-bench-bulk-")
    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="fetcher-bench-bulk-out-", dir=shm if shm.is_dir() else None))
    try:
        files = content / "files"
        files.mkdir()
        for index in range(args.count):
            (files / f"f{index:05d}.bin").write_bytes(os.urandom(args.size))
        outputs = {tool: work / tool for tool in ("fetcher", "curl", "curl-50")}
        with run_nginx(content, nginx=nginx) as server:
            urls = [server.url(f"/files/f{index:05d}.bin") for index in range(args.count)]
            url_list = work / "urls.txt"
            url_list.write_text("\n".join(urls) + "\n")
            curl_config = work / "curl.cfg"
            curl_config.write_text(
                "".join(f'url = "{url}"\noutput = "f{index:05d}.bin"\n' for index, url in enumerate(urls))
            )
            os.environ.update({"http_proxy": "", "no_proxy": "*"})
            commands = {
                "fetcher": fetch_bulk_command(url_list, outputs["fetcher"], args.jobs),
                "curl": curl_parallel_command(curl_config, outputs["curl"], args.jobs),
                "curl-50": curl_parallel_command(curl_config, outputs["curl-50"], None),
            }
            clean = fresh_directories(outputs)

            figure = Figure(f"http_bulk ({args.count} x {args.size} B, {args.jobs} at once)", "<= 1.0 x curl")
            alternate(figure, commands, runs=args.runs, before_each=clean)
            for tool, directory in outputs.items():
                got = len(list(directory.iterdir()))
                if got != args.count:
                    figure.notes.append(f"{tool} left {got} of {args.count} files")
            # The same commands on one URL: what each tool costs to start, so the
            # report can give the CPU of one more URL (issue 17's "CPU per small URL").
            one_list = work / "one.txt"
            one_list.write_text(urls[0] + "\n")
            one_config = work / "one.cfg"
            one_config.write_text(f'url = "{urls[0]}"\noutput = "f00000.bin"\n')
            one = Figure("http_bulk, one URL", "start-up of the same commands")
            alternate(
                one,
                {
                    "fetcher": fetch_bulk_command(one_list, outputs["fetcher"], args.jobs),
                    "curl": curl_parallel_command(one_config, outputs["curl"], args.jobs),
                },
                runs=args.runs,
                before_each=clean,
            )
            per_url = {
                tool: (figure.cpu_median(tool) - one.cpu_median(tool)) / max(args.count - 1, 1) * 1e6
                for tool in ("fetcher", "curl")
            }
            ratio = per_url["fetcher"] / per_url["curl"] if per_url["curl"] > 0 else float("nan")
            figure.notes.append(
                f"CPU per URL beyond start-up: fetcher {per_url['fetcher']:.0f} us, curl {per_url['curl']:.0f} us, "
                f"fetcher/curl {ratio:.2f}"
            )
    finally:
        remove_tree(content)
        remove_tree(work)
    report([figure, one], args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
