"""The recorded result of a benchmark run: ``benchmarks/results/<name>.json``, rendered by report.py.

Every benchmark ends with one call::

    write_result("ann", figures, {"title": ..., "columns": [...], "rows": [[...]], "notes": ...},
                 args=args, full=not toy)

The file holds ``name``, ``command`` (the command line, relative to the repository), ``commit``
(short hash, ``-dirty`` when tracked files differ from it, results/ aside), ``date`` (UTC),
``machine`` (CPU model, logical cores, load average at start and end, RAM, torch / numpy versions
where imported, the GPU when CUDA was used), ``args`` (the parsed options), ``table`` (the headline
table as printed) and ``figures`` (the raw numbers, what the script's ``--out`` JSON holds).

Only a run at the script's recorded configuration writes it (``full=True``: no --tiny, no size
below the documented one, the whole data set); any other run prints why it was not recorded and
keeps its numbers in ``--out`` only, so smoke and toy runs never touch the tracked files.
``TRIDENT_BENCH_RESULTS=DIR`` (or ``results_dir=``) points the writer at a scratch folder instead;
there every run is written, toy ones too (``"recorded_configuration": false``), to check a table.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TABLE_KEYS = ("title", "columns", "rows", "notes")
ENV_IN_COMMAND = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "TRIDENT_KERNELS_NO_AMX")

# Read when a benchmark imports this module, i.e. before it starts measuring.
_LOAD_AT_START = os.getloadavg()
_T_START = time.time()


def results_folder(override: str | os.PathLike | None = None) -> Path:
    if override is not None:
        return Path(override)
    env = os.environ.get("TRIDENT_BENCH_RESULTS")
    return Path(env) if env else RESULTS


def _rel(arg: str) -> str:
    """An argument naming an existing path, written relative to the repository root where it can be."""
    p = Path(arg)
    try:
        if not p.is_absolute():
            if Path.cwd() == ROOT or not p.exists():
                return arg
            p = Path.cwd() / p
        return os.path.relpath(p, ROOT) if p.is_relative_to(ROOT) or not arg.startswith("/") else arg
    except (OSError, ValueError):
        return arg


def command_line(argv: Sequence[str] | None = None, script: str | None = None) -> str:
    """The command that ran, as one would type it in the repository root."""
    exe = os.path.abspath(sys.executable)
    python = os.path.relpath(exe, ROOT) if Path(exe).is_relative_to(ROOT) else "python"
    script = script if script is not None else sys.argv[0]
    args = list(sys.argv[1:] if argv is None else argv)
    env = [f"{k}={os.environ[k]}" for k in ENV_IN_COMMAND if k in os.environ]
    return shlex.join([*env, python, _rel(script), *(_rel(a) for a in args)])


def git_commit() -> str:
    """Short HEAD, ``-dirty`` when a tracked file outside benchmarks/results differs from it."""
    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/results")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "Model", "Hardware")) and ":" in line:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown"


def cpu_features() -> list[str]:
    """The instruction-set extensions the kernels choose between (AMX / AVX512-BF16 / AVX2)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return [f for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx2") if f in flags]
    except OSError:
        pass
    return []


def ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine() -> dict[str, Any]:
    out: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpu_features": cpu_features(),
        "cores": os.cpu_count(),
        "load_start": [round(x, 2) for x in _LOAD_AT_START],
        "load_end": [round(x, 2) for x in os.getloadavg()],
        "ram_gib": ram_gib(),
        "python": ".".join(map(str, sys.version_info[:3])),
    }
    for mod in ("torch", "numpy"):
        if mod in sys.modules:
            out[mod] = getattr(sys.modules[mod], "__version__", "unknown")
    out["gpu"] = None
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            out["gpu"] = torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - a broken CUDA setup must not lose the figures
        out["gpu"] = "unknown"
    return out


def jsonable(x: Any) -> Any:
    """Paths, tuples, numpy scalars and the like, as plain JSON values."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple | set | frozenset):
        return [jsonable(v) for v in (sorted(x, key=str) if isinstance(x, set | frozenset) else x)]
    if x is None or isinstance(x, bool | int | str):
        return x
    if isinstance(x, float):  # JSON has no inf / nan: written as strings
        return x if x == x and abs(x) != float("inf") else str(x)
    if hasattr(x, "item") and callable(x.item):  # numpy / torch scalars
        try:
            return jsonable(x.item())
        except (TypeError, ValueError):
            pass
    return str(x)


def check_table(table: Any) -> dict[str, Any]:
    """The table, validated: title, columns, rows of the columns' length, notes."""
    if not isinstance(table, Mapping) or set(table) - set(TABLE_KEYS) or "columns" not in table:
        raise ValueError(f"a table is a dict with keys {TABLE_KEYS}, got {table!r:.200}")
    cols = [str(c) for c in table["columns"]]
    rows = [list(r) for r in table.get("rows", [])]
    bad = [i for i, r in enumerate(rows) if len(r) != len(cols)]
    if bad:
        raise ValueError(f"table rows {bad} do not have {len(cols)} cells")
    return {"title": str(table.get("title", "")), "columns": cols, "rows": jsonable(rows),
            "notes": str(table.get("notes") or "")}


def write_result(
    name: str,
    figures: Mapping[str, Any],
    table: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    *,
    args: Any,
    full: bool = True,
    why_not: str = "not the recorded configuration",
    argv: Sequence[str] | None = None,
    script: str | None = None,
    results_dir: str | os.PathLike | None = None,
) -> Path | None:
    """Write ``<results>/<name>.json`` for a run at the recorded configuration; else say why not.

    ``table`` may be a callable: a bug in building it then costs the table, never the figures.
    ``args`` is the argparse namespace (or a dict); ``argv`` defaults to ``sys.argv[1:]`` and ``script``
    to the calling file.
    """
    scratch = results_dir is not None or bool(os.environ.get("TRIDENT_BENCH_RESULTS"))
    if not full and not scratch:
        print(f"[not recorded in benchmarks/results/{name}.json: {why_not}; --out keeps the JSON]")
        return None
    try:
        tab = check_table(table() if callable(table) else table)
    except Exception as exc:  # noqa: BLE001 - the figures are worth more than the table
        print(f"[result table not built: {exc!r}]", file=sys.stderr)
        tab = {"title": "", "columns": [], "rows": [], "notes": f"table not built: {exc!r}"}
    opts = vars(args) if hasattr(args, "__dict__") and not isinstance(args, Mapping) else dict(args or {})
    if script is None:  # the benchmark that called: right also when a test calls its main(argv)
        script = sys._getframe(1).f_code.co_filename
    result = {
        "name": name,
        "command": command_line(argv, script),
        "commit": git_commit(),
        "date": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "duration_s": round(time.time() - _T_START, 1),
        "machine": machine(),
        "args": jsonable(opts),
        "recorded_configuration": bool(full),
        "table": tab,
        "figures": jsonable(figures),
    }
    path = results_folder(results_dir) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded {os.path.relpath(path, ROOT) if path.is_relative_to(ROOT) else path} "
          "(regenerate benchmarks/README.md: .venv/bin/python benchmarks/report.py)")
    return path
