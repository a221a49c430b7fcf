"""One engine action per job command, each given a loaded ``Job``.

``tune`` (kernel tuning, resumed from the log), ``tune_graph`` (the graph tuner step of a model
job), ``apply_kernels`` (each task's best kernel built, checked and timed), ``apply_network`` (a
model job's network built, checked and timed), ``inspect`` (config spaces, loop nests, a
network's make-up) and ``job_file`` (each command's entry: the job file loaded once, handed to
the actions).  Action modules import ``engine.job`` and the layers below, never each other; only
``job_file`` imports them (``tests/test_layering.py`` checks both).
"""
