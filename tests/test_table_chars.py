"""The faster character list for ``find_tables`` holds PyMuPDF's own, dict for dict, and tables with it."""

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


def test_pymupdf_function_restored_after_an_error() -> None:
    with pytest.raises(RuntimeError), table_chars.fast_chars():
        assert ptable.make_chars is table_chars.make_chars
        raise RuntimeError("boom")
    assert ptable.make_chars is table_chars._STOCK


def test_a_changed_pymupdf_keeps_its_own(monkeypatch) -> None:
    monkeypatch.setattr(table_chars, "_STOCK", lambda page, clip=None: None)
    table_chars.supported.cache_clear()
    try:
        assert not table_chars.supported()
        with table_chars.fast_chars():
            assert ptable.make_chars is not table_chars.make_chars
    finally:
        table_chars.supported.cache_clear()


def test_a_failing_fast_path_falls_back_to_pymupdf(tmp_path, monkeypatch) -> None:
    page = _pages(tmp_path)[1]
    expected = objects.detect_tables(page)

    def broken(page, clip=None):
        raise ValueError("unexpected page")

    monkeypatch.setattr(table_chars, "make_chars", broken)
    assert objects.detect_tables(page) == expected and expected
