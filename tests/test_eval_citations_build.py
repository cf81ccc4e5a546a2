"""The injected citation benchmark: deterministic labels, balance, perturbations, skips, splits."""

from __future__ import annotations

import random

import pytest

from trident_local.evaluate.citations_build import (
    Instance,
    answer_text,
    build_instances,
    clean_question,
    make_claim,
    parse_pages,
    perturb_number,
    read_instances,
    write_instances,
)


def rec(doc, q, a, pages, fmt):
    return {"doc_id": doc, "question": q, "answer": a, "evidence_pages": str(pages), "answer_format": fmt,
            "evidence_sources": "['Table']"}


RECORDS = [
    rec("a.pdf", "How many engineers joined in 2011?", "14", [2], "Int"),
    rec("a.pdf", "What was the growth rate? Please write the answer in float format.", "12.50%", [5], "Float"),
    rec("b.pdf", "Who leads the company?", "Ingrid Halvorsen", [1], "Str"),
    rec("b.pdf", "Which colours are used? Write the answer in list format.", "['red', 'blue']", [9], "List"),
    rec("c.pdf", "What is the capital named on the map?", "Oslo", [3], "Str"),
    rec("c.pdf", "Which cities have offices?", "['Paris', 'Rome', 'Oslo']", [4], "List"),
    rec("c.pdf", "How many units were sold?", "5,100", [6], "Int"),
    rec("d.pdf", "How many blue arrows?", "0", [1], "Int"),
    # skipped ones
    rec("a.pdf", "What is unanswerable?", "Not answerable", [], "None"),
    rec("a.pdf", "No pages?", "3", [], "Int"),
    rec("a.pdf", "Beyond the end?", "3", [99], "Int"),
    rec("a.pdf", "Page zero?", "3", [0], "Int"),
    rec("a.pdf", "Several pages?", "3", [2, 3], "Int"),
    rec("a.pdf", "Empty list?", "[]", [2], "List"),
    rec("zz.pdf", "Missing document?", "3", [1], "Int"),
]
DOCS = {"a.pdf": ("ida", 10), "b.pdf": ("idb", 12), "c.pdf": ("idc", 8), "d.pdf": ("idd", 3)}


def test_claims_are_rule_based() -> None:
    assert clean_question("How many datasets are used? Give me an integer.") == "How many datasets are used?"
    assert clean_question("What is X? Please write the answer in list format, e.g., [\"a\"]") == "What is X?"
    assert clean_question("Which metric is best? (Give the algorithm name)") == "Which metric is best?"
    assert clean_question("List all pages, for example ['Page 2', 'Page 4']") == "List all pages"
    assert clean_question("Which one is greater? Foreign born, or cellphone?") == \
        "Which one is greater? Foreign born, or cellphone?"  # a real second question stays
    assert answer_text("['White', '10%']", "List") == "White and 10%"
    assert answer_text("['a', 'b', 'c']", "List") == "a, b and c"
    assert answer_text("[1500, 8000]", "List") == "1500 and 8000"
    assert answer_text("[]", "List") is None and answer_text("Right", "Str") == "Right"
    assert make_claim("How many? Write the answer in int format.", "9") == "How many? — 9"
    assert parse_pages("[5, 7]") == [5, 7] and parse_pages("") == [] and parse_pages("bad") == [] and \
        parse_pages([3]) == [3]


@pytest.mark.parametrize(
    ("answer", "check"),
    [
        ("14", lambda new, old: new != old and new.isdigit()),
        ("12.50%", lambda new, old: new.endswith("%") and len(new.split(".")[1]) == 3 and new != old),
        ("5,100", lambda new, old: "," in new and new != old),
        ("0", lambda new, old: new != "0" and new.isdigit()),
        ("0.0", lambda new, old: new != "0.0" and new.startswith("0.")),
        ("300 million", lambda new, old: new.endswith(" million") and new != old),
        ("1", lambda new, old: new != "1"),
    ],
)
def test_number_perturbation_changes_value_keeps_form(answer, check) -> None:
    for seed in range(20):
        new, old, to = perturb_number(answer, random.Random(seed))
        assert check(new, answer) and old != to
    assert perturb_number("no digits", random.Random(0)) is None


def test_build_is_balanced_deterministic_and_labels_follow_rules() -> None:
    inst, summ = build_instances(RECORDS, DOCS, seed=0, calib_fraction=0.25)
    assert summ.used_records == 8 and summ.instances == 24
    assert summ.by_label == {"supported": 8, "wrong_location": 8, "unsupported": 8}
    assert summ.skipped == {
        "not answerable": 1,
        "no gold pages": 1,
        "gold page beyond the document's length (dataset defect)": 1,
        "gold page 0 (not a 1-based page; dataset defect)": 1,
        "evidence on several pages": 1,
        "empty-list answer": 1,
        "document not in the index": 1,
    }
    assert [d["evidence_pages"] for d in summ.defects] == [[99], [0]]
    by_rec: dict[int, dict[str, Instance]] = {}
    for i in inst:
        by_rec.setdefault(i.record, {})[i.label] = i
    for r in by_rec.values():
        s, w, u = r["supported"], r["wrong_location"], r["unsupported"]
        assert s.cited_page in s.gold_pages and u.cited_page in u.gold_pages
        assert w.cited_page not in w.gold_pages and 1 <= w.cited_page <= w.n_pages
        dist = min(abs(w.cited_page - g) for g in w.gold_pages)
        assert (dist <= 2) == (w.location == "window")
        assert s.claim == w.claim != u.claim
        assert u.perturbation["from"] != u.perturbation["to"]
        if s.answer_format in ("Int", "Float"):
            assert u.perturbation["kind"] == "number"
        else:  # swapped with another document's answer of the same format
            assert u.perturbation["kind"] == "swap"
            donors = [x for x in RECORDS if x["answer_format"] == s.answer_format and x["doc_id"] != s.doc]
            assert any(answer_text(x["answer"], x["answer_format"]) == u.perturbation["to"] for x in donors)
        assert len({s.split, w.split, u.split}) == 1
    # d.pdf has 3 pages and its gold page 1: every other page is inside the window
    assert by_rec[7]["wrong_location"].location == "window"
    assert {i.location for i in inst if i.location} == {"window", "outside"}
    # whole documents per split
    splits: dict[str, set[str]] = {}
    for i in inst:
        splits.setdefault(i.doc, set()).add(i.split)
    assert all(len(v) == 1 for v in splits.values()) and summ.by_split.get("calib", 0) > 0
    again, _ = build_instances(RECORDS, DOCS, seed=0, calib_fraction=0.25)
    assert [i.to_dict() for i in again] == [i.to_dict() for i in inst]
    other, _ = build_instances(RECORDS, DOCS, seed=1, calib_fraction=0.25)
    assert [i.to_dict() for i in other] != [i.to_dict() for i in inst]
    assert {i.seed for i in other} == {1}


def test_any_evidence_mode_and_io(tmp_path) -> None:
    inst, summ = build_instances(RECORDS, DOCS, seed=0, evidence="any")
    assert summ.used_records == 9
    multi = [i for i in inst if i.gold_pages == [2, 3]]
    assert len(multi) == 3 and all(i.cited_page in (2, 3) for i in multi if i.label != "wrong_location")
    with pytest.raises(ValueError):
        build_instances(RECORDS, DOCS, evidence="some")
    path = tmp_path / "inst.jsonl"
    meta = write_instances(path, inst, summ)
    assert meta.name == "inst.meta.json" and read_instances(path) == inst
