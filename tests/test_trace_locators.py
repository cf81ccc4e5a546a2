"""Paper records and typed evidence locators on generated paper-like PDFs (no embedder: lexical retrieval)."""

from __future__ import annotations

import io
from pathlib import Path

import pymupdf
import pytest
from PIL import Image, ImageDraw

from trident_local.config import Config
from trident_local.docs.ingest import ingest_pdf
from trident_local.docs.paper_meta import (
    arxiv_id_from_name,
    doi_from_text,
    normalize_paper_id,
    paper_meta,
)
from trident_local.index import Index
from trident_local.trace.evidence import ObjectRetriever, block_table, doc_candidates, label_mentions
from trident_local.trace.papers import PaperIndex, paper_record

CSS = "td,th{border:1px solid black; padding:2px} p{font-size:10pt}"


def _png() -> bytes:
    img = Image.new("RGB", (300, 200), "white")
    d = ImageDraw.Draw(img)
    d.rectangle([20, 60, 80, 180], fill=(30, 80, 160))
    d.rectangle([120, 100, 180, 180], fill=(200, 80, 60))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def paper_pdf(path: Path, *, title: str, system: str, stamp: str = "", doi: str = "", topic: str = "parsing") -> Path:
    """Page 1: title, authors, abstract (and an arXiv margin stamp or a DOI footer). Page 2: a ruled table with a
    "Table 1:" caption, a figure with a "Figure 2:" caption, a numbered display equation, a sentence citing [3]."""
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((72, 80), title, fontsize=18)
    p.insert_text((72, 110), "Ada Lovelace1, Alan Turing2", fontsize=11)
    p.insert_text((72, 126), "1University of Somewhere", fontsize=10)
    p.insert_text((72, 160), "Abstract", fontsize=12)
    p.insert_textbox(pymupdf.Rect(72, 170, 520, 300),
                     f"We present {system}, a new method for {topic}. {system} reaches an accuracy of 91.5 percent "
                     f"on the benchmark and runs on one CPU.", fontsize=10)
    p.insert_text((72, 330), "1 Introduction", fontsize=12)
    p.insert_textbox(pymupdf.Rect(72, 340, 520, 420),
                     f"Research on {topic} has a long history. This paper describes our system in detail.",
                     fontsize=10)
    if stamp:
        p.insert_text((30, 600), stamp, fontsize=16, rotate=90)
    if doi:
        p.insert_text((72, 800), f"Journal of Tests 2021. https://doi.org/{doi}", fontsize=8)
    p = doc.new_page()
    p.insert_htmlbox(pymupdf.Rect(72, 50, 520, 230), f"""
<p>Table 1: Results of {system} and the baseline on {topic}.</p>
<table><tr><th>Model</th><th>Accuracy</th><th>Speed</th></tr>
<tr><td>{system}</td><td>91.5</td><td>120</td></tr><tr><td>Baseline</td><td>84.2</td><td>95</td></tr></table>""",
                     css=CSS)
    p.insert_image(pymupdf.Rect(150, 260, 450, 460), stream=_png())
    p.insert_text((72, 480), f"Figure 2: Training curves of {system} over ten epochs.", fontsize=10)
    p.insert_text((250, 530), "L = a + b", fontsize=11)
    p.insert_text((480, 530), "(1)", fontsize=11)
    p.insert_textbox(pymupdf.Rect(72, 560, 520, 640),
                     f"Our tokenizer follows the byte pair encoding of earlier work [3]. The loss in Equation 1 "
                     f"is minimized with gradient descent for {topic}.", fontsize=10)
    doc.save(path)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Index]:
    d = tmp_path_factory.mktemp("trace")
    paper_pdf(d / "paper_a.pdf", title="ZEBRA: Fast Parsing of Long Sentences", system="ZEBRA",
              stamp="arXiv:2401.01234v2  [cs.CL]  5 Jan 2024", topic="parsing")
    paper_pdf(d / "paper_b.pdf", title="Gradient Tricks for Image Segmentation", system="SEGNEXT",
              doi="10.5555/tests.2021.042", topic="segmentation")
    paper_pdf(d / "2305.11111v1.pdf", title="A Study of Protein Folding", system="FOLDER", topic="protein folding")
    idx = Index.create(d / "idx", Config(embedder="none", pools=["bm25"], ocr="none"))
    report = idx.add(sorted(d.glob("*.pdf")), workers=1)
    assert not report.failed
    return d, idx


# -- paper ids and metadata -----------------------------------------------------------------------------------
def test_arxiv_id_from_file_name() -> None:
    assert arxiv_id_from_name("2303.05039v2.pdf") == "2303.05039v2"
    assert arxiv_id_from_name("arXiv_2303.05039.pdf") == "2303.05039"
    assert arxiv_id_from_name("2023.acl-long.386.pdf") == ""
    assert arxiv_id_from_name("report_2020.pdf") == ""


def test_doi_prefers_the_fuller_candidate() -> None:
    text = ("Downloaded from http://direct.mit.edu/tacl/article-pdf/doi/10.1162/tacl_a_00660/2369509/tacl_a_00660.pdf"
            " ... 2024. https://doi.org/10.1162/tacl a 00660")
    assert doi_from_text(text) == "10.1162/tacl_a_00660"
    assert doi_from_text("see http://dx.doi.org/10.1016/j.ejmhg.2015.07.002.") == "10.1016/j.ejmhg.2015.07.002"
    assert doi_from_text("no identifier here") == ""


def test_normalize_paper_id() -> None:
    assert normalize_paper_id("arXiv:2303.05039V2") == "2303.05039v2"
    assert normalize_paper_id("https://doi.org/10.1162/TACL_A_00660") == "10.1162/tacl_a_00660"


