"""A driver whose control server drops subtask connections at random times.

``python -m tests.chaos.drop_connections JOB CONFIG JOB_ID --seed S --drops N --gap A B``

Runs the job in this process through ``JobRun`` (the same code as ``seatunnel-ckpt
run``), with a chaos thread that closes a random subtask's control connection every
``A..B`` seconds. The executor processes survive: each subtask reconnects,
re-registers, and restarts from the latest completed checkpoint, the path a network
blip takes in production. Prints one ``chaos: dropped ...`` line per drop on stderr.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import threading
import time


def main(argv: list[str] | None = None) -> int:
    from airflow_provider_seatunnel_ckpt.config import load_config
    from airflow_provider_seatunnel_ckpt.engine.runner import JobRun, RunRequest
    from airflow_provider_seatunnel_ckpt.jobfile.job import load_job

    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("config")
    parser.add_argument("job_id")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--drops", type=int, required=True)
    parser.add_argument("--gap", type=float, nargs=2, default=(1.0, 2.0))
    args = parser.parse_args(argv)

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    package = logging.getLogger("airflow_provider_seatunnel_ckpt")
    package.addHandler(handler)
    package.setLevel(logging.INFO)

    job = load_job(args.job)
    config = load_config(args.config, job_env=job.env)
    request = RunRequest(
        job=job, config=config, job_id=args.job_id, master="local[2]", spark_conf={"spark.task.maxFailures": "40"}
    )
    run = JobRun(request)
    rng = random.Random(args.seed)

    def chaos() -> None:
        while run._loop is None or run._loop.server is None:
            time.sleep(0.05)
        loop = run._loop
        done = 0
        while done < args.drops and not loop._done.is_set():
            time.sleep(rng.uniform(*args.gap))
            try:
                connections = sorted(set(loop._connections.values()))  # a snapshot; the loop thread owns it
            except RuntimeError:  # changed while we copied it
                continue
            if len(connections) < 2:
                continue  # a subtask is still reconnecting
            victim = connections[rng.randrange(len(connections))]
            if loop.server.drop_connection(victim):
                done += 1
                print(f"chaos: dropped control connection {victim} (drop {done})", file=sys.stderr, flush=True)

    threading.Thread(target=chaos, name="chaos", daemon=True).start()
    outcome = run.run()
    if outcome.finished:
        print(f"job {args.job_id} finished: final checkpoint {outcome.final_checkpoint_id}", file=sys.stderr)
        return 0
    print(f"error: job {args.job_id} failed: {outcome.error}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
