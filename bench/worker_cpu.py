"""Controller CPU per task of one ansible-playbook run: each task of each host runs in a worker process Ansible forks
from its main process; this runs ansible-playbook with every worker timing its own CPU, then prints the tasks by the
CPU their workers used (docs/performance.md, issue 36's second step, was measured with it).

  .venv/bin/python bench/worker_cpu.py [ansible-playbook arguments...]
  e.g. .venv/bin/python bench/worker_cpu.py -i ~/.cache/metalserve-sglang/lab/sites/lab/hosts.yml playbooks/site.yml \
       --skip-tags preflight,drivers,rdma,container_runtime,accept,monitoring

The main process (forks, variable merges, results) is printed as one figure; what it cannot see is the programs a
worker starts (the docker or ssh client): `/usr/bin/time` around the same command gives the whole.
"""
from __future__ import annotations

import collections
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from ansible.executor.process import worker

OUT = Path(tempfile.mkdtemp(prefix="worker-cpu-"))
_run = worker.WorkerProcess._run  # noqa: SLF001 - the hook this tool exists for


def timed_run(self: worker.WorkerProcess) -> object:
    start = time.process_time()
    try:
        return _run(self)
    finally:
        (OUT / f"{os.getpid()}.json").write_text(json.dumps(
            {"task": self._task.get_name(), "cpu": time.process_time() - start}))  # noqa: SLF001


def report() -> None:
    rows = [json.loads(p.read_text()) for p in OUT.glob("*.json")]
    by: dict[str, list[float]] = collections.defaultdict(list)
    for row in rows:
        by[row["task"]].append(row["cpu"])
    main = resource.getrusage(resource.RUSAGE_SELF)
    print(f"\n{len(rows)} task results, {sum(r['cpu'] for r in rows):.2f} s of worker CPU, "
          f"{main.ru_utime + main.ru_stime:.2f} s of the main process's")
    for task, cpu in sorted(by.items(), key=lambda kv: -sum(kv[1]))[:30]:
        print(f"{sum(cpu):7.2f} s {len(cpu):4d} x {sum(cpu) / len(cpu) * 1000:5.0f} ms  {task[:100]}")


if __name__ == "__main__":
    worker.WorkerProcess._run = timed_run  # noqa: SLF001
    from ansible.cli.playbook import main  # noqa: PLC0415

    sys.argv[0] = "ansible-playbook"
    try:
        main()
    finally:
        report()
