"""kernels.maxsim (torch path and the fused AMX / AVX512-BF16 kernel), packing, top-k and int8 against a float64 einsum reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trident_kernels import (
    PackedPages,
    amx,
    maxsim,
    maxsim_int8,
    maxsim_reference,
    maxsim_topk,
    pack_pages,
    pack_queries,
    quantize_pages,
)
from trident_kernels import blocks as blocks_mod
from trident_kernels import cpu as cpu_mod
from trident_kernels.packed import as_tensor

DIM = 32
# Ragged on purpose: empty pages, one-token pages, runs of equal lengths, one long page.
PAGE_LENGTHS = [7, 0, 1, 33, 12, 12, 12, 0, 1, 250, 5, 5, 64, 3]
QUERY_LENGTHS = [5, 1, 9, 16]


def unit(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.normalize(x, dim=-1)


# Default precision on fp32 inputs: the torch path's fp32 GEMM is within ~1e-6 of float64
# here; the fused kernel's bf16 hi/lo split keeps each product within 2^-15 relative
# (observed <= 1.4e-5 on these scores; the worst-case bound is tested on its own below).
ATOL = {"torch": 1e-5, "fused": 5e-5}
PATH = {"name": "torch"}


@pytest.fixture(autouse=True, params=["torch", "fused"])
def cpu_path(request, monkeypatch):
    """Every test runs on the torch path and, where this CPU has it, the fused kernel
    (AMX-BF16, else AVX512-BF16)."""
    if request.param == "fused" and not amx.available():
        pytest.skip("no fused kernel on this machine (needs AMX-BF16 or AVX512-BF16 and a C compiler)")
    if request.param == "torch":
        monkeypatch.setattr(amx, "available", lambda: False)
    monkeypatch.setitem(PATH, "name", request.param)
    return request.param


def assert_matches(scores: torch.Tensor, expected: torch.Tensor, atol: float | None = None) -> None:
    """fp32 accumulation against a float64 reference."""
    atol = ATOL[PATH["name"]] if atol is None else atol
    torch.testing.assert_close(scores.double(), expected.double(), atol=atol, rtol=1e-6)


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
    # bf16: exact products. fp16 on AMX: the lo x lo term is dropped (<= 2^-18 |q||p| a product).
    assert_matches(scores, exact, atol=1e-5 if dtype == torch.bfloat16 else 1e-4)
    # "native": 16-bit GEMM; each dot is rounded to 16 bits (<= 2^-8 relative for bf16).
    native = maxsim(q16, p16, precision="native")
    step = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
    bound = step * torch.tensor([float(len(q)) for q in queries])[:, None]
    assert torch.all((native.double() - exact).abs() <= bound + 1e-6)


@pytest.mark.parametrize("block_tokens", [None, 1, 40])
@pytest.mark.parametrize("fast_bf16", [True, False])
def test_bf16_pages_on_the_bf16_gemm_are_exact(queries, pages, block_tokens, fast_bf16, monkeypatch):
    """bf16 x bf16 products are exact in fp32: the bf16 GEMM path (taken when the CPU has
    AMX / AVX512-BF16) must agree with float64 as closely as the fp32 GEMM, on ragged and
    empty pages, and leave torch's global matmul precision as it found it."""
    monkeypatch.setattr(cpu_mod, "cpu_has_fast_bf16", lambda: fast_bf16)
    q16 = [q.to(torch.bfloat16) for q in queries]
    p16 = pack_pages(pages, dtype=torch.bfloat16)
    taken = cpu_mod.use_bf16_gemm(torch.bfloat16, torch.cat(q16), torch.device("cpu"), torch.float32)
    assert taken == (fast_bf16 and torch.backends.mkldnn.is_available())
    before = torch.backends.mkldnn.matmul.fp32_precision
    scores = maxsim(q16, p16, block_tokens=block_tokens)
    assert torch.backends.mkldnn.matmul.fp32_precision == before
    assert scores.dtype == torch.float32
    assert_matches(scores, maxsim_reference(q16, p16), atol=1e-5)
    assert float(scores[:, [1, 7]].abs().max()) == 0.0  # empty pages


