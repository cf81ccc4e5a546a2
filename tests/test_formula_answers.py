"""Metrics the question defines: parsing the definition, reading line items by label and year column,
and the no-model ask that answers with the computation and cites the operand cells."""

from __future__ import annotations

import pytest
from pdf_factory import acme_filing, indexed

from trident_local.generate.ask import ask
from trident_local.generate.formula import (
    Operand,
    asked,
    cell_number,
    decimals,
    definitions,
    evaluate,
    label_match,
    page_scale,
    question_year,
    recompute,
    row_scale,
    year_cell,
)
from trident_local.generate.line_item import ItemQuestion, item_question
from trident_local.generate.metric_forms import metric_form
from trident_local.generate.self_check import recheck_computation
from trident_local.index import Index
from trident_local.regions.attach import layout_of
from trident_local.regions.layout import Cell, PageLayout, Row

CCC = ("What is the FY2019 cash conversion cycle (CCC) for Acme? CCC is defined as: DIO + DSO - DPO. "
       "DIO is defined as: 365 * (average inventory between FY2018 and FY2019) / (FY2019 COGS). "
       "DSO is defined as: 365 * (average accounts receivable between FY2018 and FY2019) / (FY2019 Revenue). "
       "DPO is defined as: 365 * (average accounts payable between FY2018 and FY2019) / (FY2019 COGS). "
       "Round your answer to one decimal place.")
TURNOVER = ("What is Acme's FY2019 inventory turnover ratio? Inventory turnover ratio is defined as: "
            "(FY2019 COGS) / (average inventory between FY2018 and FY2019). Round your answer to two decimal "
            "places. Please base your judgments on the balance sheet and the income statement.")


def test_the_question_states_its_metric_year_and_rounding() -> None:
    defs = definitions(CCC)
    assert list(defs) == ["ccc", "dio", "dso", "dpo"] and defs["ccc"] == "DIO + DSO - DPO"
    assert asked(CCC, defs) == "ccc" and question_year(CCC) == 2019 and decimals(CCC) == 1
    assert decimals(TURNOVER) == 2 and asked(TURNOVER, definitions(TURNOVER)) == "inventory turnover ratio"
    # a metric built on the defined one, which the question does not define, is not answered from it
    margin = ("What is the FY2018 - FY2020 3 year average unadjusted EBITDA % margin for Walmart? Define "
              "unadjusted EBITDA as unadjusted operating income + depreciation and amortization.")
    assert asked(margin, definitions(margin)) is None
    assert definitions("What was revenue in 2019?") == {}


def test_nested_definitions_are_evaluated_and_written_out_with_their_operands() -> None:
    book = {("inventory", 2018): 100.0, ("inventory", 2019): 120.0, ("accounts receivable", 2018): 50.0,
            ("accounts receivable", 2019): 70.0, ("accounts payable", 2018): 80.0, ("accounts payable", 2019): 90.0,
            ("COGS", 2019): 730.0, ("Revenue", 2019): 1460.0}

    def lookup(name: str, year: int) -> Operand | None:
        v = book.get((name, year))
        return None if v is None else Operand(name, year, v, name, f"{v:,.0f}", 1)

    fa = evaluate(CCC, lookup)
    dio, dso, dpo = 365 * 110 / 730, 365 * 60 / 1460, 365 * 85 / 730
    assert fa is not None and fa.value == pytest.approx(dio + dso - dpo) and fa.text == f"{dio + dso - dpo:.1f}"
    assert fa.shown.startswith(f"{fa.text} = (365 * ((100 + 120) / 2) / 730) + (365 * ((50 + 70) / 2) / 1,460)")
    assert {o.item for o in fa.operands} == {"inventory", "accounts receivable", "accounts payable", "COGS", "Revenue"}
    del book[("Revenue", 2019)]
    assert evaluate(CCC, lookup) is None  # a missing line item: no answer, not a guess


