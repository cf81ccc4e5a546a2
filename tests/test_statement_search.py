"""Search for a question that names line items: the statement pages they are read from rank first, with
their rows as the first regions; any other question keeps the pool's ranking."""

from __future__ import annotations

import json

import pytest
from pdf_factory import acme_filing, indexed
from typer.testing import CliRunner

from trident_local.cli import app
from trident_local.generate.statement_search import POOL, search_pages
from trident_local.index import Index

TURNOVER = ("What is Acme's FY2019 inventory turnover ratio? Inventory turnover ratio is defined as: "
            "(FY2019 COGS) / (average inventory between FY2018 and FY2019). Round your answer to two decimal "
            "places. Please base your judgments on the balance sheet and the income statement.")
# a page that repeats the question's words and prints none of its line items: what a page search favours
MDNA = ("Management's discussion. Acme's inventory turnover ratio improved in FY2019: our judgments on "
        "average inventory, the balance sheet and the income statement are discussed in Note 4. "
        "Inventory turnover ratio, defined as COGS over average inventory, rounded to two decimal places, "
        "is a metric we track.")


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("statement_search")
    return indexed(root, acme_filing(root / "acme_2019_10k.pdf", discussion=MDNA * 2))


def test_the_pages_of_the_named_line_items_rank_first_with_their_rows(filing: Index) -> None:
    assert filing.search(TURNOVER, k=3)[0].page == 1  # the page search alone prefers the discussion
    found = search_pages(filing, TURNOVER, k=3)
    assert [f.hit.page for f in found[:2]] == [2, 3] and found[2].hit.page == 1
    assert found[0].hit.score >= found[2].hit.score
    assert [(r["kind"], r["text"]) for r in found[0].regions[:2]] == [("cell", "16,830"),
                                                                     ("row-header", "Cost of products sold")]
    cells = {r["text"] for r in found[1].regions if r["kind"] == "cell"}
    assert cells == {"2,721", "2,667"}
    assert all(len({tuple(r["bbox"]) for r in f.regions}) == len(f.regions) for f in found)  # no box twice


def test_a_question_without_line_items_keeps_the_pool_ranking(filing: Index) -> None:
    question = "Why did Acme's inventory turnover improve?"
    found = search_pages(filing, question, k=3)
    assert [f.hit for f in found] == filing.search(question, k=3)
    assert all(f.hit.pool != POOL for f in found)


def test_search_json_says_which_pages_the_line_items_found(filing: Index) -> None:
    res = CliRunner().invoke(app, ["search", TURNOVER, "-i", str(filing.store.root), "--k", "2", "--json", "-"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)
    assert [h["page"] for h in hits] == [2, 3]
    assert hits[0]["regions"][0]["text"] == "16,830" and "found_by" in hits[0]
