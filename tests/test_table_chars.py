"""The faster character list for ``find_tables`` holds PyMuPDF's own (dict for dict where MuPDF's style pass
changes nothing) and the same tables everywhere."""

from __future__ import annotations

import math

import pymupdf
import pymupdf.table as ptable
import pytest
from pdf_factory import rich_pdf

from trident_local.docs import objects, table_chars


def _pages(tmp_path) -> list[pymupdf.Page]:
    """The report's pages, a copy of the table page turned 90 degrees, and one with a shifted crop box."""
    doc = pymupdf.open(rich_pdf(tmp_path / "report.pdf"))
    doc.fullcopy_page(1)
    doc[-1].set_rotation(90)
    doc.fullcopy_page(1)
    doc[-1].set_cropbox(pymupdf.Rect(30, 40, 500, 700))
    path = tmp_path / "variants.pdf"
    doc.save(path)
    return list(pymupdf.open(path))


def _chars(fn, page: pymupdf.Page) -> list[dict]:
    ptable._CHARS_VAR.set([])
    fn(page)
    return list(ptable.CHARS._list())


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) for k in a
    )


def test_the_checked_pymupdf_is_recognised() -> None:
    assert table_chars.supported()  # else the fast path would silently never run


def test_same_character_dicts_as_pymupdf(tmp_path) -> None:
    pages = _pages(tmp_path)
    for page in pages:
        stock, fast = _chars(table_chars._STOCK, page), _chars(table_chars.make_chars, page)
        assert stock, f"page {page.number} has text"
        assert len(stock) == len(fast)
        assert all(_same(a, b) for a, b in zip(stock, fast, strict=True)), f"page {page.number}"
        assert list(stock[0]) == list(fast[0])  # the keys in PyMuPDF's order too


def test_same_tables_with_and_without(tmp_path, monkeypatch) -> None:
    pages = _pages(tmp_path)
    fast = [objects.detect_tables(p) for p in pages]
    monkeypatch.setattr(table_chars, "supported", lambda: False)
    assert [objects.detect_tables(p) for p in pages] == fast
    assert fast[1] and fast[3]  # the ruled table is found, on the turned page as well
    assert ptable.make_chars is table_chars._STOCK
    assert ptable.chars_in_rect is table_chars._STOCK_IN_RECT


def test_pymupdf_function_restored_after_an_error() -> None:
    with pytest.raises(RuntimeError), table_chars.fast_chars():
        assert ptable.make_chars is table_chars.make_chars
        raise RuntimeError("boom")
    assert ptable.make_chars is table_chars._STOCK
    assert ptable.chars_in_rect is table_chars._STOCK_IN_RECT


@pytest.mark.parametrize("function", ["_STOCK", "_STOCK_IN_RECT"])
def test_a_changed_pymupdf_keeps_its_own(monkeypatch, function) -> None:
    monkeypatch.setattr(table_chars, function, lambda *args, **kwargs: None)
    table_chars.supported.cache_clear()
    try:
        assert not table_chars.supported()
        with table_chars.fast_chars():
            assert ptable.make_chars is not table_chars.make_chars
            assert ptable.chars_in_rect is not table_chars.chars_in_rect
    finally:
        table_chars.supported.cache_clear()


def test_a_failing_fast_path_falls_back_to_pymupdf(tmp_path, monkeypatch) -> None:
    page = _pages(tmp_path)[1]
    expected = objects.detect_tables(page)

    def broken(page, clip=None):
        raise ValueError("unexpected page")

    monkeypatch.setattr(table_chars, "make_chars", broken)
    assert objects.detect_tables(page) == expected and expected


def _styled_table_page() -> pymupdf.Page:
    """A ruled 4x3 table whose header row is overprinted (fake bold) and whose middle column is
    underlined: text MuPDF's style pass merges and flags."""
    page = pymupdf.open().new_page()
    for r in range(4):
        for c in range(3):
            x, y = 60 + c * 120, 100 + r * 30
            page.insert_text((x + 6, y + 20), f"cell {r}{c} text", fontsize=10)
            if r == 0:
                page.insert_text((x + 6.3, y + 20), f"cell {r}{c} text", fontsize=10)
            if c == 1:
                page.draw_line((x + 6, y + 22), (x + 60, y + 22), width=0.5)
    for r in range(5):
        page.draw_line((60, 100 + r * 30), (420, 100 + r * 30))
    for c in range(4):
        page.draw_line((60 + c * 120, 100), (60 + c * 120, 220))
    return page


def test_without_the_style_pass_the_characters_differ_and_the_tables_do_not(monkeypatch) -> None:
    page = _styled_table_page()
    stock, fast = _chars(table_chars._STOCK, page), _chars(table_chars.make_chars, page)
    assert len(fast) > len(stock)  # the overprinted copies stay: this page exercises the difference
    assert any(c["bold"] for c in stock) and not any(c["bold"] for c in fast)
    tables = objects.detect_tables(page)
    assert tables and tables[0][0] == (60.0, 100.0, 420.0, 220.0)
    monkeypatch.setattr(table_chars, "supported", lambda: False)
    assert objects.detect_tables(page) == tables


def test_chars_in_rect_answers_as_pymupdf_does(tmp_path) -> None:
    page = _pages(tmp_path)[1]
    ptable._CHARS_VAR.set([])
    table_chars.make_chars(page)
    chars = ptable.CHARS._list()
    xs = [c["x0"] for c in chars] + [c["x1"] for c in chars]
    ys = [c["y0"] for c in chars] + [c["y1"] for c in chars]
    rects = [
        pymupdf.Rect(a, b, c, d) for a in xs[::97] for c in xs[5::89] for b in ys[::101] for d in ys[7::83]
    ]
    rects += [pymupdf.Rect(0, 0, math.nan, 900), pymupdf.Rect(-1e9, -1e9, 1e9, 1e9), pymupdf.Rect(5, 5, 4, 4)]
    answers = [table_chars.chars_in_rect(ptable.CHARS, r) for r in rects]
    assert answers == [table_chars._STOCK_IN_RECT(ptable.CHARS, r) for r in rects]
    assert any(answers) and not all(answers)


def test_chars_in_rect_scans_a_list_changed_since(tmp_path) -> None:
    page = _pages(tmp_path)[1]
    ptable._CHARS_VAR.set([])
    table_chars.make_chars(page)
    far = pymupdf.Rect(2000, -2000, 3000, -1000)  # y runs upwards in these dicts
    assert not table_chars.chars_in_rect(ptable.CHARS, far)
    ptable.CHARS.append({"x0": 2100.0, "x1": 2101.0, "y0": -1500.0, "y1": -1499.0})
    assert table_chars.chars_in_rect(ptable.CHARS, far)  # the stored boxes no longer describe the list
    assert not table_chars.chars_in_rect([], far)


def test_cell_text_takes_words_by_centre_edges_included_in_reading_order() -> None:
    words = objects._PageWords([
        (10, 10, 20, 20, "edge", 0, 0, 0),  # centre (15, 15): on the cell's corner
        (40, 10, 60, 20, "out", 0, 0, 1),  # centre x 50: right of the cell
        (0, 0, 30, 40, "wide", 0, 0, 2),  # centre (15, 20): inside though the word overhangs
        (16, 16, 18, 18, "small", 0, 0, 3),
    ])  # fmt: skip
    assert words.in_cell((15, 15, 45, 45)) == "edge wide small"
    assert words.in_cell(None) == "" and words.in_cell((100, 100, 200, 200)) == ""
    assert objects._PageWords([]).in_cell((0, 0, 1, 1)) == ""
