"""Where searches run: worker processes on this machine, or workers on others through Redis.

A `ProcessRunner` owns one child process (`python -m ttt.pool.workers`) that reads one task a line
on its stdin and answers one JSON line on its stdout. A child that dies (kill -9) is seen as
an end of file: the runner raises WorkerLost (the scheduler retries the task) and starts a
fresh child for the next one. The child exits when its stdin closes, so it never outlives
the server, however the server ends.

A `QueueRunner` hands the task to RQ on Redis and blocks (cooperatively under gevent: the
Redis client's socket is patched) on its result; `python -m ttt worker` runs the other end,
an RQ SimpleWorker that searches in its own process, so nothing is forked per search.
The queue is named by the code's fingerprint (`ttt-ai-<fingerprint>`): a worker of another
build (an older release left running) listens on another queue and gets no search, and the
web processes, which list the workers now and then, log each such worker once and count it
(`ttt_ai_workers_refused_total{reason="build"}`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ttt.ai.mcts_trees import DROP_REASONS, tree_report
from ttt.pool.thinker import Scheduler, WorkerLost, search
from ttt.runtime.fingerprint import code_fingerprint

log = logging.getLogger("ttt.workers")
QUEUE_NAME = "ttt-ai"
ROOT = Path(__file__).resolve().parents[2]
REFUSED: dict[str, int] = {"build": 0}  # workers refused work, by reason (the metrics')
_refused_names: set[str] = set()


def queue_name() -> str:
    """The queue of this build's searches: only workers of the same code take them."""
    return f"{QUEUE_NAME}-{code_fingerprint()}"


def _build_of(queue: str) -> str:
    """The build a worker's queue names (`unknown` for a release before builds were named)."""
    return queue[len(QUEUE_NAME) + 1:] if queue.startswith(QUEUE_NAME + "-") else "unknown"


