"""The evidence pipeline (trident_local.search): pools -> lead-page finders -> regions, and every command
on it: `trident search`, `trident ask`, the service and `trident eval retrieval` rank the same pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from pdf_factory import acme_filing, indexed, text_pdf
from typer.testing import CliRunner

from trident_local import AskOptions, ask, search
from trident_local.cli import app
from trident_local.errors import TridentError
from trident_local.index import Index
from trident_local.regions.layout import Region
from trident_local.search import Lead, finder_names, parse_finders, register_finder

TURNOVER = ("What is Acme's FY2019 inventory turnover ratio? Inventory turnover ratio is defined as: "
            "(FY2019 COGS) / (average inventory between FY2018 and FY2019). Round your answer to two decimal "
            "places. Please base your judgments on the balance sheet and the income statement.")
# a page that repeats the question's words and prints none of its line items: what a page search favours
MDNA = ("Management's discussion. Acme's inventory turnover ratio improved in FY2019: our judgments on "
        "average inventory, the balance sheet and the income statement are discussed in Note 4. "
        "Inventory turnover ratio, defined as COGS over average inventory, rounded to two decimal places, "
        "is a metric we track.")
OTHER = [f"Page {i}: the solar farm produced {100 + i} MWh in 2021; the wind farm's capacity grew by {i}%."
         for i in range(1, 31)]
QUESTIONS = [TURNOVER, "Why did Acme's inventory turnover improve?", "What did the wind farm's capacity grow by?",
             "How much did the solar farm produce on page 7?", "What is Acme's cost of products sold in FY2019?"]


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("search_pipeline")
    return indexed(root, acme_filing(root / "acme_2019_10k.pdf", discussion=MDNA * 2),
                   text_pdf(root / "energy_report.pdf", OTHER))


def test_the_pages_of_the_named_line_items_rank_first_with_their_rows(filing: Index) -> None:
    assert filing.search(TURNOVER, k=3)[0].page == 1  # the page search alone prefers the discussion
    found = search(filing, TURNOVER, k=3, doc="acme_2019_10k.pdf")
    assert [f.page for f in found[:2]] == [2, 3] and found[2].page == 1
    assert [f.found_by for f in found] == ["line-items", "line-items", "fused"]
    assert found[0].score >= found[2].score
    assert all(isinstance(r, Region) for f in found for r in f.regions)
    assert [(r.kind, r.text) for r in found[0].regions[:2]] == [("cell", "16,830"),
                                                               ("row-header", "Cost of products sold")]
    assert {r.text for r in found[1].regions if r.kind == "cell"} == {"2,721", "2,667"}
    assert all(len({r.bbox for r in f.regions}) == len(f.regions) for f in found)  # no box twice


def test_finders_switched_off_by_name_give_the_pool_ranking(filing: Index) -> None:
    doc = "acme_2019_10k.pdf"
    pool = [(h.doc_id, h.page) for h in filing.search(TURNOVER, doc=doc, k=3)]
    for off in ("none", "", []):
        assert [f.key for f in search(filing, TURNOVER, doc=doc, k=3, finders=off)] == pool
    question = "Why did Acme's inventory turnover improve?"  # names no line item: no lead page
    assert [f.key for f in search(filing, question, k=3)] == [h.key for h in filing.search(question, k=3)]


def test_unknown_finder_is_a_clear_error(filing: Index) -> None:
    with pytest.raises(TridentError, match="unknown lead-page finder 'statements'.*line-items"):
        search(filing, TURNOVER, finders="statements")
    with pytest.raises(TridentError, match="unknown lead-page finder"):
        AskOptions(finders="nope")
    assert parse_finders(None) == parse_finders("all") == tuple(finder_names())


def test_a_short_search_is_the_head_of_a_long_one(filing: Index) -> None:
    for q in QUESTIONS:
        long = [f.key for f in search(filing, q, k=filing.config.pool_size, regions=False)]
        assert [f.key for f in search(filing, q, k=5)] == long[:5]


class EveryTenthPage:
    """A user's finder: leads with page 25 of the energy report whenever the question says 'page 10'
    (where the pool ranks page 10 first)."""

    name: ClassVar[str] = "tenth"

    def find(self, index: Index, query, hits) -> list[Lead]:
        doc = index.resolve("energy_report.pdf")
        return [Lead(doc, 25)] if "page 10" in query.text else []


def test_a_registered_finder_runs_by_default_and_is_switched_off_by_name(filing: Index) -> None:
    register_finder("tenth", f"{__name__}:EveryTenthPage")
    try:
        q = "How much did the solar farm produce on page 10?"
        found = search(filing, q, k=3)
        assert (found[0].page, found[0].found_by) == (25, "tenth") and found[1].page == 10
        off = search(filing, q, k=3, finders="line-items")
        assert off[0].page == 10 and all(f.found_by != "tenth" for f in off)
        assert ask(filing, q, AskOptions(rerank="none", verify=False)).pool_pages[0][1] == 25
        assert ask(filing, q, AskOptions(rerank="none", verify=False, finders="none")).pool_pages[0][1] == 10
    finally:
        from trident_local.search import _FINDERS

        _FINDERS.unregister("tenth")


def test_ask_reads_the_pages_search_ranks(filing: Index) -> None:
    for q in QUESTIONS:
        res = ask(filing, q, AskOptions(rerank="none", verify=False))
        pages = search(filing, q, k=filing.config.pool_size, regions=False)
        assert [(d, p) for d, p, _ in res.pool_pages] == [f.key for f in pages]
    res = ask(filing, TURNOVER, AskOptions(verify=False), doc="acme_2019_10k.pdf")
    assert res.answer.citations and res.answer.citations[0].page == 2


def _dataset(tmp: Path, index: Index) -> Path:
    rows = [{"doc_id": name, "doc_type": "Financial report", "question": q, "answer": "x",
             "evidence_pages": "[2]", "evidence_sources": "['Table']", "answer_format": "Str"}
            for q in QUESTIONS for name in ("acme_2019_10k.pdf", "energy_report.pdf")]
    path = tmp / "samples.json"
    path.write_text(json.dumps(rows))
    return path


def test_eval_retrieval_at_its_defaults_ranks_what_trident_search_shows(filing: Index, tmp_path: Path) -> None:
    root = str(filing.store.root)
    run = tmp_path / "run.jsonl"
    res = CliRunner().invoke(app, ["eval", "retrieval", "-i", root, "--dataset", str(_dataset(tmp_path, filing)),
                                   "--run", str(run), "--json", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in run.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "ranked" in r]
    assert len(rows) == 2 * len(QUESTIONS)
    for row in rows:
        q = QUESTIONS[(row["qid"]) // 2]
        out = CliRunner().invoke(app, ["search", q, "-i", root, "-d", row["doc"], "--json", "-"])
        assert out.exit_code == 0, out.output
        assert row["ranked"] == [h["page"] for h in json.loads(out.stdout)], q
    assert json.loads((tmp_path / "s.json").read_text())["finders"] == "line-items"


def test_search_json_says_which_pages_the_line_items_found(filing: Index) -> None:
    res = CliRunner().invoke(app, ["search", TURNOVER, "-i", str(filing.store.root), "-d", "acme_2019_10k.pdf",
                                   "--k", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)
    assert [h["page"] for h in hits] == [2, 3] and {h["found_by"] for h in hits} == {"line-items"}
    assert hits[0]["regions"][0]["text"] == "16,830" and hits[0]["regions"][0]["kind"] == "cell"
    res = CliRunner().invoke(app, ["search", TURNOVER, "-i", str(filing.store.root), "--finders", "bogus"])
    assert res.exit_code != 0 and "unknown lead-page finder 'bogus'" in res.output


def test_eval_qa_and_ask_share_their_defaults() -> None:
    import typer.main

    def defaults(path: list[str]) -> dict:
        cmd = typer.main.get_command(app)
        for name in path:
            cmd = cmd.commands[name]
        return {p.name: (p.default.value if hasattr(p.default, "value") else p.default) for p in cmd.params}

    ask_d, qa_d, ret_d = defaults(["ask"]), defaults(["eval", "qa"]), defaults(["eval", "retrieval"])
    for name in ("pool", "finders", "rerank", "fields", "answer", "verify"):
        assert qa_d[name] == ask_d[name] == getattr(AskOptions(), name), name
    search_d = defaults(["search"])
    assert ret_d["pool"] == search_d["pool"] and ret_d["finders"] == search_d["finders"]


class Careless:
    """A user's finder that names pages out of range, of another document, and then fails."""

    name: ClassVar[str] = "careless"
    calls = 0

    def find(self, index: Index, query, hits) -> list[Lead]:
        Careless.calls += 1
        if "fail" in query.text:
            raise ValueError("a broken table")
        energy, acme = index.resolve("energy_report.pdf"), index.resolve("acme_2019_10k.pdf")
        return [Lead(energy, 0), Lead(energy, 999), Lead(acme, 3), Lead("no-such-doc", 1), Lead(energy, 4)]


def test_a_finders_leads_stay_inside_the_search_and_a_failing_finder_is_skipped(
        filing: Index, caplog: pytest.LogCaptureFixture) -> None:
    register_finder("careless", f"{__name__}:Careless")
    try:
        found = search(filing, "solar farm output", doc="energy_report.pdf", k=3, finders="careless")
        assert (found[0].page, found[0].found_by) == (4, "careless")
        assert all(f.doc_id == filing.resolve("energy_report.pdf") for f in found)
        assert {f.key for f in search(filing, "solar farm output", k=3, finders="careless")} >= {
            (filing.resolve("acme_2019_10k.pdf"), 3), (filing.resolve("energy_report.pdf"), 4)}
        q = "solar farm output, fail"
        assert [f.key for f in search(filing, q, k=3, finders="careless")] == [h.key for h in filing.search(q, k=3)]
        assert "lead-page finder 'careless' failed" in caplog.text and "a broken table" in caplog.text
    finally:
        from trident_local.search import _FINDERS

        _FINDERS.unregister("careless")
