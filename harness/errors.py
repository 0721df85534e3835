"""Errors every command reports as one line on stderr, with their exit codes."""

EXIT_USAGE = 2
# `run` did what it could but not all it was asked: an engine named with --engine could not run here.
EXIT_NOT_ALL_RUN = 3


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2, before anything is written."""