class ProcessRunner:
    """One worker process on this machine, started on first use and again after a crash."""

    def __init__(self) -> None:
        self._child: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._started = 0  # children started: all but the first are restarts
        self.trees: dict[str, int] = {}  # the child's last tree report (its answers carry it)
        self._ended: dict[str, int] = {}  # the counts of children that ended, and their trees

    @property
    def restarts(self) -> int:
        """Children started again after one died (ttt_ai_worker_restarts_total)."""
        return max(0, self._started - 1)

    def alive(self) -> bool:
        """Whether this runner can search now: no child yet (started on first use) or one
        running; False from a child's death until the next search starts another."""
        child = self._child
        return child is None or child.poll() is None

    @property
    def pid(self) -> int | None:
        return self._child.pid if self._child else None

    def _spawn(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        env["TTT_SERVER_CODE"] = code_fingerprint()  # the worker checks it runs the same
        return subprocess.Popen([sys.executable, "-m", "ttt.pool.workers"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, env=env, cwd=str(ROOT))

    def run(self, task: dict[str, Any], seconds: float) -> Any:
        with self._lock:
            dead = self._child
            if dead is None or dead.poll() is not None:
                if dead is not None:  # died between searches (killed): its pipes closed here
                    self._dead_pid, self._dead_code = dead.pid, dead.returncode
                    _close_pipes(dead)
                    self._retire()
                if self._started:  # one line per restart, with the pid and how it ended
                    log.warning("AI worker %s ended (exit %s): starting another",
                                self._dead_pid, self._dead_code)
                self._child = self._spawn()
                self._started += 1
            child = self._child
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps({"task": task, "seconds": seconds}).encode() + b"\n")
            child.stdin.flush()
            line = child.stdout.readline()
        except (BrokenPipeError, OSError, ValueError) as error:
            line, why = b"", str(error)
        else:
            why = "end of file"
        if not line:
            self._bury(child)
            raise WorkerLost(f"worker {child.pid}: {why}")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        self.trees = answer.get("trees") or self.trees
        return answer["result"]

    def _retire(self) -> None:
        """The child ended: its counts stay counted, and the trees it kept count as dropped
        (worker_lost): the games it kept them for start afresh in its successor."""
        last, self.trees = self.trees, {}
        for name, value in last.items():
            if name == "reused" or name.startswith("dropped_"):
                self._ended[name] = self._ended.get(name, 0) + value
        lost = self._ended.get("dropped_worker_lost", 0) + last.get("games", 0)
        self._ended["dropped_worker_lost"] = lost

    def tree_figures(self) -> dict[str, int]:
        """The trees this worker keeps now (as its last answer said) and its counts since
        this runner started, its children's that ended included."""
        figures = dict(self._ended)
        for name, value in self.trees.items():
            figures[name] = figures.get(name, 0) + value
        return figures

    _dead_pid: int | None = None
    _dead_code: int | None = None

    def _bury(self, child: subprocess.Popen) -> None:
        """A dead (or broken) child: reap it, so the next run starts a fresh one."""
        self._dead_pid, self._dead_code = child.pid, child.poll()
        try:
            child.kill()
            child.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        _close_pipes(child)
        with self._lock:
            if self._child is child:
                self._child = None
                self._retire()

    def close(self) -> None:
        with self._lock:
            child, self._child = self._child, None
        if child is not None:
            self._bury(child)


def _close_pipes(child: subprocess.Popen) -> None:
    for pipe in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            pipe and pipe.close()


def serve_stdin() -> None:
    """The worker process: one task a line in, one answer a line out, until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C ends it by closing stdin
    # Last in the CPU's queue (nice 19, TTT_AI_NICE): on a machine with few cores the searches
    # take what the serving loop leaves, so a classic move never waits behind a search (their
    # budgets are wall-clock: a starved search plays a weaker move in time, never a late one).
    # Measured in `make bench-ai-load`: at nice 5 the loaded p99 was 140 ms, at 19 48 ms.
    with contextlib.suppress(OSError, ValueError):
        os.nice(int(os.environ.get("TTT_AI_NICE", "19")))
    expected = os.environ.get("TTT_SERVER_CODE")
    changed = expected is not None and expected != code_fingerprint()
    if changed:
        log.error("the code in %s changed since the server started: this worker refuses to "
                  "search with other code than the server's (restart the server)", ROOT)
    for line in sys.stdin.buffer:
        try:
            if changed:
                raise RuntimeError("the worker's code is not the server's: restart the server")
            asked = json.loads(line)
            answer = {"result": search(asked["task"], float(asked["seconds"])),
                      "trees": tree_report()}
        except Exception as error:  # a bad task is answered, never a dead worker
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# --- many machines: RQ on Redis ----------------------------------------------------------------

def run_task(task: dict[str, Any], seconds: float) -> Any:
    """The RQ job: a search, in whichever worker picks it up."""
    return search(task, seconds)


class QueueRunner:
    """One search at a time through RQ: enqueue, then block on the result stream."""

    def __init__(self, url: str, queue: str | None = None) -> None:
        from redis import Redis
        from rq import Queue
        from rq.serializers import JSONSerializer

        # JSON, not pickle: a job's payload is only ever data.
        self._queue = Queue(queue or queue_name(), connection=Redis.from_url(url),
                            serializer=JSONSerializer)

    def workers(self) -> int:
        """How many `python -m ttt worker`s listen on the queue now."""
        from rq import Worker

        return Worker.count(queue=self._queue)

    _count: tuple[float, int] = (float("-inf"), 0)

    def counted(self) -> int:
        """`workers()`, asked at most every 5 s (each probe and scrape reads it); -1 while
        the queue's Redis does not answer."""
        at, count = self._count
        now = time.monotonic()
        if now - at >= 5:
            try:
                count = self.workers()
                self.refuse_other_builds()
            except Exception:  # the queue's Redis is down: no worker can be reached
                count = -1
            self._count = (now, count)
        return count

    def refuse_other_builds(self) -> None:
        """Log (once each) and count the workers on the Redis that listen for another build's
        searches: they get none of this process's, which is the refusal; the line says why."""
        from rq import Worker

        ours = self._queue.name
        for worker in Worker.all(connection=self._queue.connection):
            theirs = [q for q in worker.queue_names() if q.startswith(QUEUE_NAME)]
            if not theirs or ours in theirs or worker.name in _refused_names:
                continue
            _refused_names.add(worker.name)
            REFUSED["build"] += 1
            log.error("AI worker %s runs build %s, this web process %s: it is refused every "
                      "search (deploy this release there, or stop it)", worker.name,
                      _build_of(theirs[0]), _build_of(ours))

    def run(self, task: dict[str, Any], seconds: float) -> Any:
        from rq.results import Result

        job = self._queue.enqueue(run_task, task, seconds, job_timeout=int(seconds) + 30,
                                  result_ttl=60, failure_ttl=300, ttl=120)
        # Asked in short blocking reads: one long XREAD outlasts the client's socket timeout
        # (5 s in redis-py), which read as Redis trouble and lost the move when no worker was
        # there; a worker that comes within the wait still answers it.
        deadline = time.monotonic() + int(seconds) + 60
        result = None
        while result is None and time.monotonic() < deadline:
            result = job.latest_result(timeout=2)
        if result is None:  # no worker took it, or the one that did died: search again
            job.cancel()
            raise WorkerLost(f"no answer from the queue for job {job.id}")
        if result.type != Result.Type.SUCCESSFUL:
            raise RuntimeError(f"job {job.id}: {result.type.name}: {result.exc_string}")
        return result.return_value

    def close(self) -> None:
        pass


def search_job_class() -> type:
    """An RQ job that can only be a search: whoever can write to the queue's Redis cannot make
    a worker call any other function (RQ imports a job's function by its stored name)."""
    from rq.job import Job

    class SearchJob(Job):
        @property
        def func(self):
            if self.func_name != f"{__name__}.run_task" or self.instance is not None:
                raise ValueError(f"refused job {self.func_name!r}: this worker only searches")
            return run_task

        success_callback = failure_callback = stopped_callback = None  # type: ignore

    return SearchJob


def work(url: str, queue: str | None = None, burst: bool = False) -> None:
    """`python -m ttt worker`: take searches from the Redis queue of this build (no web server
    here); web processes of another build never send it theirs."""
    from redis import Redis
    from rq import SimpleWorker
    from rq.serializers import JSONSerializer

    # SimpleWorker runs each job in this process: no fork per job, the tables stay warm.
    worker = SimpleWorker([queue or queue_name()], connection=Redis.from_url(url),
                          serializer=JSONSerializer, job_class=search_job_class())
    worker.work(burst=burst, logging_level="WARNING")


def live_workers(thinker: Any) -> dict[str, int] | None:
    """The pool's live workers: {"local": n} or {"remote": n} (-1: the queue cannot be read,
    asked at most every 5 s); None for a thinker with no pool (inline)."""
    runners = getattr(thinker, "runners", None)
    if not runners:
        return None
    if isinstance(runners[0], QueueRunner):
        return {"remote": runners[0].counted()}
    return {"local": sum(1 for r in runners if getattr(r, "alive", lambda: True)())}


def restarts(thinker: Any) -> int:
    """Local worker processes started again after one died, in all."""
    return sum(getattr(r, "restarts", 0) for r in getattr(thinker, "runners", ()))


def tree_figures(thinker: Any) -> dict[str, int] | None:
    """The search trees kept between a game's moves (ttt.ai.mcts_trees), summed over the local
    workers: games, nodes and bytes now (at most), searches that reused a tree and trees
    dropped by reason, since start. An inline thinker's are this process's; None for remote
    workers (their trees are on other machines, counted nowhere here)."""
    runners = getattr(thinker, "runners", None)
    if runners is None or runners and isinstance(runners[0], QueueRunner):
        return None
    total = dict.fromkeys(("games", "nodes", "bytes", "reused"), 0)
    total.update({f"dropped_{reason}": 0 for reason in (*DROP_REASONS, "worker_lost")})
    for figures in [r.tree_figures() for r in runners] if runners else [tree_report()]:
        for name, value in figures.items():
            total[name] = total.get(name, 0) + value
    return total


def figures(thinker: Any) -> list[tuple[str, str, str, list[str], list[tuple[list[str], float]]]]:
    """The pool's figures for the metrics, as (kind, name, help, labels, samples): workers
    alive and restarted, and the trees they keep (`tree_figures`)."""
    live = live_workers(thinker)
    found = []
    if live is not None:
        found += [
            ("gauge", "ttt_ai_workers", "AI worker processes alive (local: this process's; "
             "remote: on the queue, -1 when it cannot be read).", ["where"],
             [([where], live.get(where, 0)) for where in ("local", "remote")]),
            ("counter", "ttt_ai_worker_restarts", "Local AI worker processes started again "
             "after one died.", [], [([], restarts(thinker))]),
            ("counter", "ttt_ai_workers_refused", "Remote AI workers seen on the queue's "
             "Redis and refused every search, by reason (build: another code fingerprint "
             "than this process's).", ["reason"],
             [([reason], count) for reason, count in REFUSED.items()])]
    trees = tree_figures(thinker)
    if trees is not None:
        found += [
            ("gauge", "ttt_ai_trees", "Games whose search tree the local AI workers keep "
             "between moves.", [], [([], trees["games"])]),
            ("gauge", "ttt_ai_tree_nodes", "Nodes of the kept search trees, at most (one a "
             "visit of each tree's root).", [], [([], trees["nodes"])]),
            ("gauge", "ttt_ai_tree_bytes", "Memory of the kept search trees, at most (their "
             "nodes at about 300 bytes each).", [], [([], trees["bytes"])]),
            ("counter", "ttt_ai_tree_reuses", "AI searches that started from the tree kept "
             "from the game's move before.", [], [([], trees["reused"])]),
            ("counter", "ttt_ai_trees_dropped", "Kept search trees dropped, by reason (over: "
             "the game ended; idle; full: the memory bound; stale: the game came back "
             "at another position; worker_lost: its worker ended).", ["reason"],
             [([name.removeprefix("dropped_")], value) for name, value in trees.items()
              if name.startswith("dropped_")])]
    return found


def build(config: dict[str, Any]) -> Scheduler:
    """The thinker for an app: `TTT_AI_QUEUE` (redis://) sends searches to remote workers;
    else `TTT_AI_WORKERS` processes here (0: search inline, for tests that say so)."""
    from ttt.pool.thinker import Inline

    queue_url = config.get("TTT_AI_QUEUE")
    workers = config.get("TTT_AI_WORKERS")
    if workers is None:  # here: the cores but one for the server; remote: searches in flight
        workers = 4 if queue_url else max(1, (os.cpu_count() or 2) - 1)
    workers = int(workers)
    max_queue = config.get("TTT_AI_QUEUE_MAX")
    limit = int(max_queue) if max_queue else None
    if queue_url:
        runners = [QueueRunner(queue_url) for _ in range(max(1, workers))]
        return Scheduler(list(runners), max_queue=limit, capacity=runners[0].workers)
    if workers == 0:
        return Inline()
    code_fingerprint()  # now, at start-up: the code this server runs, for its workers to match
    return Scheduler([ProcessRunner() for _ in range(workers)], max_queue=limit)


if __name__ == "__main__":
    serve_stdin()
