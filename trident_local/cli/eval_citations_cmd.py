"""`trident eval citations build|run`: an injected citation benchmark with deterministic labels."""

from __future__ import annotations

from pathlib import Path

import typer

from trident_local.cli.common import cli_command, console, err_console, json_option, write_json

citations_app = typer.Typer(help="Citation verification: build injected instances, then run and score the "
                                 "verifier.", no_args_is_help=True)


@citations_app.command("build")
@cli_command
def build(
    dataset: Path = typer.Option(..., help="QA records with gold pages (MMLongBench-Doc samples.json layout)."),
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index holding the dataset's documents."),
    out: Path = typer.Option(..., "--out", "-o", help="Where to write INSTANCES.jsonl (+ .meta.json summary)."),
    seed: int = typer.Option(0, help="Seed for wrong pages, perturbations and the calib/test split."),
    evidence: str = typer.Option("single", help="'single': records with one gold page; 'any': all."),
    calib_fraction: float = typer.Option(0.3, min=0.0, max=0.9, help="Share of documents in the calib split."),
    json_out: str = json_option("the build summary (as in INSTANCES.meta.json)"),
) -> None:
    """Make supported / wrong-location / unsupported instances (1/3 each) with rule-assigned labels."""
    from trident_local.errors import TridentError
    from trident_local.evaluate.citations_build import build_from_index, write_instances
    from trident_local.index import Index

    if evidence not in ("single", "any"):
        raise TridentError("--evidence must be 'single' or 'any'")
    idx = Index.open(index_dir)
    instances, summary = build_from_index(dataset, idx, seed=seed, evidence=evidence, calib_fraction=calib_fraction)
    meta = write_instances(out, instances, summary)
    for d in summary.defects:
        err_console.print(f"[yellow]skipped[/yellow] record {d['record']} ({d['doc']}): gold pages "
                          f"{d['evidence_pages']} outside its {d['n_pages']} pages (dataset defect)", highlight=False)
    console.print(f"{summary.instances} instances from {summary.used_records} of {summary.records} records "
                  f"-> {out} (summary: {meta})", highlight=False)
    console.print(f"labels {summary.by_label}; splits {summary.by_split}; wrong locations {summary.by_location}",
                  highlight=False)
    console.print(f"skipped {summary.skipped}", highlight=False)
    write_json(json_out, summary.to_dict())


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


@citations_app.command("run")
@cli_command
def run(
    index_dir: Path = typer.Option(..., "--index", "-i", help="Index holding the instances' documents."),
    instances_path: Path = typer.Option(..., "--instances", help="INSTANCES.jsonl from `citations build`."),
    json_out: str = json_option("metrics, CIs, config and outcomes"),
    window: int = typer.Option(2, min=0, help="Pages on each side of a cited page searched for a fix."),
    text_judge: str = typer.Option("none", "--text-judge", help="Chat profile, or 'none' (no-model scorer)."),
    image_judge: str = typer.Option("none", "--image-judge", help="VLM profile, 'none' or 'same'."),
    split: str = typer.Option("test", help="test | calib | all"),
    params: Path = typer.Option(None, help="No-model scorer parameters (JSON) instead of calibrating."),
    calibrate: bool = typer.Option(True, help="Calibrate the no-model scorer on the calib split first."),
    objective: str = typer.Option("accuracy", help="Calibration objective: 'accuracy', or 'recall:R' (keep at "
                                  "least a share R of the calib split's supported claims)."),
    save_params: Path = typer.Option(None, help="Write the no-model scorer parameters used here (JSON)."),
    bootstrap: int = typer.Option(1000, min=10, help="Document-cluster bootstrap replicates."),
    seed: int = typer.Option(0, help="Bootstrap seed."),
    limit: int = typer.Option(None, min=1, help="Only the first N instances of the split (quick checks)."),
    batch_size: int = typer.Option(16, min=1, help="Requests per model call batch."),
    max_tokens: int = typer.Option(160, min=8, help="Tokens per judge reply (model judges)."),
    outcomes: Path = typer.Option(None, help="Write per-instance outcomes as JSONL."),
    regions: bool = typer.Option(True, "--regions/--no-regions", help="The region check before the page policy "
                                 "(off: page-level judging only, as before regions)."),
) -> None:
    """Binary accuracy, recalls, and correction metrics (precision before -> after, retention, coverage, fix-reach)."""
    from rich.progress import Progress
    from rich.table import Table

    from trident_local.errors import TridentError
    from trident_local.evaluate.citations_build import read_instances
    from trident_local.evaluate.citations_metrics import METRICS
    from trident_local.evaluate.citations_run import run_citations
    from trident_local.index import Index
    from trident_local.verify.judge_text import ScorerParams

    if split not in ("test", "calib", "all"):
        raise TridentError("--split must be test, calib or all")
    instances = read_instances(instances_path)
    if limit:
        kept = [i for i in instances if split == "all" or i.split == split][:limit]
        instances = [i for i in instances if i.split == "calib" and split != "calib"] + kept
    scorer_params = None
    if params:
        try:
            scorer_params = ScorerParams.load(params)
        except (OSError, ValueError, KeyError) as e:
            raise TridentError(f"cannot read scorer parameters {params}: {e}") from e
    n = sum(1 for i in instances if split == "all" or i.split == split)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("verifying", total=n)
        res = run_citations(Index.open(index_dir), instances, text=text_judge, image=image_judge, window=window,
                            params=scorer_params, calibrate=calibrate, objective=objective, split=split,
                            n_boot=bootstrap, seed=seed,
                            batch_size=batch_size, max_tokens=max_tokens, regions=regions,
                            on_progress=lambda k: progress.advance(task, k))
    res["config"]["instances"] = str(instances_path)
    c = res["counts"]
    table = Table(title=f"citations: {c['instances']} instances / {c['documents']} documents ({split} split), "
                        f"judges {res['config']['judges']}")
    table.add_column("metric")
    table.add_column("%", justify="right")
    table.add_column("95% CI (doc bootstrap)", justify="right")
    for m in METRICS:
        ci = res["ci95"][m]
        table.add_row(m, _fmt(res[m]), f"{_fmt(ci[0])}–{_fmt(ci[1])}" if ci else "-")
    console.print(table)
    cal = res["config"].get("no_model_scorer")
    if cal:
        console.print(f"no-model scorer threshold {cal['threshold']:.3f} ({cal['calibration'].get('method', '')})",
                      highlight=False)
    console.print(f"model calls {res['model_calls']}, {res['seconds']} s", highlight=False)
    if save_params and cal:
        ScorerParams.from_dict(cal).save(save_params)
    if outcomes:
        import json

        from trident_local.atomic import atomic_write_text

        atomic_write_text(outcomes, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in res["outcomes"]))
    write_json(json_out, res)


def register(app: typer.Typer, eval_app: typer.Typer) -> None:
    eval_app.add_typer(citations_app, name="citations")
