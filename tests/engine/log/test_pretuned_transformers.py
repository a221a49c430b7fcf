"""The shipped package serves the transformers: an untuned build of BERT-base, GPT-2 and ViT-B/16
(one layer each, the full widths: the workloads of the full models) takes every dense and batched
product config from the package's records (the x86 records of ``jobs/bert.yaml``, ``jobs/gpt2.yaml``
and ``jobs/vit_b16.yaml``, answering any ``llvm`` target through the key ``cpu``).  ViT's one-row
classifier has none: the package leaves out single-row dense records of transformers, which would
become the nearest records of the CNN classifiers.  ViT's patch embedding, a dense layer of its 196
patches (``PatchConvToDense``), takes the package's record of its 197-token layers as the nearest."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tunecli.engine.actions.inspect import inspect_network
from tunecli.engine.job.network import load_network
from tunecli.engine.job.spec import load_job
from tunecli.engine.log import tophub
from tunecli.engine.log.record import load_from_file

#: A dense layer of one row (a classifier): ``dense.x86(1, ...`` or ``dense_pack.x86(float32[1,768], ...``.
ONE_ROW = re.compile(r"dense(_pack)?\.x86\((float32\[)?1,")


#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def one_layer_job(tmp_path: Path, model: str) -> str:
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        name: one_layer
        target: llvm
        model: {{{model}, layers: 1}}
        ops: [dense, batch_matmul]
        log: {tmp_path / "none.log"}
        """))
    return str(job)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["name: bert-base, seq_len: 128", "name: gpt2, seq_len: 128",
                                   "name: vit-b16, image_shape: [3, 224, 224]"])
def test_an_untuned_transformer_build_takes_its_products_configs_from_the_package(tmp_path: Path, model: str):
    job = load_job(one_layer_job(tmp_path, model))
    view = inspect_network(job, load_network(job))
    ran = [t for t in view.tasks if t.config_source is not None and not ONE_ROW.match(t.label)]
    assert {t.label.split("(")[0] for t in ran} >= {"batch_matmul.x86"}
    assert any(t.label.startswith(("dense.x86", "dense_pack.x86")) for t in ran)
    patches = "dense.x86(196, 768, 768, float32)"
    assert all(t.config_source.startswith("package")
               or (t.label == patches and t.config_source.startswith("nearest: dense.x86(197, 768, 768")
                   and "(package" in t.config_source)
               for t in ran), [(t.label, t.config_source) for t in ran]


def test_the_package_holds_one_record_per_workload_and_cpu():
    records = [inp for inp, _ in load_from_file(tophub.SHIPPED_DIR / "llvm.log")]
    keys = [(str(inp.target), inp.task.workload) for inp in records]
    assert len(keys) == len(set(keys))
    # attention's products: BERT-base's and GPT-2's at sequence 128, ViT-B/16's at its 197 tokens
    rows = {inp.task.args[0][1][-2] for inp in records if inp.task.name == "batch_matmul.x86"}
    assert rows == {128, 197}
