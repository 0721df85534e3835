"""burtbench harness: plans trials, runs each in a pinned child process, records and reports them."""
__version__ = "0.1.0"
