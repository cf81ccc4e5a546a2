"""kernels.maxsim (torch path), packing, top-k and int8 against a float64 einsum reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from trident_kernels import (
    PackedPages,
    maxsim,
    maxsim_int8,
    maxsim_reference,
    maxsim_topk,
    pack_pages,
    pack_queries,
    quantize_pages,
)
from trident_kernels import blocks as blocks_mod
from trident_kernels.packed import as_tensor

DIM = 32
# Ragged on purpose: empty pages, one-token pages, runs of equal lengths, one long page.
PAGE_LENGTHS = [7, 0, 1, 33, 12, 12, 12, 0, 1, 250, 5, 5, 64, 3]
QUERY_LENGTHS = [5, 1, 9, 16]


def unit(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


def assert_matches(scores: torch.Tensor, expected: torch.Tensor) -> None:
    """fp32 accumulation against a float64 reference."""
    torch.testing.assert_close(scores.double(), expected.double(), atol=1e-5, rtol=1e-6)


@pytest.fixture(scope="module")
def pages() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return [unit(torch.randn(n, DIM, generator=g)) for n in PAGE_LENGTHS]


@pytest.fixture(scope="module")
def queries() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [unit(torch.randn(n, DIM, generator=g)) for n in QUERY_LENGTHS]


@pytest.fixture(scope="module")
def reference(queries, pages) -> torch.Tensor:
    return maxsim_reference(queries, pages)


def test_reference_matches_hand_computed_value():
    q = [torch.tensor([[1.0, 0.0], [0.0, 1.0]])]
    p = [torch.tensor([[0.5, 0.5], [2.0, -1.0]]), torch.zeros(0, 2), torch.tensor([[-1.0, -1.0]])]
    # page 0: max(0.5, 2) + max(0.5, -1) = 2.5; page 1 empty -> 0; page 2: -1 + -1 = -2
    expected = torch.tensor([[2.5, 0.0, -2.0]], dtype=torch.float64)
    assert torch.equal(maxsim_reference(q, p), expected)
    assert torch.allclose(maxsim(q, p).double(), expected)


@pytest.mark.parametrize("block_tokens", [None, 1, 40, 100_000])
def test_fp32_matches_reference_for_any_block_size(queries, pages, reference, block_tokens):
    scores = maxsim(queries, pack_pages(pages), block_tokens=block_tokens)
    assert scores.dtype == torch.float32 and scores.shape == (len(queries), len(pages))
    assert_matches(scores, reference)


def test_many_short_runs_use_segment_reduce(queries, pages, reference, monkeypatch):
    monkeypatch.setattr(blocks_mod, "MAX_RUNS_FOR_LOOP", 0)
    scores = maxsim(queries, pack_pages(pages), block_tokens=100_000)
    assert_matches(scores, reference)


def test_empty_and_one_token_pages(queries, pages, reference):
    scores = maxsim(queries, pages)
    empty = [i for i, n in enumerate(PAGE_LENGTHS) if n == 0]
    assert torch.all(scores[:, empty] == 0)
    assert torch.isfinite(scores).all()
    only_empty = maxsim(queries, [torch.zeros(0, DIM), torch.zeros(0, DIM)])
    assert torch.equal(only_empty, torch.zeros(len(queries), 2))
    one = [i for i, n in enumerate(PAGE_LENGTHS) if n == 1]
    expected = torch.stack([torch.stack([(q @ pages[j].T).sum() for j in one]) for q in queries])
    torch.testing.assert_close(scores[:, one], expected)


def test_padded_queries_with_mask_equal_list(queries, pages, reference):
    qmax = max(QUERY_LENGTHS)
    padded = torch.full((len(queries), qmax, DIM), 7.0)  # garbage under the mask must not count
    mask = torch.zeros(len(queries), qmax, dtype=torch.bool)
    for i, q in enumerate(queries):
        padded[i, : len(q)] = q
        mask[i, : len(q)] = True
    scores = maxsim(padded, pages, query_mask=mask)
    assert_matches(scores, reference)
    mask[1] = False  # a fully masked query scores 0
    assert torch.all(maxsim(padded, pages, query_mask=mask)[1] == 0)


def test_numpy_inputs_and_memmap_without_copy(tmp_path, queries, pages, reference):
    packed = pack_pages([p.numpy() for p in pages])
    assert isinstance(packed.tokens, np.ndarray)
    packed.save(tmp_path)
    mapped = PackedPages.load(tmp_path)
    assert isinstance(mapped.tokens, np.memmap)
    assert as_tensor(mapped.tokens).data_ptr() == mapped.tokens.ctypes.data  # zero-copy view
    scores = maxsim([q.numpy() for q in queries], mapped)
    assert_matches(scores, reference)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_accumulate_in_fp32(queries, pages, dtype):
    q16 = [q.to(dtype) for q in queries]
    p16 = pack_pages(pages, dtype=dtype)
    exact = maxsim_reference(q16, p16)  # float64 over the same rounded inputs
    scores = maxsim(q16, p16)
    assert scores.dtype == torch.float32
    assert_matches(scores, exact)
    # "native": 16-bit GEMM; each dot is rounded to 16 bits (<= 2^-8 relative for bf16).
    native = maxsim(q16, p16, precision="native")
    step = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
    bound = step * torch.tensor([float(len(q)) for q in queries])[:, None]
    assert torch.all((native.double() - exact).abs() <= bound + 1e-6)


def test_mixed_dtypes_are_promoted(queries, pages):
    scores = maxsim(queries, pack_pages(pages, dtype=torch.bfloat16))
    exact = maxsim_reference(queries, pack_pages(pages, dtype=torch.bfloat16))
    assert_matches(scores, exact)


def test_subset_by_indices_and_views(queries, pages, reference):
    packed = pack_pages(pages)
    idx = [9, 3, 3, 1, 0, 13]
    assert_matches(maxsim(queries, packed, page_indices=idx), reference[:, idx])
    view = packed.view(3, 10)
    assert view.n_pages == 7
    assert np.shares_memory(view.tokens.numpy(), packed.tokens.numpy())
    assert_matches(maxsim(queries, view), reference[:, 3:10])
    taken = packed.take([12, 2, 1])
    assert_matches(maxsim(queries, taken), reference[:, [12, 2, 1]])
    with pytest.raises(IndexError):
        maxsim(queries, packed, page_indices=[len(pages)])


def test_many_queries_are_chunked(pages):
    g = torch.Generator().manual_seed(2)
    qs = [unit(torch.randn(32, DIM, generator=g)) for _ in range(40)]  # 1280 rows > one chunk
    assert_matches(maxsim(qs, pages), maxsim_reference(qs, pages))


def test_input_validation(queries, pages):
    with pytest.raises(ValueError):
        maxsim([torch.randn(3, DIM + 1)], pages)
    with pytest.raises(ValueError):
        PackedPages(np.zeros((4, DIM)), np.array([0, 2, 3]))
    with pytest.raises(ValueError):
        pack_queries(torch.randn(2, 3, DIM), torch.ones(2, 4, dtype=torch.bool))


@pytest.mark.parametrize("k,block_pages", [(1, 3), (5, 4), (20, 5), (5, 1000)])
def test_topk_streaming_matches_full_scores(queries, pages, reference, k, block_pages):
    values, ids = maxsim_topk(queries, pages, k, block_pages=block_pages)
    k_eff = min(k, len(pages))
    assert values.shape == ids.shape == (len(queries), k_eff)
    expected = torch.sort(reference, dim=1, descending=True).values[:, :k_eff]
    assert_matches(values, expected)
    assert_matches(values, reference.gather(1, ids))


def test_topk_over_subset_returns_global_ids(queries, pages, reference):
    subset = [13, 2, 9, 4]
    _, ids = maxsim_topk(queries, pages, 2, page_indices=subset, block_pages=1)
    assert set(ids.flatten().tolist()) <= set(subset)
    best = torch.tensor(subset)[reference[:, subset].argmax(1)]
    assert torch.equal(ids[:, 0], best)


def test_int8_within_stated_error(queries, pages, reference):
    """Unit-norm tokens: per-token int8 keeps every dot within ~1e-2, so each score is
    within 0.01 x query length of exact (documented bound)."""
    q8 = quantize_pages(pages)
    assert q8.codes.tokens.dtype == torch.int8
    scores = maxsim_int8(queries, q8)
    bound = 0.01 * torch.tensor([float(len(q)) for q in queries])[:, None]
    assert torch.all((scores.double() - reference).abs() <= bound)
    empty = [i for i, n in enumerate(PAGE_LENGTHS) if n == 0]
    assert torch.all(scores[:, empty] == 0)
    idx = [9, 3, 0]
    torch.testing.assert_close(maxsim_int8(queries, q8, page_indices=idx), scores[:, idx])


def test_int8_round_trip(tmp_path, queries, pages):
    q8 = quantize_pages(pack_pages([p.numpy() for p in pages]))
    q8.save(tmp_path)
    loaded = type(q8).load(tmp_path)
    torch.testing.assert_close(maxsim_int8(queries, loaded), maxsim_int8(queries, q8))


def test_scores_do_not_depend_on_batch_neighbours():
    """BENCHMARKS.md padding pitfall: colpali-engine zero-pads pages inside a batch, so a
    short page whose tokens all oppose the query gains 0 > negative from a pad token."""
    q = [torch.tensor([[1.0, 0.0, 0.0, 0.0]])]
    short = torch.tensor([[-1.0, 0.0, 0.0, 0.0]])  # true score -1
    long = unit(torch.randn(30, 4, generator=torch.Generator().manual_seed(3)))
    alone = maxsim(q, [short])[0, 0]
    with_neighbour = maxsim(q, [short, long])[0, 0]
    assert alone == with_neighbour == -1.0
    processing_utils = pytest.importorskip("colpali_engine.utils.processing_utils")
    score = processing_utils.BaseVisualRetrieverProcessor.score_multi_vector
    padded_alone = score(q, [short], device="cpu")[0, 0]
    padded_with_neighbour = score(q, [short, long], device="cpu")[0, 0]
    assert padded_alone == -1.0
    assert padded_with_neighbour == 0.0  # the pad token won the max
