"""YAML jobs and the engine call behind each command.

``spec`` (the schema, ``load_job``; ``tuning_spec`` reads its ``tuner`` and ``measure`` sections,
``model_spec`` its ``model``), ``nodes`` (YAML with line numbers and limits, every problem
collected), ``tasks`` (templates and arguments → Tasks, shapes checked), ``runner_kinds`` (the
runner registry), ``measure_setup`` (the ``measure`` section → ``measure_option``), ``tune_job``,
``best_of_logs``, ``apply_job`` (with ``numpy_baseline``), ``inspect_job`` (``inspect_job``,
``inspect_log``), ``text`` (short forms of workloads and configs).
"""
