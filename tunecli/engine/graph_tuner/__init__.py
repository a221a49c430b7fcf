"""Graph-level tuning: one schedule per convolution, kernel times plus layout transforms smallest (TVM's ``autotvm.graph_tuner``)."""
