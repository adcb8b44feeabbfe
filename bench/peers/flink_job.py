"""Run one Flink SQL pipeline, as PyFlink's own process: ``python flink_job.py SPEC.json``.

Run by bench/peers/flink.py with the Python of PyFlink's virtualenv (.cache/flink/venv),
so it imports PyFlink and the standard library only. SPEC holds ``settings`` (Flink
configuration keys, set on the table environment before anything runs) and ``statements``
(SQL, run in order; the last one is the pipeline, waited for). The last line printed is
JSON: ``{"job_s": seconds from submitting the pipeline to its end, "job_id": ...}``.
"""

from __future__ import annotations

import json
import sys
import time


def main(spec_path: str) -> int:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    tables = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = tables.get_config()
    for key, value in spec["settings"].items():
        config.set(key, str(value))
    *setup, pipeline = spec["statements"]
    for statement in setup:
        tables.execute_sql(statement)
    started = time.monotonic()
    result = tables.execute_sql(pipeline)
    job_id = str(result.get_job_client().get_job_id()) if result.get_job_client() else None
    result.wait()
    print(json.dumps({"job_s": round(time.monotonic() - started, 3), "job_id": job_id}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
