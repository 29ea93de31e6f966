"""Where the runs of a sweep execute: a thread pool in this process (the
default, as wide as the machine), or a Ray cluster (``--ray auto`` or an
address; see docs/cluster.md).

Whichever executor runs a job, it runs the same engine on the same scenario
and seed, so the tables are identical; only the provenance differs (the
``worker`` that ran it, ``host:pid``, and its wall time).

An executor starts jobs, each with a ``finish(job, result)`` to call on its
outcome (``result()`` returns the :class:`~torrentlab.api.RunResult` or
raises the run's error), says which jobs have finished, and hands back what
``finish`` returned. A local run is finished in its own thread, so that
writing what is kept of it goes on beside the other runs; a remote run is
finished here when its result arrives. :func:`torrentlab.sweep.run_jobs`
drives it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from torrentlab._core import CancelToken
from torrentlab.api import RunResult, run
from torrentlab.exceptions import ClusterError

#: How long one wait for a Ray task or a local run lasts before Python looks
#: at its signals again (Ctrl-C stops a sweep within this), seconds.
POLL_S = 0.1


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Holds Ctrl-C (SIGINT) and SIGTERM back while the main thread waits, and
    raises them as their own handlers would once the wait is over.

    A signal handler that raises inside ``threading.Condition.wait`` can land
    between its release and its re-acquisition of the lock, and the
    ``with`` around it then fails with "release unlocked lock" instead of
    stopping (a CPython race, seen under ``concurrent.futures.wait``). Here
    the handlers only note the signal; the waits poll (:data:`POLL_S`), and
    the noted signal is delivered outside any lock. Off the main thread,
    where Python delivers no signals, this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: noted.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if noted:
        handler = previous[noted[0]]
        if callable(handler):
            handler(noted[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(noted[0])


class Local:
    """A thread pool in this process: `workers` runs at once (default: every
    core). The engine releases the GIL, so runs proceed in parallel."""

    def __init__(self, workers: int | None = None) -> None:
        width = workers or os.cpu_count() or 1
        self.in_flight = 2 * width
        self.token = CancelToken()
        self.pool = ThreadPoolExecutor(max_workers=width)

    def submit(self, job, finish, tables: tuple[str, ...] | None = None, progress=None) -> Future:
        """Starts `job` and then `finish` on it, in a thread of the pool;
        `progress` is the run's progress callback."""
        return self.pool.submit(finish, job, lambda: run(job.scenario, seed=job.seed, cancel=self.token,
                                                         progress=progress))

    def wait(self, handles: Iterable[Future]) -> list[Future]:
        """The runs among `handles` that have finished, waiting for one; a
        signal that arrives meanwhile is raised here (see
        :func:`signals_deferred`)."""
        handles = list(handles)
        while True:
            with signals_deferred():
                finished, _ = wait(handles, timeout=POLL_S, return_when=FIRST_COMPLETED)
            if finished:
                return list(finished)

    def result(self, handle: Future) -> Any:
        return handle.result()

    def stop(self, handles: Iterable[Future]) -> None:
        """Cancels the runs under way and drops the queued ones."""
        self.token.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def _remote_run(scenario: dict[str, Any], seed: int, tables: tuple[str, ...] | None):
    """A job as a Ray task runs it: the worker's torrentlab version and
    commit (checked against the driver's), and the result with only the
    `tables` the driver keeps (every table when None)."""
    import torrentlab

    res = run(scenario, seed=seed)
    if tables is not None:
        res.tables = {k: v for k, v in res.tables.items() if k in tables}
    return torrentlab.__version__, torrentlab.__git_commit__, res


class Ray:
    """Runs each job as a Ray task (one CPU each) on the cluster at `address`:
    ``"auto"`` joins the cluster started on this machine by ``ray start``, or
    starts a local Ray instance when there is none; anything else is handed
    to ``ray.init`` (``HOST:PORT`` of a head node, or ``ray://HOST:10001``).
    Every node needs the same torrentlab (version and commit) as the driver;
    a worker with another is refused with a :class:`ClusterError`.

    `workers` caps the runs in flight; by default there are twice as many as
    the cluster has CPUs (so that no CPU waits for the next job)."""

    def __init__(self, address: str, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ClusterError("--ray needs Ray: pip install 'torrentlab[cluster]' (on every node)") from None
        self.ray = ray
        self.started_here = False
        if not ray.is_initialized():
            _reachable(address)
            quiet = {"log_to_driver": False, "logging_level": "ERROR"}
            try:
                ray.init(address=address, **quiet)
            except ConnectionError as e:
                if address != "auto":
                    raise ClusterError(f"no Ray cluster at {address}: {e}") from None
                print("torrentlab: no Ray cluster on this machine; starting a local one", file=sys.stderr)
                ray.init(include_dashboard=False, **quiet)
                self.started_here = True
            except (ValueError, RuntimeError) as e:
                raise ClusterError(f"could not join the Ray cluster at {address}: {e}") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.in_flight = workers or 2 * cpus
        self.task = ray.remote(num_cpus=1, max_retries=0)(_remote_run)
        #: Each task under way: its job and what to call on its result.
        self.finishing: dict[Any, tuple[Any, Any]] = {}

    def submit(self, job, finish, tables: tuple[str, ...] | None = None, progress=None):
        """Starts `job` as a task, to be finished here by :meth:`result`; a
        remote run reports only when it ends, so `progress` is not called."""
        ref = self.task.remote(job.scenario, job.seed, tables)
        self.finishing[ref] = (job, finish)
        return ref

    def wait(self, handles: Iterable[Any]) -> list[Any]:
        refs = list(handles)
        while True:
            ready, _ = self.ray.wait(refs, num_returns=1, timeout=POLL_S)
            if ready:
                return ready

    def result(self, handle) -> Any:
        job, finish = self.finishing.pop(handle)
        return finish(job, lambda: self._get(handle))

    def _get(self, handle) -> RunResult:
        import torrentlab

        try:
            version, commit, res = self.ray.get(handle)
        except self.ray.exceptions.RayTaskError as e:  # the run raised: its own error
            cause = getattr(e, "cause", None)
            raise (cause if isinstance(cause, BaseException) else e) from None
        except self.ray.exceptions.RayError as e:  # a worker or node died under it
            raise ClusterError(f"a run was lost on the Ray cluster ({type(e).__name__}: {e}); the runs that "
                               "finished are kept: run the same sweep again to make the rest") from None
        if (version, commit) != (torrentlab.__version__, torrentlab.__git_commit__):
            raise ClusterError(f"a Ray worker ({res.worker}) has torrentlab {version} ({commit}), the driver "
                               f"{torrentlab.__version__} ({torrentlab.__git_commit__}); install one on every node")
        return res

    def stop(self, handles: Iterable[Any]) -> None:
        """Cancels the tasks `handles` (those under way are killed)."""
        for ref in handles:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:  # a task that ended meanwhile
                pass

    def close(self) -> None:
        if self.started_here:
            self.ray.shutdown()


def _reachable(address: str) -> None:
    """Refuses at once a ``HOST:PORT`` or ``ray://HOST:PORT`` with nothing
    listening (``ray.init`` would keep trying for a minute or more)."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://").rsplit("/", 1)[0]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--ray {address}: not a Ray address; use 'auto', HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ClusterError(f"no Ray cluster at {address}: {e.strerror or e}") from None


def executor(ray: str | None, workers: int | None):
    """The executor the command line asked for: Ray at `ray` if given, else
    a local thread pool of `workers`."""
    return Ray(ray, workers) if ray else Local(workers)
