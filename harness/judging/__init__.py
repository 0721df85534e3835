"""Judging: the paper's claims (and other sources') as data in, verdicts out.

A run's rows and measures (harness/analysis/tables.py, metrics.py) are held to each claim's rule (rules.py
over rows.py's factors) into one verdict per subject (claims.py, verdicts.py); deciding.py plans the rounds
that can decide what is undecided, which running/ executes; pooled.py judges several runs of one machine and
machines apart; reruns.py says how far reruns moved the factors; release.py judges other sources' claims.
Imports analysis/, planning/ and store/ below it, never report/: report/ renders what this returns.
"""