def test_row_labels_name_line_items_by_every_word_or_a_common_name() -> None:
    assert label_match("total current assets", "Total current assets") == 1.0
    assert label_match("total current assets", "Other current assets") == 0.0
    assert label_match("inventory", "Inventories, net (Note 6)") >= 0.5
    assert label_match("COGS", "Cost of products sold") == 1.0
    assert label_match("COGS", "Total net sales") == 0.0 and label_match("COGS", "Other costs - COGS") < 0.5
    assert label_match("net income", "Reinvested earnings") == 0.0
    assert label_match("PP&E", "Property and equipment, net") > label_match("PP&E", "Total property and equipment")
    # a qualifier after a comma is not part of the item's name; words before it are
    assert label_match("capex", "Capital expenditures, net of construction payable") == 1.0
    assert label_match("capex", "Reportable segment capital expenditures") < 1.0
    assert label_match("accounts receivable", "Accounts receivable, less allowances of $12") == 1.0
    assert label_match("total debt", "Total long-term debt, net") < 1.0


def _cell(x0: float, x1: float, y: float, text: str) -> Cell:
    return Cell((x0, y, x1, y + 10), text)


def test_the_year_column_is_read_from_the_heading_row_above() -> None:
    one_cell = Row([_cell(380, 580, 100, "December 28, 2019 December 29, 2018 December 30, 2017")])
    body = Row([_cell(14, 90, 120, "Cost of products sold"), _cell(420, 442, 120, "16,830"),
                _cell(488, 519, 120, "17,347"), _cell(555, 578, 120, "17,043")])
    lay = PageLayout(1, 612, 792, [one_cell, body])
    assert year_cell(lay, 1, 2019).text == "16,830" and year_cell(lay, 1, 2017).text == "17,043"
    assert year_cell(lay, 1, 2016) is None
    split = Row([_cell(17, 190, 100, "(In millions)"), _cell(467, 485, 100, "2020"), _cell(549, 566, 100, "2019")])
    body = Row([_cell(28, 90, 120, "Accounts payable"), _cell(489, 524, 120, "1,174"), _cell(569, 590, 120, "1,587")])
    lay = PageLayout(1, 612, 792, [split, body])
    assert year_cell(lay, 1, 2019).text == "1,587"


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory) -> Index:
    root = tmp_path_factory.mktemp("formula")
    return indexed(root, acme_filing(root / "acme_2019_10k.pdf", balance_scale="(in thousands)"))


def test_ask_computes_the_defined_metric_and_cites_its_operand_cells(filing: Index) -> None:
    res = ask(filing, TURNOVER)
    a = res.answer
    assert a.text == f"{16830 / ((2721 + 2667) / 2):.2f}" == "6.25"  # thousands on the balance sheet: scaled
    assert a.computation == "6.25 = 16,830 / (((2,667,000 * 0.001) + (2,721,000 * 0.001)) / 2)"
    assert "computed from the question's definition" in a.gate
    assert [c.page for c in a.citations] == [1, 2]
    cells = {(r["page"], r["text"]) for c in a.citations for r in c.regions if r["kind"] == "cell"}
    assert cells == {(1, "16,830"), (2, "2,721,000"), (2, "2,667,000")}
    labels = {r["text"] for c in a.citations for r in c.regions if r["kind"] == "row-header"}
    assert labels == {"Cost of products sold", "Inventories"}
    # a question that defines nothing and names no line item is answered by the evidence-first path
    assert "line item" not in ask(filing, "How did Acme's net sales change from 2018 to 2019?").answer.gate


def test_a_statement_prints_negatives_in_parentheses() -> None:
    assert cell_number("(10,205)") == -10205 and cell_number("-1,174") == -1174
    assert cell_number("2,672 $") == 2672 and cell_number("—") is None