def test_paper_meta_from_generated_papers(corpus) -> None:
    d, _ = corpus
    a = paper_meta(ingest_pdf(d / "paper_a.pdf"))
    assert (a.paper_id, a.id_kind, a.arxiv_id, a.year) == ("2401.01234v2", "arxiv", "2401.01234v2", 2024)
    assert a.title == "ZEBRA: Fast Parsing of Long Sentences"
    assert a.authors == ["Ada Lovelace", "Alan Turing"]
    assert a.abstract.startswith("We present ZEBRA, a new method for parsing.")
    assert "Introduction" not in a.abstract
    b = paper_meta(ingest_pdf(d / "paper_b.pdf"))
    assert (b.paper_id, b.id_kind, b.year) == ("10.5555/tests.2021.042", "doi", 2021)
    c = paper_meta(ingest_pdf(d / "2305.11111v1.pdf"))  # id from the file name, no stamp needed
    assert (c.paper_id, c.id_kind, c.year) == ("2305.11111v1", "arxiv", 2023)


def test_paper_records_are_cached_in_the_index(corpus) -> None:
    _, idx = corpus
    papers = PaperIndex(idx)
    ids = sorted(r.paper_id for r in papers.records())
    assert ids == ["10.5555/tests.2021.042", "2305.11111v1", "2401.01234v2"]
    doc_id = papers.resolve("arXiv:2401.01234V2")
    assert (idx.store.doc_dir(doc_id) / "paper.json").exists()
    assert paper_record(idx.store, doc_id).title.startswith("ZEBRA")
    assert papers.resolve("2401.01234") == doc_id  # version-less arXiv id
    assert papers.resolve("paper_a.pdf") == doc_id  # file names still work


def test_paper_search_and_named_selection(corpus) -> None:
    _, idx = corpus
    papers = PaperIndex(idx)
    hits = papers.search("Which method segments images with gradient tricks?")
    assert hits[0].paper_id == "10.5555/tests.2021.042"
    q = "Compare the accuracy of ZEBRA and SEGNEXT."
    chosen = papers.select(q, papers.search(q))
    assert sorted(h.paper_id for h in chosen) == ["10.5555/tests.2021.042", "2401.01234v2"]
    assert len(papers.select("How is protein folding studied?", papers.search("How is protein folding studied?"))) == 1


# -- locators --------------------------------------------------------------------------------------------------
def test_locators_of_all_five_types(corpus) -> None:
    d, _ = corpus
    cands = [c.obj for c in doc_candidates(ingest_pdf(d / "paper_a.pdf"))]
    p2 = [o for o in cands if o.page == 2]
    by_type = {t: [o for o in p2 if o.type == t] for t in ("table", "figure", "equation", "citation_context",
                                                           "text_span")}
    table = by_type["table"][0]
    assert (table.object_id, table.label) == ("p2:table:1", "Table 1")
    assert "91.5" in table.text and "Baseline" in table.text
    assert [o.label for o in by_type["figure"]] == ["Figure 2"]
    assert by_type["figure"][0].object_id == "p2:figure:1"
    eq = by_type["equation"][0]
    assert eq.label == "(1)" and "L = a + b" in eq.text
    assert any("[3]" in o.text for o in by_type["citation_context"])
    spans = by_type["text_span"]
    assert spans and [o.object_id for o in spans] == [f"p2:text_span:{i}" for i in range(1, len(spans) + 1)]
    assert not any(o.text.startswith(("Table 1:", "Figure 2:")) for o in spans)  # captions belong to objects
    assert not any("84.2" in o.text for o in spans)  # table cells are not text spans


def test_label_mentions() -> None:
    assert label_mentions("What does Table 3 show next to Fig. 2 and Eq. (4)?") == {"table3", "figure2", "eq4"}


def test_evidence_retrieval_by_type_and_label(corpus) -> None:
    _, idx = corpus
    papers = PaperIndex(idx)
    objs = ObjectRetriever(idx)
    a = papers.resolve("2401.01234v2")
    top = objs.search("Which table compares the accuracy of ZEBRA with the baseline?", [a])[0]
    assert top.locator() == {"paper": "2401.01234v2", "page": 2, "type": "table", "object": "Table 1",
                             "object_id": "p2:table:1"}
    top = objs.search("What do the training curves over ten epochs in the figure show?", [a])[0]
    assert (top.type, top.label, top.page) == ("figure", "Figure 2", 2)
    top = objs.search("Which prior work does the tokenizer follow? Give the citation.", [a])[0]
    assert (top.type, top.page) == ("citation_context", 2)
    named = objs.search("What is in Table 1?", [a])
    chosen = objs.select("What is in Table 1?", named, [a])
    assert [e.label for e in chosen] == ["Table 1"]


def test_block_table_reads_a_table_without_rules() -> None:
    doc = pymupdf.open()
    p = doc.new_page()
    p.insert_text((72, 80), "Table 4: Accuracy of the retrievers.", fontsize=10)
    p.insert_textbox(pymupdf.Rect(100, 95, 400, 125), "Model\nAcc.", fontsize=9)
    p.insert_textbox(pymupdf.Rect(100, 127, 400, 190), "BM25\n57.3\nDPR\n60.4", fontsize=9)
    from trident_local.docs.ingest import _blocks
    from trident_local.docs.model import Page

    blocks = _blocks(p)
    page = Page(number=1, text="", width=595, height=842, blocks=blocks)
    cap = next(b for b in blocks if b.text.startswith("Table 4"))
    assert block_table(page, cap.bbox) == "Model | Acc.\nBM25 | 57.3\nDPR | 60.4"
