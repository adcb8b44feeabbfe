"""The driver freezes its startup heap before the Spark job runs (engine/launch.py,
``freeze_startup_heap``): a full collection during the run walks only what the run
allocated, not the imports and the SparkContext (a 200-900 ms pause with eight jobs on two
cores before)."""

from __future__ import annotations

import gc

from airflow_provider_seatunnel_ckpt.engine.launch import freeze_startup_heap


def test_the_startup_heap_is_out_of_the_collectors_reach_and_later_garbage_is_not():
    startup = [[index] for index in range(50_000)]  # long-lived, as the imports are
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() >= len(startup)
        in_reach = sum(gc.get_count()) + len(gc.get_objects(generation=2))
        assert in_reach < len(startup)  # a full collection no longer walks them

        class Cycle:
            pass

        later = Cycle()
        later.me = later  # garbage of the run: still collected
        del later
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