def test_bf16_gemm_only_for_bf16_valued_queries(queries, pages, monkeypatch):
    """fp32 queries would be rounded by the bf16 GEMM: they must keep the fp32 GEMM."""
    monkeypatch.setattr(cpu_mod, "cpu_has_fast_bf16", lambda: True)
    q32 = torch.cat(queries)
    assert not cpu_mod.use_bf16_gemm(torch.bfloat16, q32, torch.device("cpu"), torch.float32)
    assert cpu_mod.use_bf16_gemm(torch.bfloat16, q32.bfloat16().float(), torch.device("cpu"), torch.float32)
    assert not cpu_mod.use_bf16_gemm(torch.float16, q32.half(), torch.device("cpu"), torch.float32)


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


def colpali_like(n_pages: int, dim: int, dtype: torch.dtype, seed: int = 4):
    """Unit-norm pages of ragged lengths and 32-token queries copied (with noise) from one
    page each, so every query has a clear best page."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, 90, (n_pages,), generator=g).tolist()
    pages = [unit(torch.randn(n, dim, generator=g)).to(dtype) for n in lengths]
    queries = []
    for i in range(6):
        src = pages[(7 * i) % n_pages].float()
        rows = src[torch.randint(src.shape[0], (32,), generator=g)]
        queries.append(unit(rows + 0.05 * torch.randn(32, dim, generator=g)).to(dtype))
    return queries, pages


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_default_precision_error_bound_and_ranking(dtype):
    """Default precision: within 2^-15 sum_t |q_t| max_j |p_j| (+ fp32 accumulation) of
    float64 on either path, exact products for bf16 inputs, same ranking as float64."""
    queries, pages = colpali_like(60, 128, dtype)
    exact = maxsim_reference(queries, pages)
    scores = maxsim(queries, pages)
    q_norms = torch.tensor([float(q.double().norm(dim=1).sum()) for q in queries])[:, None]
    p_max = max(float(p.double().norm(dim=1).max()) for p in pages)
    err = (scores.double() - exact).abs()
    assert torch.all(err <= 2.0**-15 * q_norms * p_max + 1e-5)
    if dtype == torch.bfloat16:
        assert float(err.max()) <= 1e-5  # products exact: fp32 accumulation error only
    assert torch.equal(scores.argsort(1, descending=True)[:, :5], exact.argsort(1, descending=True)[:, :5])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_exact_precision_has_exact_products(dtype):
    """precision="exact": products exact in fp32 on every path (fp32 inputs keep the fp32
    GEMM; 16-bit inputs may use the fused kernel, whose hi/lo parts are then exact)."""
    queries, pages = colpali_like(30, 128, dtype)
    scores = maxsim(queries, pages, precision="exact")
    assert_matches(scores, maxsim_reference(queries, pages), atol=1e-5)


def test_split_plan_terms():
    q32 = torch.randn(4, 8)
    plan = cpu_mod.split_plan
    assert plan(torch.bfloat16, q32.bfloat16(), "fp32").p_picks == (0,)
    assert plan(torch.float32, q32, "fp32") == cpu_mod.SplitPlan((0, 0, 1), (0, 1, 0))
    assert plan(torch.float16, q32.half(), "fp32") == cpu_mod.SplitPlan((0, 0, 1), (0, 1, 0))
    assert plan(torch.float16, q32.half(), "exact") == cpu_mod.SplitPlan((0, 0, 1, 1), (0, 1, 0, 1))
    assert plan(torch.bfloat16, q32, "fp32") == cpu_mod.SplitPlan((0, 1), (0, 0))
    assert plan(torch.float32, q32, "exact") is None
    assert plan(torch.bfloat16, q32, "exact") is None  # fp32 queries: not exact as hi + lo
    assert plan(torch.float16, q32.half(), "exact") is not None
    assert plan(torch.float16, q32.half(), "native") is None
    with pytest.raises(ValueError):
        maxsim([q32], [torch.randn(3, 8)], precision="fast")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dim", [128, 40])
def test_fused_kernel_page_maxima(dtype, dim, cpu_path):
    """The kernel alone: odd dims (padded to 32), token counts around its 16/32-row tiles,
    query rows not a multiple of 32, and pages read through a strided row view."""
    if cpu_path != "fused":
        pytest.skip("kernel test")
    g = torch.Generator().manual_seed(5)
    lengths = np.array([1, 15, 16, 17, 31, 32, 33, 70])
    wide = torch.randn(int(lengths.sum()), dim + 8, generator=g).to(dtype)
    tokens = wide[:, 3 : 3 + dim]  # row stride dim + 8
    rows = torch.randn(37, dim, generator=g).to(dtype)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    plan = cpu_mod.split_plan(dtype, rows, "fp32")
    got = amx.page_maxima(tokens, starts, lengths, amx.PackedQueryTiles(rows, plan.q_picks), plan.p_picks)
    want = torch.stack(
        [
            (rows.double() @ tokens[s : s + n].double().T).amax(1)
            for s, n in zip(starts, lengths, strict=True)
        ],
        1,
    )
    bound = 2.0**-15 * rows.double().norm(dim=1)[:, None] * tokens.double().norm(dim=1).max() + 1e-5
    assert got.shape == want.shape
    assert torch.all((got.double() - want).abs() <= bound)
    with pytest.raises(ValueError):
        amx.page_maxima(
            tokens, starts, np.r_[lengths[:-1], 0], amx.PackedQueryTiles(rows, plan.q_picks), plan.p_picks
        )


def test_worker_pool_keeps_thread_counts(cpu_path):
    """Workers run one torch thread each; the caller's count and the default for new
    threads stay what they were."""
    before = torch.get_num_threads()
    pool = cpu_mod.block_pool()
    assert torch.get_num_threads() == before
    if pool is not None:
        assert set(pool.map(lambda _: torch.get_num_threads(), range(4))) == {1}
        seen = []
        thread = __import__("threading").Thread(target=lambda: seen.append(torch.get_num_threads()))
        thread.start()
        thread.join()
        assert seen == [before]


def test_worker_pool_is_dropped_after_fork(cpu_path):
    """A forked child inherits the pool objects but not their threads, so it must build
    its own pool instead of queueing tasks nobody runs. (Only the bookkeeping is checked
    in the child: torch ops after fork can hang in OpenMP regardless of this pool.)"""
    import os

    if not hasattr(os, "fork") or cpu_mod.block_pool() is None:
        pytest.skip("needs fork and the worker pool")
    assert cpu_mod._pools
    pid = os.fork()
    if pid == 0:
        os._exit(0 if not cpu_mod._pools else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert cpu_mod._pools  # the parent keeps its pool


def test_kernel_variant_follows_cpu_flags(monkeypatch, cpu_path):
    """AMX where the CPU has it, else AVX512-BF16, else none; the switch turns both off."""
    if cpu_path != "torch":
        pytest.skip("independent of the path")
    for flags, want in [
        ({"amx_bf16", "avx512_bf16"}, "amx"),
        ({"avx512_bf16"}, "avx512_bf16"),
        ({"avx2"}, None),
    ]:
        monkeypatch.setattr(amx, "cpu_flags", lambda flags=flags: frozenset(flags))
        chosen = amx.variant()
        assert (chosen.name if chosen else None) == want
    monkeypatch.setenv("TRIDENT_KERNELS_NO_AMX", "1")
    assert amx.variant() is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("dim", [128, 40, 7])
def test_fused_kernel_fp32_products(dtype, dim, cpu_path):
    """The fp32-product entry (CPUs without AMX): as close to float64 as an fp32 GEMM, on
    token counts around its 8/32-token blocks, odd dims and a strided row view."""
    if cpu_path != "fused" or not amx.has_f32_kernel():
        pytest.skip("no fp32-product kernel on this machine")
    g = torch.Generator().manual_seed(6)
    lengths = np.array([1, 7, 8, 9, 31, 32, 33, 70])
    wide = torch.randn(int(lengths.sum()), dim + 5, generator=g).to(dtype)
    tokens = wide[:, 2 : 2 + dim]
    rows = torch.randn(37, dim, generator=g).to(dtype)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    got = amx.page_maxima_f32(tokens, starts, lengths, amx.PackedQueryRows(rows))
    want = torch.stack(
        [
            (rows.double() @ tokens[s : s + n].double().T).amax(1)
            for s, n in zip(starts, lengths, strict=True)
        ],
        1,
    )
    gemm = torch.stack(
        [(rows.float() @ tokens[s : s + n].float().T).amax(1) for s, n in zip(starts, lengths, strict=True)],
        1,
    )
    assert got.shape == want.shape
    # no worse than the fp32 GEMM's own rounding, plus one ulp-sized slack per score
    slack = 4 * torch.finfo(torch.float32).eps * want.abs().clamp(min=1)
    assert torch.all((got.double() - want).abs() <= (gemm.double() - want).abs() + slack * dim)
    with pytest.raises(ValueError):
        amx.page_maxima_f32(tokens, starts, np.r_[lengths[:-1], 0], amx.PackedQueryRows(rows))
    with pytest.raises(ValueError):
        amx.page_maxima_f32(tokens, starts, lengths, amx.PackedQueryRows(rows[:, :-1]))


@pytest.mark.parametrize("ties", [3, 40, 300])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_fused_fp32_screen_finds_the_max_among_near_ties(ties, dtype, cpu_path):
    """The fp32-product entry ranks tokens in bf16 and re-checks the near-maximal ones in
    fp32: with tokens whose dots differ by less than bf16 can tell apart (a few, or so many
    that whole blocks are re-done in fp32), tokens of very different norms, and the largest
    dot placed late in the page, every maximum is the fp32 one."""
    if cpu_path != "fused" or not amx.has_f32_kernel():
        pytest.skip("no fp32-product kernel on this machine")
    g = torch.Generator().manual_seed(ties)
    dim = 64
    rows = torch.nn.functional.normalize(torch.randn(35, dim, generator=g), dim=1)
    base = rows[0]
    noise = torch.nn.functional.normalize(torch.randn(500, dim, generator=g), dim=1)
    near = base + 1e-4 * torch.randn(ties, dim, generator=g)  # bf16 sees them all as one value
    scale = torch.exp(torch.randn(500, 1, generator=g) * 2)  # norms over ~e^-6 .. e^6
    page = torch.cat([noise * scale, near, 3.0 * base[None]])  # the largest dot is the last token
    pages = [page, near, page.flip(0)]
    tokens = torch.cat(pages).to(dtype)
    lengths = np.array([len(x) for x in pages])
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    got = amx.page_maxima_f32(tokens, starts, lengths, amx.PackedQueryRows(rows))
    gemm = torch.stack(
        [(rows @ tokens[s : s + n].float().T).amax(1) for s, n in zip(starts, lengths, strict=True)], 1
    )
    want = torch.stack(
        [(rows.double() @ tokens[s : s + n].double().T).amax(1) for s, n in zip(starts, lengths, strict=True)], 1
    )
    slack = 4 * torch.finfo(torch.float32).eps * want.abs().clamp(min=1) * dim
    assert torch.all((got.double() - want).abs() <= (gemm.double() - want).abs() + slack)
    # the near-tie page alone: its max is one of the ties, told apart only in fp32
    assert torch.allclose(got[:, 1], gemm[:, 1], rtol=0, atol=1e-6)
