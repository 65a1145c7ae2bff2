"""Run every ``bench/bench_*.py`` (or those named on the command line) and print one table."""

from __future__ import annotations

import importlib
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Row, print_table


def main(names: list[str]) -> int:
    here = Path(__file__).resolve().parent
    modules = names or sorted(p.stem for p in here.glob("bench_*.py"))
    rows: list[Row] = []
    for name in modules:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            rows.extend(importlib.import_module(name).run())
        except Exception as exc:  # one broken benchmark must not hide every other row
            traceback.print_exc()
            rows.append(Row(f"{name}: did not finish", f"{type(exc).__name__}: {exc}"[:120],
                            "", "runs to the end", False))
    print_table(rows)
    return 0 if all(r.ok is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
