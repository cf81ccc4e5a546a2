"""The one table scripts/gpu_check.sh prints at its end: every step, its outcome, its headline numbers.

    python scripts/gpu_check_table.py OUT_DIR

Reads OUT_DIR/steps.jsonl (one outcome per step), env.json, the pytest JUnit files and the benchmarks'
JSON; a step whose file is missing shows its outcome only.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def junit(path: Path) -> str:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return ""
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    passed = n["tests"] - n["failures"] - n["errors"] - n["skipped"]
    failed = [f"{c.get('name')}" for s in suites for c in s.iter("testcase")
              if c.find("failure") is not None or c.find("error") is not None]
    return (f"{passed} passed, {n['failures'] + n['errors']} failed, {n['skipped']} skipped"
            + (f" ({', '.join(failed[:4])})" if failed else ""))


def maxsim(path: Path) -> str:
    rep = _json(path)
    if not rep:
        return ""
    parts = []
    for r in rep["rows"]:
        if r["method"] != "ours":
            continue
        x = r.get("speedup_vs_colpali_engine")
        parts.append(f"{r['pages']} p {r['dtype']}: {r['pages_per_s']:,.0f} pages/s"
                     f"{f', {x:.1f}x colpali-engine' if x else ''}, max err {r['max_abs_err']:.1e}")
    return "; ".join(parts)


def pages(path: Path) -> str:
    rep = _json(path)
    if not rep or not rep.get("rows"):
        return ""
    best = max(rep["rows"], key=lambda r: r["pages_per_s"])
    peak = best.get("peak_gib")
    each = ", ".join(f"b{r['batch']} {r['pages_per_s']:.1f}" for r in rep["rows"])
    oom = rep.get("out_of_memory_at_batch")
    return (f"best {best['pages_per_s']:.1f} pages/s at batch {best['batch']}"
            f"{f' (peak {peak:.1f} GiB)' if peak is not None else ''}; {each}"
            f"{f'; out of memory at batch {oom}' if oom else ''}")


def caption(path: Path) -> str:
    r = _json(path)
    if not r:
        return ""
    return (f"{r['arch']} {r['params_b']} B, batch {r['batch']}: vision {r['vision_s']:.2f} s, "
            f"prefill {r['prefill_tok_s']:,.0f} tok/s, decode {r['decode_tok_s']:,.1f} tok/s, "
            f"peak {r['peak_mem_gib']} GiB")


DETAIL = {
    "tests": lambda out: junit(out / "tests.xml"),
    "vlm_chat": lambda out: junit(out / "vlm_chat.xml"),
    "maxsim": lambda out: maxsim(out / "maxsim.json"),
    "maxsim_large": lambda out: maxsim(out / "maxsim_large.json"),
    "pages": lambda out: pages(out / "page_embedding.json"),
    "caption": lambda out: caption(out / "caption.json"),
}


def table(out: Path) -> str:
    env = _json(out / "env.json") or {}
    steps = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line.strip()]
    where = env.get("gpu") or "CPU"
    head = (f"gpu_check{' --dry-run (toy sizes, CPU)' if env.get('dry_run') else ''} on {where}: torch "
            f"{env.get('torch')}, triton {env.get('triton')}, transformers {env.get('transformers')}")
    lines = [head, f"{'step':<13}{'status':<9}{'s':>5}  result", "-" * 100]
    for s in steps:
        detail = DETAIL.get(s["step"], lambda _: "")(out) or s.get("why", "")
        lines.append(f"{s['step']:<13}{s['status']:<9}{s['seconds']:>5}  {detail}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(Path(sys.argv[1])))