def test_a_written_out_computation_is_redone() -> None:
    assert recompute("6.25 = 16,830 / ((2,667 + 2,721) / 2)") is True
    assert recompute("6.30 = 16,830 / ((2,667 + 2,721) / 2)") is False
    assert recompute("-3.7 = (365 * 1.5 / 730) - 4.45") is True
    assert recompute("0.66 = (1,469,502 * 0.001) / (2,213,556 * 0.001)") is True  # scales bind first
    assert recompute("Coastal 2023 95.2 - Coastal 2022 74.5 = 20.7") is None  # another form: not redone here


def test_the_self_check_rereads_the_operand_cells_and_redoes_the_arithmetic(filing: Index) -> None:
    import copy

    a = ask(filing, TURNOVER).answer
    check = a.verification
    assert check["status"] == "supported" and check["model_calls"] == 0
    assert check["claims"][0]["flags"] == ["computation-rechecked"]
    wrong = copy.deepcopy(a)
    wrong.computation = wrong.computation.replace("6.25 =", "7.25 =")
    assert recheck_computation(filing, wrong).status == "flagged"
    moved = copy.deepcopy(a)
    cell = next(r for c in moved.citations for r in c.regions if r["kind"] == "cell")
    cell["bbox"] = [b + 40 for b in cell["bbox"]]  # a box that does not print the value
    got = recheck_computation(filing, moved)
    assert got.status == "flagged" and "not printed where cited" in got.claims[0].why


@pytest.mark.parametrize(("question", "want"), [
    ("What is the year end FY2019 total amount of inventories for Best Buy? Answer in USD millions. Base your "
     "judgments on the information provided primarily in the balance sheet.", ("inventories", 2019, 1.0)),
    ("We need to calculate a financial metric by using information only provided within the balance sheet. "
     "Please answer the following question: what is Boeing's year end FY2018 net property, plant, and equipment "
     "(in USD millions)?", ("net property plant and equipment", 2018, 1.0)),
    ("How much (in USD billions) did American Water Works pay out in cash dividends for FY2020?",
     ("cash dividends", 2020, 1000.0)),
    ("how much total current assets did Nike have at the end of FY2019?", ("total current assets", 2019, None)),
    ("what is Cash and cash equivalents for Best Buy for the fiscal year ending January 28, 2023? Answer in "
     "million", ("Cash and cash equivalents", 2023, 1.0)),
    ("what is total liabilities for COSTCO in FY 2021?Answer in thousands.", ("total liabilities", 2021, 0.001)),
])
def test_a_one_item_question_names_its_item_year_and_unit(question: str, want: tuple) -> None:
    assert item_question(question) == ItemQuestion(*want)


@pytest.mark.parametrize("question", [
    "What is Adobe's year-over-year change in unadjusted operating income from FY2015 to FY2016?",
    "what is Long-term Debt to Total Liabilities for COSTCO in FY2021?",
    "What is the FY2019 - FY2021 3 year average unadjusted operating income % margin for Corning?",
    "According to the chart on page 14 how much time was spent with family and friends in 2010?",
    "What is the FY2022 retention ratio for Pepsi?",
    "What was the revenue of the segment that grew most?",  # no year
])
def test_a_computation_a_comparison_or_a_clause_is_not_one_item(question: str) -> None:
    assert item_question(question) is None


def test_an_other_row_does_not_name_the_item_and_a_scale_reads_through_odd_spaces() -> None:
    assert label_match("long-term debt", "Other long-term debt") == 0.0
    assert label_match("other assets", "Other assets") == 1.0
    assert page_scale("CONSOLIDATED BALANCE SHEETS\n(In\xa0thousands,\xa0except share data)") == 0.001


