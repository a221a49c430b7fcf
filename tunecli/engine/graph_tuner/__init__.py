"""Graph-level tuning: one schedule per convolution so that kernel times plus the layout
transforms between them are smallest (TVM's ``autotvm.graph_tuner``; faces
``tunecli.autotvm.graph_tuner`` and ``tunecli.autotvm.apply_graph_best``).

Modules: ``conv_graph`` (the tunable convolutions of a graph and the edges between them),
``layout_transform_task`` (the ``layout_transform`` template whose kernels are timed),
``layout_cost`` (the optimisation problem), ``dp_solver`` / ``pbqp_solver`` (its solvers),
``default_layouts`` (configs in the fallback config's blocks, measured as extra candidates),
``base_graph_tuner`` (candidates, transform timing, chosen records), ``dp_tuner`` /
``pbqp_tuner`` (``DPTuner``, ``PBQPTuner``) and ``graph_best`` (``ApplyGraphBest``).

TVM's flow (``tune_relay_x86.py``'s ``tune_graph``)::

    tuner = DPTuner(mod["main"], {"data": shape}, "kernels.log", [relay.op.get("nn.conv2d")], "llvm")
    tuner.benchmark_default_layouts()          # not TVM's: a transform-free choice among the candidates
    tuner.benchmark_layout_transform(min_exec_num=2000)
    tuner.run()
    tuner.write_opt_sch2record_file("graph_opt.log")
    with autotvm.apply_graph_best("graph_opt.log"): relay.build(...)
"""
