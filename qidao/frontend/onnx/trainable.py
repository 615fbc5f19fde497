"""Initializers that a gradient is asked for become graph inputs.

``qidao.compile(model, grad=["fc.weight"])`` differentiates with respect to an
initializer: it must not fold into the code as a constant, so it is lifted out of the
model here, before the import, into a graph input of the same name, type and shape,
appended after the model's own inputs; its value is handed back and the compiled
model passes it on every call (``qidao.compiler.trainable``), so the call still takes
only the model's own inputs.

```python
proto, values = lift_initializers(proto, ["w"])   # w: an initializer of proto
# proto's inputs: x, w (w's type from the initializer); values == {"w": array}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from qidao.frontend.errors import OnnxImportError

Array = np.ndarray[Any, Any]


def lift_initializers(proto: Any, names: Sequence[str]) -> tuple[Any, dict[str, Array]]:
    """A copy of ``proto`` whose initializers named in ``names`` are graph inputs,
    and their values by name (names of graph inputs stay as they are; a name that is
    neither is an error listing both)."""
    graph = proto.graph
    initializers = {str(t.name): t for t in graph.initializer}
    inputs = [str(i.name) for i in graph.input]
    unknown = [n for n in names if n not in initializers and n not in inputs]
    if unknown:
        own = [n for n in inputs if n not in initializers]
        raise OnnxImportError(
            f"grad names {unknown}, which are neither graph inputs nor initializers "
            f"of the model; its inputs are {own} and its initializers "
            f"{sorted(initializers)}"
        )
    lifted = [n for n in names if n in initializers]
    if not lifted:
        return proto, {}
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    graph = proto.graph
    values: dict[str, Array] = {}
    for name in lifted:
        tensor = next(t for t in graph.initializer if t.name == name)
        values[name] = numpy_helper.to_array(tensor).copy()
        graph.initializer.remove(tensor)
        for old in [i for i in graph.input if i.name == name]:  # IR < 4 lists both
            graph.input.remove(old)
        graph.input.append(
            helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))
        )
    return proto, values
