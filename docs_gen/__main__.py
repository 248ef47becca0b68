"""`python -m docs_gen`: rewrite the generated blocks of docs/ from the code.

`--check` changes nothing and exits 1 naming the blocks that differ."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from docs_gen import regions
from docs_gen.generated import REGIONS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs_gen", description=__doc__)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming the blocks that differ")
    args = parser.parse_args(argv)
    if args.check:
        problems = [problem for region in REGIONS if (problem := regions.stale(region)) is not None]
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    for region in REGIONS:
        changed = regions.write(region)
        print(f"{region.page} ({region.name}): {'updated' if changed else 'already up to date'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
