"""Every file burtbench writes and reads back, declared once (pydantic v2), and the one way to read them.

One module per family:
- trials.py: a line of trials.jsonl (and its bounds: the trial's numbers read back);
- run.py: manifest.json (its plan, roofs, ceilings), added.jsonl's batches, the run folder's .lock;
- machine.py: the machine caches (bandwidth.json, ceiling.json) and where they live;
- cluster.py: a SLURM run's slurm.json;
- envs.py: an environment's burtbench-env.json;
- calibration.py: a machine's calibration.json (`burtbench calibrate`) and the noise a run keeps in its
  manifest.
base.py holds the reading API (read, read_cache, salvage, Damaged). The build states of engines/ are
declared in engines/state.py, with the same library: engines/ imports nothing from harness/.

This package is at harness/'s floor: it imports nothing from harness/'s stages.
"""
