"""Operator strategies for ARM CPUs (target key ``arm_cpu``), with TVM's template names and knobs."""
