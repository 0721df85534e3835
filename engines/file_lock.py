"""One build at a time across processes: the engines that build on first use (the LibTorch driver,
the authors' programs, their memory library, their source) hold this lock on their build folder."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(lock_path: Path, waiting_message: str):
    """Holds an exclusive lock on lock_path across processes; says waiting_message if it must wait."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        if os.name == "nt":
            import msvcrt

            def take(blocking: bool) -> bool:
                handle.seek(0)
                try:
                    # LK_LOCK itself gives up after 10 attempts a second apart: keep asking.
                    msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)
                    return True
                except OSError:
                    return False

            def release() -> None:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            def take(blocking: bool) -> bool:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    return False

            def release() -> None:
                fcntl.flock(handle, fcntl.LOCK_UN)

        if not take(blocking=False):
            print(waiting_message, file=sys.stderr)
            while not take(blocking=True):
                pass
        try:
            yield
        finally:
            release()
