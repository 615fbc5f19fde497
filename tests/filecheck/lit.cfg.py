# lit configuration for qidao's IR tests: every .mlir file here is a test whose
# RUN lines pipe qidao-opt into filecheck (the Python port of LLVM's FileCheck).
import os
import shutil

import lit.formats

config.name = "qidao"  # noqa: F821
config.test_format = lit.formats.ShTest()  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.environment["PATH"] = os.environ["PATH"]  # noqa: F821
# the IR tests compile small models: never into the user's compile cache
config.environment["QIDAO_CACHE"] = "off"  # noqa: F821
for tool in ("qidao-opt", "filecheck"):
    if shutil.which(tool) is None:
        raise RuntimeError(
            f"lit: '{tool}' is not on PATH; install qidao with its dev extra"
        )
