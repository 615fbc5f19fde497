"""``qidao cache info`` and ``qidao cache clear``: the compile cache's folder, its
entries and size, and anything in it that qidao did not make; clear removes only
the entries (``qidao.compiler.cache``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def cmd_cache(args: argparse.Namespace) -> int:
    return cache_command(args.action)


def cache_command(action: str) -> int:
    """``qidao cache info`` / ``qidao cache clear``: prints, and returns the exit
    status."""
    from qidao.compiler.cache import CompileCache, cache_enabled
    from qidao.compiler.conv_algo import recorded_count, records_path

    cache = CompileCache()
    algo_records = records_path()
    if action == "clear":
        cleared = cache.clear()
        if cleared.refused:
            print(f"qidao cache: not cleared: {cleared.refused}", file=sys.stderr)
            return 1
        entries = f"entr{'y' if cleared.removed == 1 else 'ies'}"
        print(f"removed {cleared.removed} {entries} from {cache.root}")
        if cleared.left:
            print(f"left {_listed(cleared.left)}")
        if algo_records.is_file() and not algo_records.is_symlink():
            algo_records.unlink()
            print(f"removed the measured convolution algorithms ({algo_records})")
        return 0
    info = cache.info()
    state = "on" if cache_enabled() else "off (QIDAO_CACHE)"
    if info["problem"]:
        state = f"off: {info['problem']}"
    print(f"path:    {info['path']}")
    print(f"entries: {info['entries']}")
    print(f"size:    {info['bytes'] / 2**20:.1f} MiB")
    print(f"cache:   {state}")
    if info["other"]:
        print(f"other:   {_listed(info['other'])}")
    lines = recorded_count()
    if lines:
        print(f"algo:    {lines} measured convolution(s) in {algo_records}")
    return 0


def _listed(names: list[str], most: int = 10) -> str:
    more = " ..." if len(names) > most else ""
    return f"{len(names)} item(s) qidao did not make: {', '.join(names[:most])}{more}"


def add_cache_parser(sub: Any) -> None:
    p = sub.add_parser(
        "cache",
        help="show or empty the compile cache",
        description="The compile cache (qidao/compiler/cache/): compiled models "
        "keyed by their content, the CPU, the settings and qidao's own source. "
        "Its folder: $QIDAO_CACHE_DIR, else $XDG_CACHE_HOME/qidao, else "
        "~/.cache/qidao; QIDAO_CACHE=off turns it off. Entries are signed with "
        "the key in ~/.config/qidao/cache.key; clear removes only entries qidao "
        "made and names anything else it finds.",
    )
    p.add_argument(
        "action",
        choices=("info", "clear"),
        help="info: where, entries, size, anything else there; clear: remove the "
        "entries (exit 1 if the folder is not a private folder of this user)",
    )
    p.set_defaults(run=cmd_cache)
