"""Run several `trident` commands in one process: the engine tier's offline stages share one vLLM engine.

    .venv-engine/bin/python tests/engine_stages.py PLAN.json    # PLAN: a JSON list of argument lists

Each command runs as `trident ARGS...` would, in order; the process's model cache (models/runtime.py)
builds each model once, so the offline engine starts once for all of them instead of once per command.
Exits with the first failing command's status.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trident_local.cli import app


def main(plan_path: str) -> int:
    for args in json.loads(Path(plan_path).read_text(encoding="utf-8")):
        print(f"== trident {' '.join(args[:2])} ...", file=sys.stderr, flush=True)
        rc = app(args, standalone_mode=False)
        if rc not in (None, 0):
            print(f"trident {' '.join(args)} exited {rc}", file=sys.stderr)
            return int(rc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
