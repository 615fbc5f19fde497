"""The zoo's models on the CUDA target without a GPU: launches, kernels, serial
launches, @main's intermediate buffers and the device's scratch buffers after reuse
(the "Whole models" figures of docs/gpu.md): .venv/bin/python scripts/gpu_models_plan.py"""

import qidao
from qidao.bench.cuda.models import BERT_TINY_B2, RESNET_TINY_B2
from qidao.bench.zoo_models import ZOO, onnx_path
from qidao.compiler.host import host_stats

for model in (ZOO["resnet50"], ZOO["bert"], RESNET_TINY_B2, BERT_TINY_B2):
    c = qidao.compile(onnx_path(model), target="cuda")
    main = host_stats(c.module("affine"))
    scratch = [b.nbytes for b in c.program.buffers if b.kind == "scratch"]
    print(
        f"{model.name}: {c.stats['launches']} launches of {c.stats['kernels']} kernels, "
        f"{len(c.stats['serial_launches'])} serial; @main: {main['buffers']} buffers; "
        f"device: {len(scratch)} scratch buffers, {sum(scratch)} bytes"
    )
