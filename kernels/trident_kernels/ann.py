"""TokenIVF: PLAID-style multi-vector candidate generation, then exact MaxSim rerank.

Why: exact MaxSim touches every token of every page; for large indexes most pages are
hopeless for a query. Following PLAID (Santhanam et al., 2022), page tokens are clustered
(faiss k-means on a sample) and every page is reduced to the set of centroids its tokens
fall in. A query then works in centroid space:

1. voting: each query token picks its ``nprobe`` best centroids and gives each the
   margin of its score over the ``nprobe``-th; a page sums the votes of the centroids it
   contains (one sparse mat-vec over the probed inverted lists);
2. centroid interaction: the best ``2 x n_candidates`` pages are rescored with MaxSim
   against *all* their centroids (the page's tokens replaced by centroids), and the two
   rankings are fused by reciprocal rank;
3. the best ``n_candidates`` are scored exactly with :func:`kernels.maxsim`.

Stored as plain ``.npy`` files plus ``meta.json`` in a directory.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import faiss
import numpy as np
import scipy.sparse
import torch

from trident_kernels.cpu import Precision
from trident_kernels.cpu_features import cpu_has_fast_bf16
from trident_kernels.packed import Array, PackedPages, as_packed, as_tensor
from trident_kernels.queries import Queries, pack_queries
from trident_kernels.scoring import score_packed

FORMAT = "kernels.TokenIVF"
VERSION = 1
PAGES_DIR = "pages"
ARRAYS = ("centroids", "list_offsets", "list_pages", "code_offsets", "codes")
CI_FACTOR = 2  # stage 2 rescoring width, in multiples of n_candidates
SAMPLE_PER_CENTROID = 40  # k-means training points per centroid (faiss asks for >= 39)
RRF_K = 60
STOP_LIST_FRACTION = 0.1  # stage 1 skips centroids listing more pages than this fraction


def default_n_centroids(total_tokens: int) -> int:
    """A power of two near ``2 * sqrt(tokens)``. PLAID uses ``16 * sqrt``; page-level
    candidates need fewer, and each halving halves k-means and assignment time. Much
    coarser than this, merged clusters cost recall (measured in benchmarks/ann.py)."""
    if total_tokens <= 0:
        return 1
    return int(min(max(2 ** round(math.log2(2 * math.sqrt(total_tokens))), 16), 1 << 16))


def sample_rows(tokens: Array, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` random token rows as float32 (sorted reads: kind to memory maps)."""
    idx = np.sort(rng.choice(tokens.shape[0], size=min(n, tokens.shape[0]), replace=False))
    return as_tensor(tokens)[torch.from_numpy(idx)].float().numpy()


def sample_size(total_tokens: int, n_centroids: int, sample_tokens: int | None = None) -> int:
    """Training points for k-means: ``sample_tokens``, else enough per centroid (at least 100k)."""
    return sample_tokens or min(total_tokens, max(SAMPLE_PER_CENTROID * n_centroids, 100_000))


def train_centroids(
    sample: np.ndarray,
    n_centroids: int,
    *,
    niter: int = 10,
    spherical: bool | None = None,
    seed: int = 0,
    verbose: bool = False,
) -> np.ndarray:
    """faiss k-means on ``sample`` -> ``[k, dim]`` float32 centroids (``k <= len(sample)``).

    ``spherical=None`` detects unit-norm tokens (ColPali's) and then trains unit-norm
    centroids, so the assignment and query probing both rank by inner product.
    """
    k = min(n_centroids, sample.shape[0])
    dim = sample.shape[1]
    if spherical is None:
        spherical = bool(np.allclose(np.linalg.norm(sample[:1000], axis=1), 1.0, atol=1e-2))
    # faiss.Kmeans reads centroids back through a std::vector<float> SWIG proxy, which breaks
    # when PyMuPDF (another SWIG module) was imported first; the flat index holds them too.
    clus = faiss.Clustering(dim, k)
    clus.niter, clus.seed, clus.spherical, clus.verbose = niter, seed, spherical, verbose
    quantizer = faiss.IndexFlatIP(dim) if spherical else faiss.IndexFlatL2(dim)
    clus.train(np.ascontiguousarray(sample, dtype=np.float32), quantizer)
    return np.ascontiguousarray(quantizer.reconstruct_n(0, quantizer.ntotal), dtype=np.float32)