def test_ask_reads_the_line_item_in_the_unit_asked_and_cites_its_cell(filing: Index) -> None:
    a = ask(filing, "What is the year end FY2019 total amount of inventories for Acme? Answer in USD millions.").answer
    assert a.text == "2,721" and a.computation == "2,721 = 2,721,000 * 0.001"  # thousands on the page
    assert "read from the line item's row" in a.gate
    assert [c.page for c in a.citations] == [2]
    assert {(r["kind"], r["text"]) for r in a.citations[0].regions} == {("cell", "2,721,000"),
                                                                        ("row-header", "Inventories")}
    assert a.verification["status"] == "supported"
    assert a.verification["claims"][0]["flags"] == ["computation-rechecked"]
    # a common name for the item, the column of the year asked, the page's own unit where none is asked
    b = ask(filing, "What is Acme's FY2018 cost of goods sold?").answer
    assert b.text == "17,347" and b.computation == "" and b.citations[0].regions[0]["text"] == "17,347"
    assert ask(filing, "What were Acme's FY2019 net sales (in USD billions)?").answer.text == "25.0"


@pytest.mark.parametrize(("question", "expression"), [
    ("What is the FY2018 - FY2020 3 year average of capex as a % of revenue for MGM Resorts? Answer in units of "
     "percents and round to one decimal place.",
     "((FY2018 capex) / (FY2018 revenue) + (FY2019 capex) / (FY2019 revenue) + (FY2020 capex) / (FY2020 revenue))"
     " / 3 * 100"),
    ("what is Nike's three year average of cost of goods sold as a % of revenue from FY2016 to FY2018?",
     "((FY2016 cost of goods sold) / (FY2016 revenue) + (FY2017 cost of goods sold) / (FY2017 revenue) + "
     "(FY2018 cost of goods sold) / (FY2018 revenue)) / 3 * 100"),
    ("what is the FY2015 depreciation and amortization (D&A from cash flow statement) % margin for AMD?",
     "((FY2015 depreciation and amortization) / (FY2015 revenue)) * 100"),
    ("What is Adobe's year-over-year change in unadjusted operating income from FY2015 to FY2016 (in units of "
     "percents and round to one decimal place)?",
     "((FY2016 unadjusted operating income) - (FY2015 unadjusted operating income)) / "
     "(FY2015 unadjusted operating income) * 100"),
    ("What is Lockheed Martin's 2 year total revenue CAGR from FY2020 to FY2022?",
     "(((FY2022 revenue) / (FY2020 revenue)) ^ (1 / 2) - 1) * 100"),
])
def test_a_standard_metric_is_written_as_its_formula(question: str, expression: str) -> None:
    form = metric_form(question)
    assert form is not None and form.expression == expression and form.percent


def test_a_standard_metric_whose_years_do_not_match_its_length_is_not_guessed() -> None:
    assert metric_form("What is the FY2018 - FY2020 2 year average operating income % margin?") is None
    assert metric_form("What is the revenue CAGR?") is None and metric_form("What was revenue in 2019?") is None


def test_growth_rates_and_amounts_paid_out() -> None:
    assert recompute("0.4 = ((65,984 / 65,398) ^ (1 / 2) - 1) * 100") is True
    book = {("capex", 2019): -50.0, ("revenue", 2019): 1000.0}

    def lookup(name: str, year: int) -> Operand | None:
        v = book.get((name, year))
        return None if v is None else Operand(name, year, v, name, f"({abs(v):,.0f})" if v < 0 else f"{v:,.0f}", 1)

    fa = evaluate("What is the FY2019 capex % margin? Round to one decimal place.", lookup)
    assert fa is not None and fa.text == "5.0%" and fa.shown == "5.0 = (50 / 1,000) * 100"  # "(50)" paid out


def test_ask_computes_a_standard_metric_from_one_statement_in_its_unit(filing: Index) -> None:
    a = ask(filing, "What is Acme's FY2019 gross profit % margin? Round your answer to one decimal place.").answer
    assert a.text == f"{100 * 8147 / 24977:.1f}%" and "standard formula" in a.gate
    assert a.computation == "32.6 = (8,147 / 24,977) * 100" and [c.page for c in a.citations] == [1]
    # the unit is the one stated nearest above the row, not the page's first
    lay = layout_of(filing, next(iter(filing.store.manifest.documents)), 2)
    assert row_scale(lay, len(lay.rows) - 1) == 0.001 and row_scale(lay, 0) is None


