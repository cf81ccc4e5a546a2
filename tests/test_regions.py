"""Regions: the cell that holds a value with its row and column headers, the rows a question points at,
regions on answers and search hits, and the grounding scores that judge them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from trident_local.evaluate.grounding import GoldBox, iou, occurrences, score_regions
from trident_local.generate.ask import ask
from trident_local.index import Index
from trident_local.regions import page_layout, question_regions, search_regions, value_regions
from trident_local.regions.attach import layout_of
from trident_local.regions.locate import answer_regions, norm_number, numbers, passage_regions

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
HELIOS = SAMPLES / "helios_annual_report_2023.pdf"
QUESTION = "What was Helios Grid's revenue in the Coastal region in 2023?"


@pytest.fixture(scope="module")
def helios(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("regions")
    pdf = shutil.copy(HELIOS, root / HELIOS.name)
    idx = Index.create(root / "index")
    idx.add([Path(pdf)], workers=1)
    return idx


def test_number_spellings_meet() -> None:
    assert {norm_number(s) for s in ("$1,577.00", "(1,577)", "1577", "1,577")} == {"1577"}
    assert norm_number("95.20") == "95.2" and numbers("from 74.5 to 95.2 (27.8%)") == ["74.5", "95.2", "27.8"]


def test_a_value_is_its_cell_with_the_row_and_column_headers() -> None:
    lay = page_layout(HELIOS, 2)
    regs = value_regions(lay, "95.2", QUESTION)
    assert [(r.kind, r.text) for r in regs] == [("cell", "95.2"), ("row-header", "Coastal"), ("column-header", "2023")]
    cell, row_head, col_head = (r.bbox for r in regs)
    assert abs(cell[1] - row_head[1]) < 2 and col_head[3] <= cell[1]  # same row; the header above
    assert all(r.page == 2 and r.area < lay.area / 100 for r in regs)  # a cell, not the table


def test_the_question_points_at_the_table_row_that_holds_its_words() -> None:
    lay = page_layout(HELIOS, 2)
    regs = question_regions(lay, QUESTION)
    assert len(regs) == 3 and all(r.kind in ("row", "line") for r in regs)
    assert any(r.kind == "row" and r.text.startswith("Coastal") and "95.2" in r.text for r in regs)


def test_an_answer_whose_numbers_are_not_on_the_page_gets_no_region() -> None:
    assert answer_regions(page_layout(HELIOS, 2), "123.4", QUESTION) == []
    assert answer_regions(page_layout(HELIOS, 2), "95.2", QUESTION)[0].text == "95.2"


def test_a_question_that_asks_for_a_number_points_first_at_a_line_that_prints_one() -> None:
    regs = question_regions(page_layout(HELIOS, 1), "How many megawatts did the Red Mesa battery store?",
                            numbers_first=True)
    # "Maria Okafor said the battery lets Red Mesa deliver power" shares more words, and holds no number
    assert regs[0].text.startswith("on 14 June 2023. It pairs 180 megawatts")
    assert regs[1].text.startswith("Maria Okafor")


def test_a_quoted_passage_is_the_lines_it_runs_over() -> None:
    lay = page_layout(HELIOS, 1)
    passage = ("Our largest project of the year, the Red Mesa farm in the Desert region, started commercial "
               "operation on 14 June 2023.")
    regs = answer_regions(lay, passage, "Which project started in June 2023?")
    assert [r.text[:22] for r in regs] == ["Our largest project of", "on 14 June 2023. It pa"]
    assert all(r.kind == "line" for r in regs)
    # a short answer is a value or a name, located as before; a passage the page does not print has no lines
    assert answer_regions(lay, "412", "How many megawatts were connected?")[0].text.startswith("Northland")
    assert passage_regions(lay, "An unrelated passage about wind turbines in another country entirely.") == []


def test_regions_come_from_the_index_and_an_older_index_reads_the_pdf(helios: Index, tmp_path: Path) -> None:
    import dataclasses

    (doc_id,) = helios.store.doc_ids()
    stored = helios.store.document(doc_id).page(2)
    size = (stored.width, stored.height)
    from_index = page_layout(tmp_path / "moved-away.pdf", 2, stored.blocks, size)  # no PDF needed
    from_pdf = page_layout(HELIOS, 2)
    assert [r.text for r in from_index.rows] == [r.text for r in from_pdf.rows]
    assert value_regions(from_index, "95.2", QUESTION)[0].text == "95.2"
    older = [dataclasses.replace(b, lines=[]) for b in stored.blocks]  # built before line boxes were stored
    assert [r.text for r in page_layout(HELIOS, 2, older, size).rows] == [r.text for r in from_pdf.rows]
    gone = page_layout(tmp_path / "moved-away.pdf", 2, older, size)  # and its source moved away: blocks
    assert gone.rows and all(len(r.cells) == 1 for r in gone.rows)
    assert layout_of(helios, doc_id, 2).rows[0].cells[0].text


def test_ask_cites_the_cell_and_search_hits_carry_rows(helios: Index) -> None:
    helios.models.use_profile("chat", "none")
    res = ask(helios, QUESTION)
    assert res.answer.text == "95.2"
    cited = {c.page: c.regions for c in res.answer.citations}
    assert list(cited) == [2]  # only the page that holds the value: the others retrieved beside it are not cited
    assert [(r["kind"], r["text"]) for r in cited[2]][:1] == [("cell", "95.2")]
    assert res.answer.located == "95.2 million dollars: Coastal, 2023, Table 1, p. 2"
    assert all(len(r["bbox"]) == 4 and r["page"] == p for p, regs in cited.items() for r in regs)
    assert "regions" in res.timings
    hits = helios.search(QUESTION, k=5)
    regions = dict(zip([h.page for h in hits], search_regions(helios, QUESTION, hits), strict=True))
    assert any("95.2" in r.text for r in regions[2])


def test_a_located_answer_names_its_unit_and_place_but_no_unit_for_a_share() -> None:
    from trident_local.regions.describe import located_answer

    lay = page_layout(HELIOS, 2)
    growth = [r.to_dict() for r in value_regions(lay, "27.8%", "How fast did Coastal revenue grow?")]
    assert located_answer(lay, growth, "27.8%") == "27.8%: Coastal, Growth, Table 1, p. 2"
    prose = [r.to_dict() for r in value_regions(page_layout(HELIOS, 1), "412", "new solar capacity")]
    assert prose[0]["kind"] == "line" and located_answer(page_layout(HELIOS, 1), prose, "412") == ""


def test_a_computed_answer_cites_its_operands(helios: Index) -> None:
    from trident_local.generate.records import Citation
    from trident_local.regions import citation_regions

    (doc_id,) = helios.store.doc_ids()
    cites = [Citation(doc_id, HELIOS.name, p) for p in (1, 2, 3)]
    kept = citation_regions(helios, "How much did Coastal revenue grow from 2022 to 2023?", "95.2 - 74.5 = 20.7",
                            cites)
    assert [c.page for c in kept] == [2] and [r["text"] for r in kept[0].regions][:1] == ["95.2"]
    assert "74.5" in {r["text"] for r in kept[0].regions}
    words = citation_regions(helios, "Who leads Helios Grid?", "Maria Okafor", cites)
    assert [c.page for c in words] == [1, 2, 3]  # an answer without numbers drops no page


def test_grounding_scores_hits_iou_and_page_share() -> None:
    gold = [GoldBox(2, (100.0, 100.0, 120.0, 110.0))]
    def area(page: int) -> float:
        return 600.0 * 800.0
    tight = [{"page": 2, "bbox": [95.0, 98.0, 125.0, 112.0]}]
    s = score_regions(tight, gold, area)
    assert s["hit"] == 1.0 and 0.4 < s["iou"] < 1.0 and s["page_share"] == pytest.approx(30 * 14 / 480000)
    whole = [{"page": 2, "bbox": [0.0, 0.0, 600.0, 800.0]}]  # contains it, but points at nothing
    assert score_regions(whole, gold, area)["hit"] == 0.0
    elsewhere = [{"page": 3, "bbox": [95.0, 98.0, 125.0, 112.0]}]
    assert score_regions(elsewhere, gold, area) == {"hit": 0.0, "iou": 0.0, "page_share": pytest.approx(420 / 480000)}
    assert iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)


def test_gold_occurrences_are_found_by_value() -> None:
    lay = page_layout(HELIOS, 2)
    assert len(occurrences(lay, "$95.20")) == 1 and occurrences(lay, "Coastal")
    assert occurrences(lay, "987.6") == []


def test_a_computed_answer_is_labelled_by_the_rows_of_the_line_items_it_reads() -> None:
    from trident_local.evaluate.grounding import line_item_rows, line_items

    why = ("Metric 1: Cost of sales. This metric was located in the 10K as a single line item named: "
           "Cost\u00c2\u00a0of sales.  Metric 2: ... a single line item named: Property, plant and equipment, net.")
    assert line_items(why) == ["Cost of sales", "Property, plant and equipment, net"]
    lay = page_layout(HELIOS, 2)
    (row,) = line_item_rows(lay, "coastal")
    assert row[1] < 190 < row[3]  # the Coastal row of Table 1, label to growth column
    gold = [GoldBox(2, row, "row")]
    cell = value_regions(lay, "95.2")[0].to_dict()
    assert score_regions([cell], gold, lambda p: lay.area)["hit"] == 1.0  # a cell of the row points at it
    other = value_regions(lay, "156.9")[0].to_dict()
    assert score_regions([other], gold, lambda p: lay.area)["hit"] == 0.0


def test_search_hits_share_their_rows_by_score_and_each_page_keeps_its_best(helios: Index) -> None:
    from trident_local.regions import attach

    hits = helios.search(QUESTION, k=3)
    per_page = search_regions(helios, QUESTION, hits)
    assert len(per_page) == len(hits)
    budget = max(attach.MIN_ROWS, attach.ROWS_PER_HIT * len(hits))
    assert sum(map(len, per_page)) <= budget
    for h, regions in zip(hits, per_page, strict=True):
        lay = layout_of(helios, h.doc_id, h.page)
        alone = question_regions(lay, QUESTION, 1, numbers_first=True)
        assert regions[:1] == alone  # every page that matches at all shows its best row first
    # one hit alone has the whole minimum budget for its page
    alone = search_regions(helios, QUESTION, hits[:1])[0]
    assert len(alone) >= len(per_page[0]) and alone[:len(per_page[0])] == per_page[0]


def test_a_row_that_prints_only_the_questions_own_numbers_does_not_count_as_printing_one() -> None:
    from trident_local.regions.layout import Cell, PageLayout, Row

    def row(y: float, text: str) -> Row:
        return Row([Cell((40.0, y, 400.0, y + 10), text)])

    heading = row(100, "Time spent with family and friends in 2010")
    value = row(140, "Time spent with family and friends 21%")
    lay = PageLayout(1, 600.0, 800.0, [heading, row(120, "unrelated words here"), value])
    question = "How much time was spent with family and friends in 2010?"
    first = question_regions(lay, question, 1, numbers_first=True)
    assert [r.text for r in first] == ["Time spent with family and friends 21%"]
    # without numbers_first the heading, which holds every word of the question, wins
    assert question_regions(lay, question, 1)[0].text.startswith("Time spent")


def test_a_search_hit_row_that_says_it_in_other_words_is_found_by_its_embedding(tmp_path: Path) -> None:
    import pymupdf

    lines = ["Annual report of the company", "The board met six times", "Revenue grew in every region",
             "Our workforce numbered 1,914 people at the end of the year", "Offices opened in two cities",
             "Dividends were paid twice", "The company was founded in 1990 and is based in Dubai"]
    doc = pymupdf.open()
    page = doc.new_page()
    for i, line in enumerate(lines):
        page.insert_text((40, 60 + 20 * i), line, fontsize=10)
    doc.save(tmp_path / "report.pdf")
    idx = Index.create(tmp_path / "index")
    idx.add([tmp_path / "report.pdf"], workers=1)
    question = "How many employees does the company have?"
    hits = idx.search(question, k=1)
    by_words = [r.text for r in search_regions(idx, question, hits, by_embedding=False)[0]]
    assert not any("workforce" in t for t in by_words)  # it shares no word with the question
    found = [r.text for r in search_regions(idx, question, hits)[0]]
    assert "company" in found[0] and "company" in found[1]  # the words still count first
    at = {t.split()[0]: i for i, t in enumerate(found)}
    # the row that means what the question asks ranks above the others that share no word with it
    assert at["Our"] < at["Revenue"] and at["Our"] < at["Offices"]
