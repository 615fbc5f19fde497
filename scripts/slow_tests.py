"""Write tests/slow_tests.txt, the tests `pytest -m "not slow"` leaves out, from a
measured run:

    pytest -q -n 2 --durations=0 -p no:cacheprovider > durations.txt
    python scripts/slow_tests.py durations.txt [--over 0.25]

A test is slow when its setup, call and teardown took more than ``--over``
seconds together. tests/conftest.py marks the tests listed there ``slow`` (beside
those marked by hand with ``@pytest.mark.slow``); a test that is not listed is fast
until the list is made again.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

LINE = re.compile(r"\s*([\d.]+)s (?:call|setup|teardown)\s+(.+?)\s*$")
OUT = Path(__file__).resolve().parent.parent / "tests" / "slow_tests.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("durations", help="pytest --durations=0 output")
    parser.add_argument("--over", type=float, default=0.25, help="seconds (0.25)")
    args = parser.parse_args()
    seconds: Counter[str] = Counter()
    for line in Path(args.durations).read_text().splitlines():
        match = LINE.match(line)
        if match:
            seconds[match.group(2)] += float(match.group(1))
    if not seconds:
        raise SystemExit(f"{args.durations}: no --durations lines in it")
    slow = sorted(node for node, s in seconds.items() if s > args.over)
    kept = sum(s for node, s in seconds.items() if s <= args.over)
    header = (
        f"# Tests over {args.over:g} s (setup + call + teardown), left out by "
        '`pytest -m "not slow"`.\n'
        "# Made by scripts/slow_tests.py from a measured run; make it again after "
        "adding slow tests.\n"
    )
    OUT.write_text(header + "".join(f"{node}\n" for node in slow))
    print(
        f"{len(slow)} of {len(seconds)} tests are slow ({sum(seconds.values()) - kept:.0f} "
        f"of {sum(seconds.values()):.0f} test-seconds); the rest take {kept:.0f} s"
    )


if __name__ == "__main__":
    main()
