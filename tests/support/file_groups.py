"""pytest-xdist's ``--dist loadfile``, but with each directory of SHARED_BY_PACKAGE sent to
one worker whole: its tests share a package-scoped fixture, which each worker running
one of them would start for itself (tests/deployment's Airflow deployment costs about
300 CPU-seconds to start and run, and under plain ``loadfile`` both workers started one).

pytest-xdist's own ``--dist loadgroup`` would do it with ``xdist_group`` markers, but
pytest-xdist 3.8 marks the group by rewriting ``item._nodeid``, which pytest 9.2 no
longer reads: its groups are silently ignored. A scheduler through the plugin's
``pytest_xdist_make_scheduler`` hook does not depend on pytest's internals."""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadFileScheduling

#: directories whose tests run on one worker, one after another
SHARED_BY_PACKAGE = ("tests/deployment/",)


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its directory in SHARED_BY_PACKAGE, else its file."""
    path = nodeid.split("::", 1)[0]
    return next((d for d in SHARED_BY_PACKAGE if path.startswith(d)), path)


class SharedPackageScheduling(LoadFileScheduling):
    """``--dist loadfile`` with the directories of SHARED_BY_PACKAGE as one unit each."""

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)


def make_scheduler(config: Any, log: Any) -> SharedPackageScheduling | None:
    """The scheduler for ``--dist loadfile``; None (xdist's own) for the other modes."""
    return SharedPackageScheduling(config, log) if config.getvalue("dist") == "loadfile" else None