def assign_tokens(tokens: Array, centroids: torch.Tensor, tile_elements: int = 1 << 23) -> np.ndarray:
    """Nearest centroid (L2) of every token, in blocks: ``argmax(x.c - |c|^2 / 2)``.

    The GEMM runs in bf16 where the hardware has it (AMX/AVX512-BF16 CPUs, GPUs): several
    times faster, and rounding can only swap near-tied centroids, which an approximate
    index does not notice.
    """
    src = as_tensor(tokens)
    fast = centroids.device.type == "cuda" or cpu_has_fast_bf16()
    dtype = torch.bfloat16 if fast else torch.float32
    weights = centroids.to(dtype).T.contiguous()
    bias = 0.5 * (centroids * centroids).sum(1)
    out = np.empty(src.shape[0], dtype=np.int32)
    chunk = max(256, tile_elements // centroids.shape[0])  # score tile stays ~32 MiB
    for start in range(0, src.shape[0], chunk):
        x = src[start : start + chunk].to(device=centroids.device, dtype=dtype)
        scores = torch.mm(x, weights).float().sub_(bias)
        out[start : start + x.shape[0]] = scores.argmax(1).cpu().numpy()
    return out


def csr_from_pairs(keys: np.ndarray, n_rows: int, n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Unique ``row * n_cols + col`` keys -> (row offsets int64, cols int32)."""
    keys = np.unique(keys)
    rows, cols = np.divmod(keys, n_cols)
    offsets = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=offsets[1:])
    return offsets, cols.astype(np.int32)


def ranges_to_index(offsets: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the CSR rows ``rows`` and, for each, its position in ``rows``."""
    starts, lens = offsets[rows], offsets[rows + 1] - offsets[rows]
    owner = np.repeat(np.arange(rows.size), lens)
    flat = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(starts, lens)
    return flat, owner


@dataclass(eq=False)
class TokenIVF:
    """Centroids, centroid -> pages lists, page -> centroid codes; see the module doc."""

    centroids: np.ndarray  # [n_centroids, dim] float32
    list_offsets: np.ndarray  # [n_centroids + 1] int64
    list_pages: np.ndarray  # [nnz] int32, unique pages per centroid
    code_offsets: np.ndarray  # [n_pages + 1] int64
    codes: np.ndarray  # [nnz] int32, unique centroids per page
    nprobe: int = 4
    n_candidates: int = 256
    pages: PackedPages | None = field(default=None, repr=False)

    @property
    def n_pages(self) -> int:
        return int(self.code_offsets.size - 1)

    @property
    def n_centroids(self) -> int:
        return int(self.centroids.shape[0])

    @classmethod
    def build(
        cls,
        pages: PackedPages | Sequence[Array],
        *,
        centroids: np.ndarray | None = None,
        n_centroids: int | None = None,
        sample_tokens: int | None = None,
        niter: int = 10,
        spherical: bool | None = None,
        nprobe: int = 4,
        n_candidates: int = 256,
        seed: int = 0,
        verbose: bool = False,
    ) -> TokenIVF:
        """Train k-means on a token sample, assign every token, build both CSR maps.

        Given ``centroids``, skips training and only assigns. Pages larger than RAM, or
        split in per-document files: :func:`trident_kernels.ann_shards.build_from_shards`.
        """
        packed = as_packed(pages)
        total = packed.total_tokens
        if total == 0:
            raise ValueError("cannot build an index over pages without tokens")
        if centroids is None:
            k = n_centroids or default_n_centroids(total)
            sample = sample_rows(packed.tokens, sample_size(total, k, sample_tokens), np.random.default_rng(seed))
            centroids = train_centroids(sample, k, niter=niter, spherical=spherical, seed=seed, verbose=verbose)
        k = int(centroids.shape[0])
        assignment = assign_tokens(packed.tokens, torch.from_numpy(centroids).to(packed.device))
        page_of = np.repeat(np.arange(packed.n_pages, dtype=np.int64), packed.lengths)
        list_offsets, list_pages = csr_from_pairs(
            assignment.astype(np.int64) * packed.n_pages + page_of, k, packed.n_pages
        )
        code_offsets, codes = csr_from_pairs(page_of * k + assignment, packed.n_pages, k)
        return cls(centroids, list_offsets, list_pages, code_offsets, codes, nprobe, n_candidates, packed)

    @functools.cached_property
    def _lists(self) -> scipy.sparse.csr_matrix:
        """Centroid x page incidence matrix over the inverted lists."""
        ones = np.ones(self.list_pages.size, dtype=np.float32)
        return scipy.sparse.csr_matrix(
            (ones, self.list_pages, self.list_offsets), (self.n_centroids, self.n_pages)
        )

    def _probe(self, q_scores: torch.Tensor, nprobe: int) -> np.ndarray:
        """Stage 1, centroid voting: each query token gives each of its ``nprobe`` best
        centroids the margin of its score over its ``nprobe``-th score, and a page collects
        the votes of the centroids it contains -> ``[n_pages]``. One sparse mat-vec over the
        probed lists only.

        Centroids listing more than ``STOP_LIST_FRACTION`` of all pages and 4x the mean
        list (blank-patch "stop words") cast no votes: they add about the same to every
        page and would cost O(n_pages) per query token. A token whose best centroid is one
        of them abstains entirely, so its weaker probes do not single out a few pages.
        """
        top = torch.topk(q_scores, min(nprobe, self.n_centroids), dim=1)
        cids, values = top.indices.numpy(), top.values.numpy()
        list_lengths = np.diff(self.list_offsets)
        limit = max(STOP_LIST_FRACTION * self.n_pages, 4 * list_lengths.mean())
        short = list_lengths[cids] <= limit
        keep = short & short[:, :1]
        margins = (values - values[:, -1:])[keep]
        probed, slot = np.unique(cids[keep], return_inverse=True)
        votes = np.bincount(slot, weights=margins, minlength=probed.size)
        return np.asarray(self._lists[probed].T @ votes.astype(np.float32))

    def _centroid_interaction(self, q_scores: torch.Tensor, cand: np.ndarray) -> torch.Tensor:
        """Stage 2: MaxSim with each candidate's tokens replaced by their centroids."""
        flat, owner = ranges_to_index(self.code_offsets, cand)
        sims = q_scores[:, torch.from_numpy(self.codes[flat].astype(np.int64))].T.contiguous()
        lengths = torch.from_numpy(np.bincount(owner, minlength=cand.size))
        return torch.segment_reduce(sims, "max", lengths=lengths, axis=0, unsafe=True).sum(1)

    def candidates(
        self,
        queries: Queries,
        *,
        n_candidates: int | None = None,
        nprobe: int | None = None,
        query_mask: Array | None = None,
    ) -> list[np.ndarray]:
        """Stages 1-2: up to ``n_candidates`` page ids per query, best first."""
        packed = pack_queries(queries, query_mask)
        n_cand = n_candidates or self.n_candidates
        centroids = torch.from_numpy(self.centroids)
        q_all = packed.tokens.float().cpu() @ centroids.T
        has_codes = np.diff(self.code_offsets) > 0
        n_reachable = int(has_codes.sum())
        out = []
        for i in range(packed.n_queries):
            q_scores = q_all[packed.offsets[i] : packed.offsets[i + 1]]
            if q_scores.shape[0] == 0:
                out.append(np.empty(0, dtype=np.int64))
                continue
            approx = self._probe(q_scores, nprobe or self.nprobe)
            approx[~has_codes] = -np.inf
            n_stage1 = min(CI_FACTOR * n_cand, n_reachable)
            stage1 = (
                np.argpartition(-approx, n_stage1 - 1)[:n_stage1]
                if n_stage1 < approx.size
                else np.arange(approx.size)
            )
            stage1 = stage1[np.isfinite(approx[stage1])]
            stage1 = stage1[np.argsort(-approx[stage1], kind="stable")]
            ci = self._centroid_interaction(q_scores, stage1).numpy()
            # Fuse the two approximations by rank (RRF): voting rewards pages matching a
            # token through several centroids, centroid MaxSim rewards the best match per
            # token; each misses pages the other finds when centroids are coarse.
            ci_rank = np.empty(stage1.size)
            ci_rank[np.argsort(-ci, kind="stable")] = np.arange(stage1.size)
            fused = 1.0 / (RRF_K + np.arange(stage1.size)) + 1.0 / (RRF_K + ci_rank)
            out.append(stage1[np.argsort(-fused, kind="stable")[:n_cand]])
        return out

    def search(
        self,
        queries: Queries,
        k: int = 20,
        *,
        n_candidates: int | None = None,
        nprobe: int | None = None,
        query_mask: Array | None = None,
        precision: Precision = "fp32",
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-``k`` ``(exact MaxSim scores [nq, k], page ids [nq, k])``; rows padded with
        ``-inf`` / ``-1`` when fewer than ``k`` pages were reachable."""
        if self.pages is None:
            raise ValueError("index has no pages attached: TokenIVF.load(path, pages=...)")
        packed = pack_queries(queries, query_mask)
        cands = self.candidates(packed, n_candidates=n_candidates, nprobe=nprobe)
        scores = torch.full((packed.n_queries, k), float("-inf"))
        ids = torch.full((packed.n_queries, k), -1, dtype=torch.int64)
        for i, cand in enumerate(cands):
            if cand.size == 0:
                continue
            cand = np.sort(cand)  # ascending ids: sequential reads from a memory map
            exact = score_packed(packed.select(i, i + 1), self.pages, cand, precision=precision)[0].cpu()
            top = torch.topk(exact, min(k, cand.size))
            scores[i, : top.values.numel()] = top.values
            ids[i, : top.values.numel()] = torch.from_numpy(cand)[top.indices]
        return scores, ids

    def save(self, directory: str | Path, *, include_pages: bool = False) -> None:
        """Write the arrays and ``meta.json`` (and the pages, if asked) into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ARRAYS:
            np.save(directory / f"{name}.npy", getattr(self, name))
        meta = {
            "format": FORMAT, "version": VERSION, "n_pages": self.n_pages, "n_centroids": self.n_centroids,
            "dim": int(self.centroids.shape[1]), "nprobe": self.nprobe, "n_candidates": self.n_candidates,
        }  # fmt: skip
        (directory / "meta.json").write_text(json.dumps(meta, indent=2))
        if include_pages:
            if self.pages is None:
                raise ValueError("no pages to save")
            self.pages.save(directory / PAGES_DIR)

    @classmethod
    def load(cls, directory: str | Path, *, pages: PackedPages | None = None, mmap: bool = True) -> TokenIVF:
        """Read an index; attach ``pages`` or the saved ``pages/`` (memory-mapped)."""
        directory = Path(directory)
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"{directory} is not a {FORMAT} v{VERSION} index")
        arrays = {name: np.load(directory / f"{name}.npy") for name in ARRAYS}
        if pages is None and (directory / PAGES_DIR).is_dir():
            pages = PackedPages.load(directory / PAGES_DIR, mmap=mmap)
        if pages is not None and pages.n_pages != meta["n_pages"]:
            raise ValueError(f"pages has {pages.n_pages} pages, index was built on {meta['n_pages']}")
        return cls(**arrays, nprobe=meta["nprobe"], n_candidates=meta["n_candidates"], pages=pages)
