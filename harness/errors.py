"""Errors every command reports as one line on stderr, with their exit codes."""

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2, before anything is written."""