def test_plurals_and_common_abbreviations_name_the_same_row() -> None:
    assert label_match("inventory", "Inventories") == 1.0 and label_match("total expenses", "Total expense") == 1.0
    assert label_match("net AR", "Accounts receivable, net") > 0.6 and label_match("SG&A", "Selling, general and "
                                                                                   "administrative expenses") == 1.0
    assert label_match("gross", "Gross") == 1.0  # "-ss" is not a plural


def test_a_company_named_in_lower_case_is_not_part_of_the_item(filing: Index) -> None:
    from trident_local.generate.line_item import own_names, without_company

    names = own_names("COSTCO_2021_10K.pdf", "UNITED STATES ... COSTCO WHOLESALE CORPORATION (Exact name of registrant)")
    assert without_company("total liabilities for costco", names) == "total liabilities"
    assert without_company("provision for income taxes", names) == "provision for income taxes"
    assert without_company("total liabilities for costco", frozenset()) == "total liabilities for costco"
    a = ask(filing, "What is total current assets for acme in FY 2019?").answer  # "acme": the file's name
    assert "read from the line item's row" in a.gate
    assert {r["text"] for r in a.citations[0].regions} == {"7,000,000", "Total current assets"}


@pytest.mark.parametrize(("question", "expression", "percent"), [
    ("What is current ratio in FY2021 for Nike? Round your answer to two decimal places.",
     "(FY2021 total current assets) / (FY2021 total current liabilities)", False),
    ("what is the FY2019 fixed asset turnover ratio for Activision Blizzard?",
     "(FY2019 revenue) / (average pp&e between FY2018 and FY2019)", False),
    ("What is Amazon's FY2017 days payable outstanding (DPO)? Round your answer to two decimal places.",
     "365 * (average accounts payable between FY2016 and FY2017) / (FY2017 cogs)", False),
    ("What is cash conversion cycle in FY2021 for Nike?", "(FY2021 dio) + (FY2021 dso) - (FY2021 dpo)", False),
    ("What is effective tax ratio of Best Buy for the fiscal year ending January 28, 2023? Answer in percentage.",
     "((FY2023 income tax expense) / (FY2023 income before income taxes)) * 100", True),
    ("What is sales to working capital ratio of Netflix in FY 2015? Round your answer to two decimal places.",
     "(FY2015 sales) / (FY2015 working capital)", False),
    ("what is Amazon's FY2017 debt to ebitda ratio? round your answer to three decimal",
     "(FY2017 debt) / (FY2017 ebitda)", False),
    ("what is Amazon's FY2017 Interest Expense to Average Long-Term Debt Ratio?",
     "(FY2017 Interest Expense) / (average Long-Term Debt between FY2016 and FY2017)", False),
    ("What is the FY2017 - FY2019 3 year average of capex to revenue ratio for Activision Blizzard?",
     "((FY2017 capex) / (FY2017 revenue) + (FY2018 capex) / (FY2018 revenue) + (FY2019 capex) / (FY2019 revenue)) / 3",
     False),
    ("What is the FY2019 cost of goods sold as a % of revenue for Acme?",
     "((FY2019 cost of goods sold) / (FY2019 revenue)) * 100", True),
    ("What was Acme's operating margin in FY2019?", "((FY2019 operating income) / (FY2019 revenue)) * 100", True),
    ("What is the FY2020 dividend payout ratio for Acme?", "(FY2020 cash dividends) / (FY2020 net income)", False),
])
def test_a_named_ratio_is_computed_by_its_textbook_definition(question: str, expression: str, percent: bool) -> None:
    form = metric_form(question)
    assert form is not None and form.expression == expression and form.percent is percent and form.unit is None


