"""The job file: what a YAML job says, validated once, and the tasks and network it describes.

``spec`` (the schema, ``load_job`` -> ``Job``; ``tuning_spec`` reads its ``tuner`` and
``measure`` sections, ``model_spec`` its ``model``, ``ops`` and ``graph_tuner``), ``nodes`` (YAML
with line numbers and limits, every problem collected), ``runner_kinds`` (the runner registry),
``network_models`` (the built-in networks), ``tasks`` (templates and arguments -> Tasks, shapes
checked), ``network`` (a model job's network: loaded, its tasks extracted, built),
``measure_setup`` (the ``measure`` section -> ``measure_option``) and ``apply_device`` (where
``apply`` runs a job's kernels).  What each command does with a job is ``engine.actions``.
"""
