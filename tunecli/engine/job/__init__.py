"""YAML jobs and the engine call behind each command.

``spec`` (the schema, ``load_job``), ``nodes`` (YAML with line numbers), ``tasks`` (templates and
arguments → Tasks), ``measure`` (the ``measure`` section → ``measure_option``), ``tune``
(``tune_job``), ``best`` (``best_of_logs``), ``apply`` (``apply_job``), ``inspect``
(``inspect_job``, ``inspect_log``), ``text`` (short forms of workloads and configs).
"""