def test_a_named_amount_is_in_the_unit_asked_and_nothing_else_is_a_named_metric() -> None:
    form = metric_form("What is Netflix working capital in FY2015? Answer in thousands.")
    assert form is not None and form.unit == 0.001 and form.expression.endswith(" / 0.001") and not form.percent
    form = metric_form("What was Acme's FY2022 free cash flow (FCF) in USD billions?")
    assert form is not None and form.expression == "((FY2022 cash from operations) - (FY2022 capex)) / 1000"
    for question in ("What is the ratio of men to women in the survey?",  # no year
                     "How much higher is the accuracy of PaLM-2L compared to GPT-4 in 2023?",
                     "What was revenue in 2019? Round your answer to two decimal places.",
                     "What is the current ratio change from FY2020 to FY2021?",  # two years
                     "What is Amazon's FY2017 operating profit margin before depreciation?",  # another metric
                     # "X to Y" in prose is not a ratio
                     "In 2019, by what percentage is the share saying jobs are difficult to find in their community?",
                     "What percentage of respondents reported not conducting promotions to customers in 2015?"):
        assert metric_form(question) is None, question


def test_a_row_of_movements_does_not_name_the_balance_and_items_have_a_statement() -> None:
    from trident_local.generate.statements import BALANCE, CASH_FLOW, INCOME, item_statement

    assert label_match("short-term investments", "Purchases of short-term investments") == 0.0
    assert label_match("accounts receivable", "(Increase) decrease in accounts receivable") == 0.0
    assert label_match("cash and cash equivalents", "Net increase (decrease) in cash and equivalents") == 0.0
    assert label_match("d&a", "Depreciation and amortization of property, equipment and intangibles") == 1.0
    assert label_match("net PPNE", "Property, plant and equipment, net") == 1.0
    # a label with another item's words, or a total that is not exactly the one named, is another item
    for item, label in (("total assets", "Total current assets"), ("total liabilities", "Total liabilities and equity"),
                        ("revenue", "Cost of revenue"), ("revenue", "Deferred revenue"), ("net income", "Adjusted net income"),
                        ("short-term investments", "Cash, cash equivalents and short-term investments"),
                        ("total liabilities", "Total accrued liabilities"), ("total assets", "Total other assets")):
        assert label_match(item, label) == 0.0, (item, label)
    assert label_match("net income", "Net loss") == 1.0 and label_match("gross profit", "Gross margin") == 1.0
    assert label_match("operating income", "Earnings from operations") == 1.0
    assert label_match("total assets", "TOTAL ASSETS") == 1.0 and label_match("cogs", "Total cost of sales") > 0.6
    assert label_match("sales", "Net sales") == 1.0 and label_match("stockholder equity", "Total stockholders' equity")
    assert [item_statement(i) for i in ("total current liabilities", "cogs", "d&a", "pp&e", "headcount")] == [
        BALANCE, INCOME, CASH_FLOW, BALANCE, None]


def test_ask_computes_a_named_ratio_without_a_definition(filing: Index) -> None:
    a = ask(filing, "What is Acme's FY2019 inventory turnover ratio? Round your answer to two decimal places.").answer
    assert a.text == "6.25" and "standard formula" in a.gate
    assert a.confidence > 0.8  # a table answer's own model: such answers are mostly right (0.09 was a passage's)
    assert a.computation == "6.25 = 16,830 / (((2,667,000 * 0.001) + (2,721,000 * 0.001)) / 2)"
    a = ask(filing, "What is the gross profit to total current assets ratio for Acme in FY2019?").answer
    assert a.text == f"{8147 / 7000:.2f}" and [c.page for c in a.citations] == [1, 2]


