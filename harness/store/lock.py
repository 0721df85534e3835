"""One writer per run folder: a lock file naming the writer's pid and host.

On this host a dead writer's lock is taken over, so a lock that could not be removed (a read-only
disk) stops no later run. A writer on another host (a cluster's node, the folder shared between them)
cannot be asked whether it lives: its lock holds while it beats (the holder touches it every
HEARTBEAT_S). A run that finds such a lock waits for it: a shard requeued from a node the controller
lost, while that node's task still writes, resumes the folder only once that task has let go, or once
the lock has not moved for STALE_S (its node is gone) and is taken over."""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

from harness.records.run import Lock
from harness.store.results import ResultsUnwritable

LOCK_FILE = ".lock"
HEARTBEAT_S, STALE_S = 2.0, 10.0


class RunLocked(RuntimeError):
    pass


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":
        import psutil

        return psutil.pid_exists(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunLock:
    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        self.me = (os.getpid(), socket.gethostname())
        self._stop = threading.Event()

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        try:
            self._take()
        except OSError as exc:
            raise ResultsUnwritable(f"cannot lock {self.path.parent}: {exc.strerror or exc}") from None
        threading.Thread(target=self._beat, name="run-lock-heartbeat", daemon=True).start()

    def _take(self) -> None:
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._alive(holder):
                    raise RunLocked(f"{self.path.parent} is in use by another burtbench run (pid {holder[0]}); "
                                    f"wait for it or stop it") from None
                if self._holder() == holder:  # not taken meanwhile by another run that found it dead too
                    self.path.unlink(missing_ok=True)
                continue
            try:
                with os.fdopen(fd, "w") as fh:
                    fh.write(f"{self.me[0]} {self.me[1]}\n")
            except OSError:
                self.path.unlink(missing_ok=True)  # best effort: an empty lock names no live holder anyway
                raise
            return

    def _alive(self, holder: tuple[int, str | None]) -> bool:
        """A holder here: whether its process lives. Elsewhere: waits while its lock beats; False once
        it is released or has not moved for STALE_S."""
        pid, host = holder
        if host in (None, self.me[1]):
            return pid_alive(pid)
        print(f"burtbench: {self.path.parent} is locked by pid {pid} on {host}: waiting for it to let go "
              f"(or for its lock to stand still {STALE_S:g} s)", file=sys.stderr, flush=True)
        moved = time.monotonic()
        stamp = self._stamp()
        while stamp is not None and time.monotonic() - moved < STALE_S:
            time.sleep(HEARTBEAT_S / 4)
            now = self._stamp()
            if now != stamp:
                moved, stamp = time.monotonic(), now
        return False

    def _stamp(self) -> tuple | None:
        """The lock's identity and last beat, read through an open file (a network file system
        refreshes what it caches of a file when it is opened)."""
        try:
            with open(self.path, "rb") as fh:
                found = os.fstat(fh.fileno())
        except FileNotFoundError:
            return None
        return found.st_ino, found.st_mtime_ns

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:  # the disk refused a beat: the next one tries again
                pass

    def _holder(self) -> tuple[int, str | None] | None:
        try:
            return self._read_holder()
        except OSError:
            return None

    def _read_holder(self) -> tuple[int, str | None] | None:
        """(pid, host); a lock of an older burtbench names no host: this one's."""
        try:
            found = Lock.of_text(self.path.read_text(errors="replace"))
        except FileNotFoundError:
            return None
        return found and (found.pid, found.host)

    def release(self) -> None:
        """Remove the lock; where the disk refuses, say so (a later run takes over a dead holder's lock)."""
        self._stop.set()
        try:
            if self._read_holder() == self.me:
                self.path.unlink(missing_ok=True)
        except OSError as exc:
            print(f"burtbench: warning: could not remove the lock {self.path} ({exc.strerror or exc}); "
                  f"it names this finished process, so the next run takes it over", file=sys.stderr)
