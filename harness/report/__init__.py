"""`burtbench report RUN_DIR`: the paper's tables and figures for one run, and index.html.

    reports/<run-id>/index.html                          claims, tables and figures on one page
    reports/<run-id>/README.md                           the same in Markdown (figures linked)
    reports/<run-id>/claims.md | .csv | .json            a verdict for each of the paper's claims
    reports/<run-id>/tables/<name>.md | .tex | .csv   (versions_<workload>: a run with several --env)
    reports/<run-id>/figures/<name>.png | .pdf
    reports/<run-id>/authors.md          (where the run has trials of the authors' BurTorch programs)

render.py renders all of it; pandas and matplotlib are imported only while rendering, so importing
this package stays cheap.
"""