def test_an_item_the_statement_does_not_print_comes_from_its_own_rows_not_from_a_note(tmp_path) -> None:
    """No "Total liabilities" row on the balance sheet and no gross margin row on the income statement: they
    are derived from the statements' own rows (total liabilities and equity less total equity; revenue less
    cost of sales), not read from a note's rows of the same name (a plan's liabilities, a quarter's margin)."""
    import pymupdf
    from pdf_factory import statement_page

    path = tmp_path / "globex_2019_10k.pdf"
    doc = pymupdf.open()
    statement_page(doc, "Globex Corporation Consolidated Statements of Income", [
        ("Net sales", "10,000", "9,000"), ("Cost of sales", "6,000", "5,500")], scale="(in millions)")
    statement_page(doc, "Globex Corporation Consolidated Balance Sheets", [
        ("Total current assets", "4,000", "3,500"), ("Total assets", "20,000", "18,000"),
        ("Total current liabilities", "3,000", "2,800"), ("Total equity", "5,000", "4,500"),
        ("Total liabilities and equity", "20,000", "18,000")], scale="(in millions)")
    statement_page(doc, "Note 9 - Pension plans and quarterly results (unaudited)", [
        ("Total liabilities", "112", "100"), ("Gross margin", "1,200", "1,100")], scale="(in millions)")
    doc.save(path)
    idx = indexed(tmp_path, path)
    a = ask(idx, "What is Globex's FY2019 debt ratio?").answer
    assert a.text == "0.75" and "20,000 - 5,000" in a.computation and {c.page for c in a.citations} == {2}
    a = ask(idx, "What is Globex's FY2019 gross margin?").answer
    assert a.text == "40.00%" and "10,000 - 6,000" in a.computation and {c.page for c in a.citations} == {1}
    assert a.support.count("Net sales (2019)") == 1  # read once, used twice: listed and boxed once
    assert len([r for c in a.citations for r in c.regions if r["kind"] == "cell"]) == 2


def test_whether_a_metric_is_positive_is_answered_yes_or_no_with_its_value(filing: Index) -> None:
    defined = (" Cash surplus is defined as: (FY2019 cash and cash equivalents) - (FY2019 inventories). "
               "Answer in USD millions.")
    a = ask(filing, "Does Acme have a positive cash surplus in FY2019?" + defined).answer
    assert a.text == a.candidate == "No: -442.00" and a.computation.startswith("-442.00 = ")
    assert ask(filing, "Did Acme have a negative cash surplus in FY2019?" + defined).answer.text == "Yes: -442.00"
    assert ask(filing, "What is Acme's FY2019 cash surplus?" + defined).answer.text == "-442.00"  # not yes/no


def test_a_one_item_question_says_where_to_read_it_and_the_company_may_start_with_a_digit() -> None:
    asked = item_question("What is the FY2018 capital expenditure amount (in USD millions) for 3M based on cash flow "
                          "statement?")
    assert asked == ItemQuestion("capital expenditure", 2018, 1.0)


def test_an_expense_a_statement_prints_in_parentheses_counts_as_its_amount() -> None:
    book = {("income tax expense", 2017): ("Provision for income taxes", -769.0),
            ("income before income taxes", 2017): ("Income before income taxes", 3806.0),
            ("interest", 2017): ("Interest expense", -848.0), ("long-term debt", 2017): ("Long-term debt", 24743.0),
            ("long-term debt", 2016): ("Long-term debt", 7694.0), ("cogs", 2020): ("Total cost of sales", -56744.0),
            ("inventory", 2020): ("Inventories", 3545.0), ("inventory", 2019): ("Inventories", 3619.0)}

    def lookup(name: str, year: int) -> Operand | None:
        label, v = book.get((name.lower(), year), (None, None))
        return None if v is None else Operand(name, year, v, label, f"({abs(v):,.0f})" if v < 0 else f"{v:,.0f}", 1)

    fa = evaluate("What is Amazon's FY2017 effective tax rate? Round your answer to three decimal places.", lookup)
    assert fa is not None and fa.text == "0.202"
    fa = evaluate("What is the FY2020 inventory turnover ratio?", lookup)  # a cost printed "(56,744)"
    assert fa is not None and fa.text == f"{56744 / ((3545 + 3619) / 2):.2f}"
    fa = evaluate("What is the FY2017 interest to average long-term debt ratio? Answer in percentage.", lookup)
    assert fa is not None and fa.text == f"{100 * 848 / ((24743 + 7694) / 2):.2f}%"
