"""Bad job files of every kind a user (or a hostile one) writes: each gives one clear message per
problem, naming the file, the line and the field, exit code 2, no traceback, and nothing written.

Every case runs ``tunecli inspect`` and ``tunecli tune`` on the file; both must refuse it the same
way (one set of rules) before anything is built, measured or logged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tunecli.engine.job.tuning_spec import max_builders
from tunecli.engine.ops.registry import builtin_names

from .conftest import Invoke

#: What ``measure.builder.n_parallel`` may be on this machine.
BUILDERS = max_builders()

GOOD = "name: g\ntasks:\n  - template: dense.x86\n    args: {M: 16, N: 16, K: 16}\n"
CONV = ("name: g\ntasks:\n  - template: conv2d_nchw.x86\n"
        "    args: {N: 1, H: 8, W: 8, CI: 4, CO: 4, KH: 3, KW: 3, stride: 1, padding: 1, dilation: 1}\n")
DW = ("name: g\ntasks:\n  - template: depthwise_conv2d_nchw.x86\n"
      "    args: {N: 1, H: 8, W: 8, C: 4, multiplier: 1, KH: 3, KW: 3, stride: 1, padding: 1}\n")


def aliases(levels: int, width: int) -> str:
    """A "billion laughs" document: each anchor lists the one before ``width`` times."""
    lines = ["l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


CASES = [
    # (id, the job file, the problems printed after "error: job.yaml", one per line)
    # --- the file itself
    ('empty', "",
     [': the job file is empty']),
    ('only_comments', "# nothing here\n",
     [': the job file is empty']),
    ('binary_garbage', bytes(range(128, 256)) * 8,
     [':1: not UTF-8 text (byte 0x80); save the job file as UTF-8']),
    ('latin1', "name: caf\xe9\n".encode("latin-1"),
     [':1: not UTF-8 text (byte 0xe9); save the job file as UTF-8']),
    ('utf16', GOOD.encode("utf-16"),
     [':1: not UTF-8 text (byte 0xff); save the job file as UTF-8']),
    ('nul_byte', b"name: a\x00b\n",
     [":1: the job file contains the control character '\\x00' (a job file is text)"]),
    ('control_char', b"name: g\ntarget: llvm\x07\n",
     [":2: the job file contains the control character '\\x07' (a job file is text)"]),
    ('larger_than_1mib', "# " + "x" * (1 << 20) + "\n",
     [': the job file is larger than 1 MiB']),
    ('too_many_values', "name: g\nx: [" + "1, " * 30000 + "1]\n",
     [':2: more than 20000 values']),
    ('brackets_nested_deep', "name: g\ntasks: " + "[" * 5000 + "]" * 5000 + "\n",
     [':2: lists and mappings nested more than 32 levels deep']),
    ('mappings_nested_deep', "name: g\n" + "".join(" " * i + f"k{i}:\n" for i in range(60)),
     [':34: lists and mappings nested more than 32 levels deep']),
    ('billion_laughs', aliases(9, 9),
     [':5: YAML aliases expand to more than 20000 values']),
    ('billion_laughs_in_args', aliases(6, 10) + GOOD.replace("{M: 16, N: 16, K: 16}", "[*l5, 1, 1]"),
     [':5: YAML aliases expand to more than 20000 values']),
    ('alias_to_itself', "name: g\ntasks: &a [*a]\n",
     [':2: a YAML alias refers to the value that contains it']),
    ('two_documents', GOOD + "---\n" + GOOD,
     [':5: invalid YAML: expected a single document in the stream, but found another document']),
    ('unclosed_bracket', "name: g\ntasks: [\n",
     [":3: invalid YAML: expected the node content, but found '<stream end>'"]),
    ('unclosed_brace_next_line', GOOD.replace("K: 16}", "K: 16") + "tuner: {}\n",
     [":5: invalid YAML: expected ',' or '}', but got ':' (while parsing a flow mapping on line 4)"]),
    ('tab_indent', "name: g\ntasks:\n\t- template: dense.x86\n",
     [":3: invalid YAML: found character '\\t' that cannot start any token"]),
    ('bad_indent', GOOD + " oops: 1\n",
     [":5: invalid YAML: expected <block end>, but found '<block mapping start>'"]),
    ('undefined_alias', GOOD + "tuner: *nothing\n",
     [":5: invalid YAML: found undefined alias 'nothing'"]),
    ('top_is_list', "- name: g\n",
     [':1: expected a mapping, got a list']),
    ('top_is_scalar', "hello\n",
     [":1: expected a mapping, got 'hello'"]),
    # --- keys
    ('duplicate_top_key', GOOD + "name: h\n",
     [':5: name: duplicate field']),
    ('duplicate_task_key', GOOD + "    template: dense.x86\n",
     [':5: tasks[0].template: duplicate field']),
    ('unknown_top_key', GOOD + "tunr: {kind: xgb}\n",
     [':5: tunr: unknown field (expected one of: name, target, log, tasks, model, ops, graph_tuner, tuner, '
      "measure, cluster); did you mean 'tuner'?"]),
    ('unknown_task_key', GOOD + "    shape: [1]\n",
     [':5: tasks[0].shape: unknown field (expected one of: template, args, weight)']),
    ('unknown_tuner_key', GOOD + "tuner: {n_trials: 5}\n",
     [':5: tuner.n_trials: unknown field (expected one of: kind, n_trial, early_stopping, seed, budget, '
      'task_scheduler, remeasure, rematch, plan_size, feature_type, loss_type, num_threads, '
      "diversity_filter_ratio, log_interval, rerank_factor, first_fit, min_seed_records); did you mean "
      "'n_trial'?"]),
    ('unknown_measure_key', GOOD + "measure: {builer: {}}\n",
     [":5: measure.builer: unknown field (expected one of: builder, runner); did you mean 'builder'?"]),
    ('unknown_builder_key', GOOD + "measure: {builder: {n_paralel: 2}}\n",
     [':5: measure.builder.n_paralel: unknown field (expected one of: timeout, n_parallel); did you '
      "mean 'n_parallel'?"]),
    ('unknown_runner_key', GOOD + "measure: {runner: {numbr: 2}}\n",
     [':5: measure.runner.numbr: unknown field (expected one of: kind, number, repeat, min_repeat_ms, '
      'timeout, enable_cpu_cache_flush, warmup_ms, cooldown_interval, check_correctness); did you mean '
      "'number'?"]),
    ('integer_key', GOOD + "1: x\n",
     [":5: keys must be names, got '1'"]),
    ('list_key', GOOD + "? [a]\n: x\n",
     [':5: keys must be names, got a list']),
    ('merge_key', GOOD + "tuner:\n  <<: {kind: random}\n",
     [':6: tuner: YAML merge keys (<<) are not supported: write the fields out']),
    # --- name and log
    ('missing_name', GOOD.replace("name: g\n", ""),
     [":1: missing required field 'name'"]),
    ('name_number', GOOD.replace("name: g", "name: 42"),
     [":1: name: expected a string, got '42'"]),
    ('name_yaml_bool', GOOD.replace("name: g", "name: no"),
     [":1: name: expected a string, got 'no'"]),
    ('name_empty', GOOD.replace("name: g", "name: ''"),
     [':1: name: expected a non-empty string']),
    ('name_null', GOOD.replace("name: g", "name:"),
     [':1: name: expected a string, got nothing']),
    ('name_with_slash', GOOD.replace("name: g", "name: ../x"),
     [":1: name: expected a name made of letters, digits, '_', '.', '-', got '../x'"]),
    ('name_300_chars', GOOD.replace("name: g", "name: " + "n" * 300),
     [':1: name: expected a name of at most 128 characters (it names the log file), got 300']),
    ('log_number', GOOD + "log: 5\n",
     [":5: log: expected a string, got '5'"]),
    ('log_is_directory', GOOD + "log: logdir\n",
     [':5: log: logdir: is a directory, not a log file']),
    ('log_is_fifo', GOOD + "log: fifo.log\n",
     [':5: log: fifo.log: is not a regular file (a FIFO or a device cannot be a log)']),
    ('log_under_a_file', GOOD + "log: blocker/x.log\n",
     [':5: log: blocker/x.log: blocker is not a directory']),
    ('log_name_300_chars', GOOD + "log: " + "l" * 300 + ".log\n",
     [":5: log: " + "l" * 300 + ".log: a file name in the path is longer than 255 bytes"]),
    ('default_log_is_directory', GOOD.replace("name: g", "name: d"),
     [':1: name: the default log logs/d.log: is a directory, not a log file']),
    # --- target
    ('target_list', GOOD + "target: [llvm]\n",
     [':5: target: expected a string, got a list']),
    ('target_empty', GOOD + "target: ''\n",
     [':5: target: expected a non-empty string']),
    ('target_cuda_bad_arch', GOOD + "target: cuda -arch=90\n",
     [":5: target: codegen: '90' in target 'cuda -arch=90' is not an SM architecture such as sm_80"]),
    ('target_garbage', GOOD + "target: '%%%'\n",
     [":5: target: tunecli compiles for llvm, cuda, nvptx targets only, got '%%%'"]),
    ('target_without_kind', GOOD + "target: -mcpu=x\n",
     [":5: target: target string '-mcpu=x' must start with a kind such as 'llvm'"]),
    ('target_unknown_cpu', GOOD + "target: llvm -mcpu=nope\n",
     [":5: target: LLVM cannot compile for 'llvm -mcpu=nope': 'nope' is not a recognized processor for "
      "this target (ignoring processor); LLVM ERROR: 64-bit code requested on a subtarget that doesn't "
      'support it!']),
    ('target_other_machine', GOOD + "target: llvm -mtriple=aarch64-linux-gnu\n",
     [":5: target: code for 'llvm -mtriple=aarch64-linux-gnu' cannot run on this machine: measure it "
      'on a device with `runner: {kind: rpc, key: ..., tracker: HOST:PORT}`']),
    # --- tasks and templates
    ('missing_tasks', "name: g\n",
     [":1: missing required field 'tasks' (or 'model', a network to tune)"]),
    ('tasks_mapping', "name: g\ntasks: {template: dense.x86}\n",
     [':2: tasks: expected a list, got a mapping']),
    ('tasks_scalar', "name: g\ntasks: dense.x86\n",
     [":2: tasks: expected a list, got 'dense.x86'"]),
    ('tasks_empty', "name: g\ntasks: []\n",
     [':2: tasks: expected at least one task']),
    ('tasks_null', "name: g\ntasks:\n",
     [':2: tasks: expected a list, got nothing']),
    ('task_scalar', "name: g\ntasks: [dense.x86]\n",
     [":2: tasks[0]: expected a mapping, got 'dense.x86'"]),
    ('task_without_template', "name: g\ntasks:\n  - args: [1, 2, 3]\n",
     [":3: tasks[0]: missing required field 'template'"]),
    ('template_typo_key', GOOD.replace("- template", "- templat"),
     [":3: tasks[0].templat: unknown field (expected one of: template, args, weight); "
      "did you mean 'template'?",
      ":3: tasks[0]: missing required field 'template'"]),
    ('template_unknown', GOOD.replace("dense.x86", "dense.x68"),
     [f":3: tasks[0].template: unknown template 'dense.x68' (built-in templates: "
      f'{", ".join(builtin_names())}; or use "path/to/file.py:function")']),
    ('template_empty', GOOD.replace("dense.x86", "''"),
     [':3: tasks[0].template: expected a non-empty string']),
    ('template_number', GOOD.replace("dense.x86", "5"),
     [":3: tasks[0].template: expected a string, got '5'"]),
    ('template_name_5000_chars', GOOD.replace("dense.x86", "x" * 5000),
     [':3: tasks[0].template: unknown template '
      "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (built-in templates: "
      f'{", ".join(builtin_names())}; or use "path/to/file.py:function")']),
    ('template_with_nul_escape', GOOD.replace("dense.x86", '"a\\0b.py:f"'),
     [":3: tasks[0].template: expected text without control characters, got 'a\\x00b.py:f'"]),
    ('template_file_missing', GOOD.replace("dense.x86", "nope.py:f"),
     [":3: tasks[0].template: no such template file 'nope.py'"]),
    ('template_file_is_directory', GOOD.replace("dense.x86", "dirmod.py:f"),
     [":3: tasks[0].template: no such template file 'dirmod.py'"]),
    ('template_file_syntax_error', GOOD.replace("dense.x86", "syntax.py:f"),
     [':3: tasks[0].template: importing syntax.py failed: SyntaxError: invalid syntax (syntax.py, line 1)']),
    ('template_file_exits', GOOD.replace("dense.x86", "exits.py:f"),
     [':3: tasks[0].template: importing exits.py failed: SystemExit: 3']),
    ('template_function_missing', GOOD.replace("dense.x86", "raises.py:nothing"),
     [":3: tasks[0].template: raises.py has no function 'nothing'"]),
    ('template_not_decorated', GOOD.replace("dense.x86", "raises.py:plain"),
     [':3: tasks[0].template: raises.py:plain is not decorated with @autotvm.template("name")']),
    ('template_raises', "name: g\ntasks:\n  - template: raises.py:f\n    args: [4]\n",
     [":4: tasks[0].args: template bad_jobs/raises rejects (4): KeyError: 'x'"]),
    ('template_wrong_arity', "name: g\ntasks:\n  - template: raises.py:f\n    args: [4, 5]\n",
     [':4: tasks[0].args: template bad_jobs/raises(n): too many positional arguments']),
    ('duplicate_task', GOOD + "  - template: dense.x86\n    args: [16, 16, 16]\n",
     [":5: tasks[1]: the same task as tasks[0] (dense.x86(16, 16, 16, 'float32'))"]),
    # --- template arguments
    ('args_scalar', GOOD.replace("{M: 16, N: 16, K: 16}", "16"),
     [":4: tasks[0].args: expected a mapping or a list, got '16'"]),
    ('args_missing', GOOD.replace("{M: 16, N: 16, K: 16}", "{M: 16}"),
     [":4: tasks[0].args: dense.x86: missing arguments ['N', 'K']; expected ('M', 'N', 'K', 'dtype')"]),
    ('args_unknown', GOOD.replace("K: 16}", "K: 16, Q: 1}"),
     [":4: tasks[0].args: dense.x86: unknown arguments ['Q']; expected ('M', 'N', 'K', 'dtype')"]),
    ('args_too_many', GOOD.replace("{M: 16, N: 16, K: 16}", "[1, 2, 3, float32, 5]"),
     [":4: tasks[0].args: dense.x86: 5 arguments given, expected ('M', 'N', 'K', 'dtype')"]),
    ('args_negative', GOOD.replace("M: 16", "M: -16"),
     [":4: tasks[0].args: template dense.x86 rejects (-16, 16, 16, 'float32'): placeholder data: shape "
      'entries must be positive, got (-16, 16)']),
    ('args_zero', GOOD.replace("M: 16", "M: 0"),
     [":4: tasks[0].args: template dense.x86 rejects (0, 16, 16, 'float32'): placeholder data: shape "
      'entries must be positive, got (0, 16)']),
    ('args_float', GOOD.replace("M: 16", "M: 16.5"),
     [":4: tasks[0].args: template dense.x86 rejects (16.5, 16, 16, 'float32'): placeholder data: "
      'shape entry 16.5 is not an integer']),
    ('args_string', GOOD.replace("M: 16", "M: big"),
     [":4: tasks[0].args: template dense.x86 rejects ('big', 16, 16, 'float32'): placeholder data: "
      "shape entries must be integer constants, got 'big'"]),
    ('args_yes', GOOD.replace("M: 16", "M: yes"),
     [":4: tasks[0].args: template dense.x86 takes sizes, not true (YAML reads true/false, yes/no, on/off "
      "as booleans)"]),
    ('args_list', GOOD.replace("M: 16", "M: [1, 2]"),
     [":4: tasks[0].args: template dense.x86 rejects ((1, 2), 16, 16, 'float32'): placeholder data: "
      'shape entries must be integer constants, got (1, 2)']),
    ('args_mapping', GOOD.replace("M: 16", "M: {a: 1}"),
     [':4: tasks[0].args.M: expected a number, a string or a list, got a mapping']),
    ('args_null', GOOD.replace("M: 16", "M:"),
     [':4: tasks[0].args.M: expected a number, a string or a list, got nothing']),
    ('args_infinite', GOOD.replace("M: 16", "M: .inf"),
     [':4: tasks[0].args.M: expected a finite number, got .inf']),
    ('args_timestamp', GOOD.replace("M: 16", "M: 2001-01-01"),
     [":4: tasks[0].args.M: expected a number, a string or a list, got '2001-01-01'"]),
    ('args_binary', GOOD.replace("M: 16", "M: !!binary aGVsbG8="),
     [":4: tasks[0].args.M: expected a number, a string or a list, got 'aGVsbG8='"]),
    ('args_python_tag', GOOD.replace("M: 16", "M: !!python/object:os.system x"),
     [":4: tasks[0].args.M: cannot read 'x' tagged !!python/object:os.system: could not determine a "
      "constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"]),
    ('args_bad_float_tag', GOOD.replace("M: 16", "M: !!float abc"),
     [":4: tasks[0].args.M: cannot read 'abc' tagged !!float: could not convert string to float: 'abc'"]),
    ('args_bad_int_tag', GOOD.replace("M: 16", "M: !!int abc"),
     [":4: tasks[0].args.M: cannot read 'abc' tagged !!int: invalid literal for int() with base 10: 'abc'"]),
    ('args_20_digits', GOOD.replace("M: 16", "M: 99999999999999999999"),
     [':4: tasks[0].args: 99999999999999999999 is beyond what 32-bit indexing addresses (sizes up to '
      '2147483647)']),
    ('args_1e6_cubed', GOOD.replace("{M: 16, N: 16, K: 16}", "{M: 1000000, N: 1000000, K: 1000000}"),
     [":4: tasks[0].args: template dense.x86(1000000, 1000000, 1000000, 'float32'): tensor "
      'data[1000000, 1000000] has 1000000000000 elements, more than 32-bit indexing addresses '
      '(2147483647)']),
    ('args_output_too_large', GOOD.replace("{M: 16, N: 16, K: 16}", "{M: 100000, N: 100000, K: 1}"),
     [":4: tasks[0].args: template dense.x86(100000, 100000, 1, 'float32'): tensor "
      'T_dense_pack[100000, 100000] has 10000000000 elements, more than 32-bit indexing addresses '
      '(2147483647)']),
    ('args_unknown_dtype', GOOD.replace("K: 16}", "K: 16, dtype: float8}"),
     [":4: tasks[0].args: template dense.x86 rejects (16, 16, 16, 'float8'): unsupported dtype 'float8'"]),
    ('args_dtype_number', GOOD.replace("K: 16}", "K: 16, dtype: 32}"),
     [':4: tasks[0].args: template dense.x86 rejects (16, 16, 16, 32): unknown dtype 32: expected e.g. '
      'float32, float64, int32, int8, bool']),
    ('conv_dilation_0', CONV.replace("dilation: 1", "dilation: 0"),
     [":4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, 1, 1, 0, 'float32'): "
      'dilation must be at least 1, got 0']),
    ('conv_stride_0', CONV.replace("stride: 1", "stride: 0"),
     [":4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, 0, 1, 1, 'float32'): "
      'stride must be at least 1, got 0']),
    ('conv_stride_float', CONV.replace("stride: 1", "stride: [1.5, 1]"),
     [':4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, (1.5, 1), 1, 1, '
      "'float32'): stride must be an int or a pair of ints, got (1.5, 1)"]),
    ('conv_padding_negative', CONV.replace("padding: 1", "padding: -5"),
     [":4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, 1, -5, 1, 'float32'): "
      'padding must not be negative, got -5']),
    ('conv_padding_unknown', CONV.replace("padding: 1", "padding: FOO"),
     [":4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 3, 3, 1, 'FOO', 1, "
      "'float32'): unknown padding option 'FOO'"]),
    ('conv_window_too_large', CONV.replace("KH: 3", "KH: 30"),
     [":4: tasks[0].args: template conv2d_nchw.x86 rejects (1, 8, 8, 4, 4, 30, 3, 1, 1, 1, 'float32'): "
      'window (30, 3) (dilation 1) does not fit input (8, 8) with padding 1']),
    ('depthwise_multiplier_0', DW.replace("multiplier: 1", "multiplier: 0"),
     [':4: tasks[0].args: template depthwise_conv2d_nchw.x86 rejects (1, 8, 8, 4, 0, 3, 3, 1, 1, 1, '
      "'float32'): placeholder kernel: shape entries must be positive, got (4, 0, 3, 3)"]),
    # --- tuner
    ('tuner_list', GOOD + "tuner: [xgb]\n",
     [':5: tuner: expected a mapping, got a list']),
    ('tuner_kind_unknown', GOOD + "tuner: {kind: annealing}\n",
     [":5: tuner.kind: expected one of random, gridsearch, ga, xgb, got 'annealing'"]),
    ('n_trial_string', GOOD + "tuner: {n_trial: many}\n",
     [":5: tuner.n_trial: expected an integer, got 'many'"]),
    ('n_trial_float', GOOD + "tuner: {n_trial: 10.5}\n",
     [":5: tuner.n_trial: expected an integer, got '10.5'"]),
    ('n_trial_exponent', GOOD + "tuner: {n_trial: 1e3}\n",
     [":5: tuner.n_trial: expected an integer, got '1e3'"]),
    ('n_trial_bool', GOOD + "tuner: {n_trial: true}\n",
     [":5: tuner.n_trial: expected an integer, got 'true'"]),
    ('n_trial_zero', GOOD + "tuner: {n_trial: 0}\n",
     [':5: tuner.n_trial: expected an integer >= 1, got 0']),
    ('remeasure_negative', GOOD + "tuner: {remeasure: -2}\n",
     [':5: tuner.remeasure: expected an integer >= 0, got -2']),
    ('remeasure_float', GOOD + "tuner: {remeasure: 1.5}\n",
     [":5: tuner.remeasure: expected an integer, got '1.5'"]),
    ('seed_negative', GOOD + "tuner: {seed: -1}\n",
     [':5: tuner.seed: expected an integer >= 0, got -1']),
    ('early_stopping_zero', GOOD + "tuner: {early_stopping: 0}\n",
     [':5: tuner.early_stopping: expected an integer >= 1, got 0']),
    ('ga_pop_size_zero', GOOD + "tuner: {kind: ga, pop_size: 0}\n",
     [':5: tuner.pop_size: expected an integer >= 1, got 0']),
    ('ga_elite_over_pop', GOOD + "tuner: {kind: ga, pop_size: 2, elite_num: 5}\n",
     [':5: tuner.elite_num: elite_num (5) must not exceed pop_size (2)']),
    ('ga_mutation_nan', GOOD + "tuner: {kind: ga, mutation_prob: .nan}\n",
     [':5: tuner.mutation_prob: expected a finite number, got .nan']),
    ('ga_mutation_over_1', GOOD + "tuner: {kind: ga, mutation_prob: 2}\n",
     [':5: tuner.mutation_prob: expected a number between 0 and 1, got 2']),
    ('xgb_feature_unknown', GOOD + "tuner: {feature_type: pixels}\n",
     [":5: tuner.feature_type: expected one of knob, itervar, curve, got 'pixels'"]),
    ('option_of_another_tuner', GOOD + "tuner: {kind: random, plan_size: 4}\n",
     [':5: tuner.plan_size: unknown field (expected one of: kind, n_trial, early_stopping, seed, budget, '
      'task_scheduler, remeasure, rematch)']),
    # --- measure
    ('measure_scalar', GOOD + "measure: fast\n",
     [":5: measure: expected a mapping, got 'fast'"]),
    ('builder_timeout_string', GOOD + "measure: {builder: {timeout: soon}}\n",
     [":5: measure.builder.timeout: expected a number, got 'soon'"]),
    ('builder_timeout_negative', GOOD + "measure: {builder: {timeout: -1}}\n",
     [':5: measure.builder.timeout: expected a number > 0, got -1']),
    ('builder_timeout_infinite', GOOD + "measure: {builder: {timeout: .inf}}\n",
     [':5: measure.builder.timeout: expected a finite number, got .inf']),
    ('builder_timeout_1e300', GOOD + "measure: {builder: {timeout: 1e300}}\n",
     [':5: measure.builder.timeout: expected a number <= 86400, got 1e+300']),
    ('n_parallel_100000', GOOD + "measure: {builder: {n_parallel: 100000}}\n",
     [f":5: measure.builder.n_parallel: expected an integer between 1 and {BUILDERS} (4 x the "
      f"{BUILDERS // 4} cores of this machine), got 100000"]),
    ('n_parallel_zero', GOOD + "measure: {builder: {n_parallel: 0}}\n",
     [':5: measure.builder.n_parallel: expected an integer >= 1, got 0']),
    ('n_parallel_float', GOOD + "measure: {builder: {n_parallel: 2.5}}\n",
     [":5: measure.builder.n_parallel: expected an integer, got '2.5'"]),
    ('runner_kind_unknown', GOOD + "measure: {runner: {kind: ssh}}\n",
     [":5: measure.runner.kind: expected one of local, rpc, got 'ssh'"]),
    ('rpc_without_key_and_tracker', GOOD + "measure: {runner: {kind: rpc}}\n",
     [":5: measure.runner: missing required field 'key' (runner kind rpc)",
      ":5: measure.runner: missing required field 'tracker' (runner kind rpc)"]),
    ('rpc_tracker_malformed', GOOD + "measure: {runner: {kind: rpc, key: k, tracker: nowhere}}\n",
     [":5: measure.runner.tracker: expected HOST:PORT (e.g. 127.0.0.1:9190), got 'nowhere'"]),
    ('rpc_tracker_port_99999', GOOD + "measure: {runner: {kind: rpc, key: k, tracker: 'h:99999'}}\n",
     [":5: measure.runner.tracker: expected HOST:PORT (e.g. 127.0.0.1:9190), got 'h:99999'"]),
    ('rpc_check_correctness_number',
     GOOD + "measure: {runner: {kind: rpc, key: k, tracker: 'h:1', check_correctness: 1}}\n",
     [":5: measure.runner.check_correctness: expected true or false, got '1'"]),
    ('rpc_priority_string', GOOD + "measure: {runner: {kind: rpc, key: k, tracker: 'h:1', priority: high}}\n",
     [":5: measure.runner.priority: expected an integer, got 'high'"]),
    ('number_zero', GOOD + "measure: {runner: {number: 0}}\n",
     [':5: measure.runner.number: expected an integer >= 1, got 0']),
    ('runner_timeout_nan', GOOD + "measure: {runner: {timeout: .nan}}\n",
     [':5: measure.runner.timeout: expected a finite number, got .nan']),
    ('cooldown_1e300', GOOD + "measure: {runner: {cooldown_interval: 1e300}}\n",
     [':5: measure.runner.cooldown_interval: expected a number between 0 and 86400, got 1e+300']),
    ('warmup_negative', GOOD + "measure: {runner: {warmup_ms: -1}}\n",
     [':5: measure.runner.warmup_ms: expected a number >= 0, got -1']),
    ('check_correctness_number', GOOD + "measure: {runner: {check_correctness: 1}}\n",
     [":5: measure.runner.check_correctness: expected true or false, got '1'"]),
    # --- several at once
    ('many_mistakes',
     "name: 7\ntasks:\n  - templat: dense.x86\ntuner: {n_trial: -3, kind: ga, pop_size: x}\n"
     "measure: {runner: {number: 0}, builder: {n_parallel: 100000}}\n",
     [":1: name: expected a string, got '7'",
      ":3: tasks[0].templat: unknown field (expected one of: template, args, weight); "
      "did you mean 'template'?",
      ":3: tasks[0]: missing required field 'template'",
      ":4: tuner.pop_size: expected an integer, got 'x'",
      ':4: tuner.n_trial: expected an integer >= 1, got -3',
      f":5: measure.builder.n_parallel: expected an integer between 1 and {BUILDERS} (4 x the "
      f"{BUILDERS // 4} cores of this machine), got 100000",
      ':5: measure.runner.number: expected an integer >= 1, got 0']),
    ('missing_name_and_unknown_key', "tasks:\n  - template: dense.x86\n    args: [8, 8, 8]\n    templat: x\n",
     [":1: missing required field 'name'",
      ":4: tasks[0].templat: unknown field (expected one of: template, args, weight); "
      "did you mean 'template'?"]),
    # --- every problem listed, not only the first (issue 27 item 6)
    ('bad_args_and_bad_n_trial', "name: g\ntasks:\n  - template: dense.x86\n"
     "    args: {M: many, N: 16, K: 16}\ntuner: {n_trial: ten}\n",
     [":5: tuner.n_trial: expected an integer, got 'ten'",
      ":4: tasks[0].args: template dense.x86 rejects ('many', 16, 16, 'float32'): placeholder data: shape "
      "entries must be integer constants, got 'many'"]),
    ('bad_batch_and_bad_image',
     "name: g\nmodel: {name: resnet-18, batch_size: -1, image_shape: [3, 0, 224]}\n",
     [":2: model.batch_size: expected an integer >= 1, got -1",
      ":2: model.image_shape[1]: expected an integer >= 1, got 0"]),
    ('bad_model_fields_all_named', "name: g\nmodel: {name: resnet-18, batch_size: 0, dtype: float99}\n",
     [":2: model.batch_size: expected an integer >= 1, got 0",
      ":2: model.dtype: expected one of float32, float64, got 'float99'"]),
    ('unknown_tuner_and_its_bad_fields', GOOD + "tuner: {kind: foo, n_trial: ten, seed: x}\n",
     [":5: tuner.kind: expected one of random, gridsearch, ga, xgb, got 'foo'",
      ":5: tuner.n_trial: expected an integer, got 'ten'",
      ":5: tuner.seed: expected an integer, got 'x'"]),
    ('bad_args_and_bad_weight_of_one_task', "name: g\ntasks:\n  - template: dense.x86\n    args: x\n"
     "    weight: -1\n",
     [":4: tasks[0].args: expected a mapping or a list, got 'x'",
      ":5: tasks[0].weight: expected a number > 0, got -1"]),
    ('two_tasks_one_bad_beside_a_bad_tuner',
     GOOD + "  - template: dense.x86\n    args: {M: 16, N: 16, K: 0}\ntuner: {early_stopping: 0}\n",
     [":7: tuner.early_stopping: expected an integer >= 1, got 0",
      ":6: tasks[1].args: template dense.x86 rejects (16, 16, 0, 'float32'): placeholder data: shape "
      "entries must be positive, got (16, 0)"]),
]



@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Template files, made once: a template name is registered once per process."""
    root = tmp_path_factory.mktemp("templates")
    (root / "syntax.py").write_text("def f(:\n")
    (root / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (root / "raises.py").write_text(
        "from tunecli import autotvm\n\n\ndef plain(n):\n    return n\n\n\n"
        "@autotvm.template('bad_jobs/raises')\ndef f(n):\n    return {}['x']\n")
    return root


@pytest.fixture()
def workdir(tmp_path: Path, templates: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory to run in, with the files the cases refer to."""
    monkeypatch.chdir(tmp_path)
    for template in templates.glob("*.py"):
        (tmp_path / template.name).symlink_to(template)
    (tmp_path / "dirmod.py").mkdir()
    (tmp_path / "logdir").mkdir()
    os.mkfifo(tmp_path / "fifo.log")
    (tmp_path / "blocker").write_text("")
    (tmp_path / "logs" / "d.log").mkdir(parents=True)
    return tmp_path


def _listing(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.parametrize(("text", "problems"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_job_is_refused_with_every_problem_named(invoke: Invoke, workdir: Path, text: str | bytes,
                                                     problems: list[str]) -> None:
    job = workdir / "job.yaml"
    job.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = _listing(workdir)
    for command in ("inspect", "tune"):
        result = invoke(command, "job.yaml")
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr == "".join(f"error: job.yaml{problem}\n" for problem in problems), command
        assert result.stdout == ""
    assert _listing(workdir) == before  # no log, no lock


def test_there_are_many_kinds() -> None:
    assert len(CASES) >= 100
    assert len({case[0] for case in CASES}) == len(CASES)


@pytest.mark.parametrize(("path", "click_says", "tune_says"), [
    ("nope.yaml", "does not exist", "no such job file"),
    ("logdir", "is a directory", None),
    ("blocker/job.yaml", "does not exist", "no such job file"),
])
def test_job_path_that_is_not_a_file(invoke: Invoke, workdir: Path, path: str, click_says: str,
                                     tune_says: str | None) -> None:
    inspect = invoke("inspect", path)  # PATH must exist (a job or a log)
    assert inspect.exit_code == 2
    assert f"Invalid value for 'PATH': File '{path}' {click_says}." in inspect.stderr
    tune = invoke("tune", path)
    assert tune.exit_code == 2
    if tune_says is None:
        assert f"Invalid value for 'JOB': File '{path}' {click_says}." in tune.stderr
    else:
        assert tune.stderr == f"error: {path}: {tune_says}\n"


def test_unreadable_job_file(invoke: Invoke) -> None:
    # /proc/self/mem exists but cannot be read from its start, even by root
    result = invoke("tune", "/proc/self/mem")
    assert (result.exit_code, result.stderr) == (
        2, "error: /proc/self/mem: cannot read the job file: Input/output error\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_job_file_without_read_permission(invoke: Invoke, workdir: Path) -> None:
    job = workdir / "secret.yaml"
    job.write_text("name: g\n")
    job.chmod(0)
    result = invoke("tune", str(job))
    assert (result.exit_code, result.stderr) == (
        2, f"error: {job}: cannot read the job file: Permission denied\n")


def test_a_log_that_is_not_a_regular_file_is_named_so_by_every_command(invoke: Invoke, workdir: Path) -> None:
    (workdir / "job.yaml").write_text(GOOD)
    message = "fifo.log: is not a regular file (a FIFO or a device cannot be a log)\n"
    for command in (["best", "fifo.log"], ["inspect", "fifo.log"], ["apply", "job.yaml", "--log", "fifo.log"],
                    ["tune", "job.yaml", "--log", "fifo.log"]):
        result = invoke(*command)
        assert result.exit_code == 2 and result.stderr.endswith(message), (command, result.stderr)
    assert not (workdir / "fifo.log.lock").exists()


def test_endless_and_looping_job_paths(invoke: Invoke, workdir: Path) -> None:
    result = invoke("tune", "/dev/zero")  # read up to the limit, not forever
    assert (result.exit_code, result.stderr) == (2, "error: /dev/zero: the job file is larger than 1 MiB\n")
    (workdir / "loop.yaml").symlink_to("loop.yaml")
    result = invoke("tune", "loop.yaml")
    assert (result.exit_code, result.stderr) == (
        2, "error: loop.yaml: cannot read the job file: Too many levels of symbolic links\n")


@pytest.mark.parametrize("first_line", [
    '{"input": ["llvm", "t", [], {}], "config": {"index": 1}, "result": [[1e-3], 0, 0.1, 1.0], '
    '"version": 0.2, "tvm_version": "0.14.0"}',
    '{"i": ["llvm", "t", [], {}, [], {"i": 1}], "r": [[1e-3], 0, 0.1, 1.0], "v": 0.1}',
])
def test_a_log_passed_as_a_job_is_named_a_log(invoke: Invoke, workdir: Path, first_line: str) -> None:
    log = workdir / "small.log"
    log.write_text(f"# tuned on the host\n{first_line}\n{first_line}\n")
    result = invoke("tune", str(log))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {log}: is a tuning log (records of measured configs), not a job "
                                    f"file: `tunecli best {log}` shows its best configs")
    assert "invalid YAML" not in result.stderr
    assert log.read_text().count("\n") == 3
