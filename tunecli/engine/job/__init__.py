"""YAML jobs and the engine call behind each command.

``spec`` (the schema, ``load_job``), ``nodes`` (YAML with line numbers and limits, every problem
collected), ``tasks`` (templates and arguments → Tasks, shapes checked), ``log_path`` (what may be a
log), ``measure`` (the ``measure`` section → ``measure_option``), ``tune``
(``tune_job``), ``best`` (``best_of_logs``), ``apply`` (``apply_job``), ``inspect``
(``inspect_job``, ``inspect_log``), ``text`` (short forms of workloads and configs).
"""
