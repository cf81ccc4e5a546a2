"""How an answer reads on the terminal: text and strategy, support, evidence when abstaining, self-check."""

from __future__ import annotations

from rich.markup import escape

from trident_local.generate.records import Answer


def verification_lines(v: dict | None) -> list[str]:
    """The self-check's verdicts and cost, one line per claim."""
    if v is None:
        return ["[dim]self-check: skipped (--no-verify)[/dim]"]
    judges = ", ".join(f"{k}: {n}" for k, n in v["judges"].items()) or "none"
    head = (f"[bold]Self-check[/bold]: {v['status']} ({judges}; {v['model_calls']} model calls, "
            f"{v['seconds']:.2f} s, {v['pages_judged']} pages judged, window ±{v['window']})")
    out = [head]
    for c in v["claims"]:
        moved = f" -> page {c['new_page']}" if c["action"] == "fix-page" else ""
        flags = f" [{', '.join(c['flags'])}]" if c["flags"] else ""
        out.append(f"[dim]  page {c['cited_page']}: {c['verdict']}, {c['action']}{moved}{escape(flags)}"
                   f"{' - ' + escape(c['why']) if c['why'] else ''}[/dim]")
    return out


def answer_lines(a: Answer) -> list[str]:
    """Rich-markup lines for an answer; the best evidence is shown even when the answer abstains."""
    lines = [f"[bold]Answer[/bold] ({escape(a.mode)}): {escape(a.text)}"]
    if a.located:
        lines.append(f"[dim]where:[/dim] {escape(a.located)}")
    if a.confidence is not None:
        lines.append(f"[dim]{escape(a.gate)}[/dim]")
    if a.computation:
        lines.append(f"[dim]computed:[/dim] {escape(a.computation)}")
    if a.support and a.support != a.text and a.answerable:
        lines.append(f"[dim]support (page {a.support_page}):[/dim] {escape(a.support)}")
    if not a.answerable and a.evidence:
        lines.append("[dim]best evidence on the retrieved pages:[/dim]")
        lines += [f"[dim]  page {e.page} ({e.score:.2f}):[/dim] {escape(e.text)}" for e in a.evidence]
    lines += verification_lines(a.verification)
    return lines
