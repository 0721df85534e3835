"""Whether this machine can count instructions (valgrind), and how to make it able to."""
from __future__ import annotations

import shutil

VALGRIND = "valgrind"
INSTALL_HINT = "install it (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind)"


def missing_valgrind() -> str | None:
    """Why instructions cannot be counted here (burtbench run --instructions), or None."""
    if shutil.which(VALGRIND) is None:
        return f"valgrind is not installed: {INSTALL_HINT}"
    return None
