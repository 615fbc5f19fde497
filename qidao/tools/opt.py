"""``qidao-opt``: xDSL's opt driver with the tg dialect and every qidao pass.

It behaves like ``mlir-opt``/``xdsl-opt`` (``-p`` pipelines, ``--print-between-passes``,
``--time-passes``, ``--split-input-file``, ``--verify-diagnostics``,
``--print-op-generic``) and adds MLIR's ``--print-ir-before=PASS``,
``--print-ir-after=PASS``, ``--print-ir-after-change`` and ``--print-ir-diff``
(``qidao.compiler.print_ir``). qidao's passes take precedence over xDSL's passes of
the same name.

A user error (an unknown pass or option: exit 2; input that does not parse or verify,
a schedule primitive that does not apply, a missing file: exit 1) prints one line,
``qidao-opt: error: <Class>: <message>``; ``--debug`` shows the traceback. An
internal error (an ``AssertionError`` from a pass) keeps its traceback: it is a bug.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.xdsl_opt_main import xDSLOptMain

from qidao.compiler.print_ir import IRPrinter, PrintIR
from qidao.dialects import all_dialects
from qidao.passes import all_passes


class QidaoOptMain(xDSLOptMain):
    def __init__(self, args: Sequence[str] | None = None) -> None:
        super().__init__(description="qidao modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in all_dialects().items():
            if name in self.ctx.registered_dialect_names:
                continue
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in all_passes().items():
            self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        for flag, what in (
            ("--print-ir-before", "before"),
            ("--print-ir-after", "after"),
        ):
            arg_parser.add_argument(
                flag,
                action="append",
                default=[],
                metavar="PASS",
                help=f"print the IR {what} each run of the named pass (repeatable)",
            )
        arg_parser.add_argument(
            "--print-ir-after-change",
            action="store_true",
            help="print the IR after every pass that changed it",
        )
        arg_parser.add_argument(
            "--print-ir-diff",
            action="store_true",
            help="print a changed IR as a unified diff against the IR before the pass",
        )

    def setup_pipeline(self) -> None:
        super().setup_pipeline()
        config = PrintIR(
            after_change=self.args.print_ir_after_change,
            diff=self.args.print_ir_diff,
            before=tuple(self.args.print_ir_before),
            after=tuple(self.args.print_ir_after),
        )
        try:
            config.check(self.available_passes, "qidao-opt")
        except ValueError as err:
            raise SystemExit(f"qidao-opt: {err}") from None
        if config == PrintIR():
            return
        printer = IRPrinter(config, _print_section)
        previous = self.pipeline.callback

        def callback(
            done: ModulePass | None, module: ModuleOp, upcoming: ModulePass | None
        ) -> None:
            if previous is not None:
                previous(done, module, upcoming)
            if done is None:
                printer.start(module)
            else:
                printer.after(done.name, module)
            if upcoming is not None:
                printer.before(upcoming.name, module)

        self.pipeline = type(self.pipeline)(self.pipeline.passes, callback)


def _print_section(title: str, text: str) -> None:
    print(f"// -----// {title} //----- //")
    if text:
        print(text.rstrip())


USAGE_ERROR = 2
"""The exit status of a bad command line: an unknown pass, a missing or malformed
pass option (``argparse``'s own)."""

ERROR = 1
"""The exit status of a module a pass refuses, or input that does not parse."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``qidao-opt``; a user error is one line on stderr, ``qidao-opt: error:
    <Class>: <message>``, and a non-zero exit (``--debug``: the traceback too)."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    stage = "pipeline"
    try:
        opt = QidaoOptMain(args=args)
        stage = "run"
        opt.run()
    except SystemExit:
        raise
    except BaseException as err:  # xDSL's ArgSpecParseError is a BaseException
        if debug or not _user_error(err):
            raise
        print(f"qidao-opt: error: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(USAGE_ERROR if stage == "pipeline" else ERROR)


def _user_error(err: BaseException) -> bool:
    """Whether ``err`` is the user's (a bad pipeline, file, input or schedule), not
    a bug of qidao's (those keep their traceback)."""
    from qidao.errors import QidaoError

    name = type(err).__name__
    return isinstance(
        err, QidaoError | ValueError | OSError | UnicodeDecodeError
    ) or name.endswith(("ParseError", "DiagnosticException", "VerifyException"))


if __name__ == "__main__":
    main(sys.argv[1:])
