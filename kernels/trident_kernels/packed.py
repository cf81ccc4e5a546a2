"""Packed multi-vector pages: one contiguous token matrix plus offsets, never padded.

Padding every page to the longest one wastes memory and, worse, lets zero pad tokens
win a max (see BENCHMARKS.md, "padding pitfall"). A packed layout has neither problem and
maps one-to-one onto a memory-mapped ``.npy`` file, so an index larger than RAM can be
scored block by block without loading it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

Array = np.ndarray | torch.Tensor

TOKENS_FILE = "tokens.npy"
OFFSETS_FILE = "offsets.npy"


def as_tensor(x: Array) -> torch.Tensor:
    """Zero-copy view of a numpy array (memmaps included) as a torch tensor.

    Read-only memmaps are fine: kernels never write into page tokens, so torch's
    "not writable" warning is silenced rather than paid for with a copy.
    """
    if isinstance(x, torch.Tensor):
        return x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return torch.from_numpy(np.asarray(x) if not isinstance(x, np.ndarray) else x)


@dataclass(frozen=True, eq=False)
class PackedPages:
    """Pages stored as ``tokens[offsets[i]:offsets[i+1]]``.

    ``tokens`` is ``[total_tokens, dim]`` (numpy, ``np.memmap`` or torch, any float
    dtype); ``offsets`` is int64 ``[n_pages + 1]`` with ``offsets[0] == 0``. A page may
    have zero tokens (it then scores 0 everywhere, see :func:`kernels.maxsim`).
    """

    tokens: Array
    offsets: np.ndarray

    def __post_init__(self) -> None:
        offsets = np.asarray(self.offsets)
        if isinstance(self.offsets, torch.Tensor):
            offsets = self.offsets.detach().cpu().numpy()
        offsets = offsets.astype(np.int64, copy=False)
        object.__setattr__(self, "offsets", offsets)
        if self.tokens.ndim != 2:
            raise ValueError(f"tokens must be [total_tokens, dim], got shape {tuple(self.tokens.shape)}")
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise ValueError("offsets must be 1-D, start at 0 and have n_pages + 1 entries")
        if offsets[-1] != self.tokens.shape[0]:
            raise ValueError(f"offsets end at {offsets[-1]} but tokens has {self.tokens.shape[0]} rows")
        if offsets.size > 1 and np.any(np.diff(offsets) < 0):
            raise ValueError("offsets must be non-decreasing")

    @property
    def n_pages(self) -> int:
        return int(self.offsets.size - 1)

    def __len__(self) -> int:
        return self.n_pages

    @property
    def dim(self) -> int:
        return int(self.tokens.shape[1])

    @property
    def total_tokens(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def torch_dtype(self) -> torch.dtype:
        return as_tensor(self.tokens[:0]).dtype

    @property
    def device(self) -> torch.device:
        return self.tokens.device if isinstance(self.tokens, torch.Tensor) else torch.device("cpu")

    def page(self, i: int) -> Array:
        """Tokens of page ``i`` (a view)."""
        return self.tokens[self.offsets[i] : self.offsets[i + 1]]

    def view(self, start: int, stop: int) -> PackedPages:
        """Pages ``start:stop`` as a zero-copy view (e.g. one document's pages)."""
        start, stop, _ = slice(start, stop).indices(self.n_pages)
        stop = max(stop, start)
        lo, hi = self.offsets[start], self.offsets[stop]
        return PackedPages(self.tokens[lo:hi], self.offsets[start : stop + 1] - lo)

    def take(self, indices: Sequence[int] | np.ndarray) -> PackedPages:
        """Copy of the listed pages, packed in the given order."""
        idx = np.asarray(indices, dtype=np.int64)
        lengths = self.lengths[idx]
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        rows = gather_tokens(self.tokens, self.offsets, idx)
        return PackedPages(rows, offsets)

    def save(self, directory: str | Path) -> None:
        """Write ``tokens.npy`` and ``offsets.npy`` (plain files, mmap-loadable)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tokens = self.tokens
        if isinstance(tokens, torch.Tensor):
            if tokens.dtype == torch.bfloat16:
                raise TypeError("numpy has no bfloat16: convert pages to float16/float32 before saving")
            tokens = tokens.detach().cpu().numpy()
        np.save(directory / TOKENS_FILE, tokens)
        np.save(directory / OFFSETS_FILE, self.offsets)

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> PackedPages:
        """Read what :meth:`save` wrote; ``mmap=True`` maps tokens read-only, no copy."""
        directory = Path(directory)
        tokens = np.load(directory / TOKENS_FILE, mmap_mode="r" if mmap else None)
        return cls(tokens, np.load(directory / OFFSETS_FILE))


def gather_tokens(tokens: Array, offsets: np.ndarray, page_ids: np.ndarray) -> Array:
    """Rows of the listed pages, concatenated; a view when they form one ascending run."""
    if page_ids.size == 0:
        return tokens[:0]
    starts, stops = offsets[page_ids], offsets[page_ids + 1]
    if page_ids.size == 1 or np.all(starts[1:] == stops[:-1]):
        return tokens[starts[0] : stops[-1]]
    # Merge touching ranges so a mostly-contiguous subset costs few copies.
    breaks = np.nonzero(starts[1:] != stops[:-1])[0] + 1
    run_starts = starts[np.r_[0, breaks]]
    run_stops = stops[np.r_[breaks - 1, page_ids.size - 1]]
    parts = [tokens[a:b] for a, b in zip(run_starts, run_stops, strict=True)]
    if isinstance(tokens, torch.Tensor):
        return torch.cat(parts)
    return np.concatenate(parts)


def pack_pages(
    pages: Sequence[Array], *, dim: int | None = None, dtype: torch.dtype | None = None
) -> PackedPages:
    """Pack a list of ``[n_i, dim]`` arrays (numpy or torch, ``n_i`` may be 0).

    The result is numpy when every input is numpy (and no torch ``dtype`` is asked for),
    torch otherwise. ``dim`` is only needed for an empty list.
    """
    lengths = np.array([p.shape[0] for p in pages], dtype=np.int64)
    offsets = np.zeros(len(pages) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not pages:
        if dim is None:
            raise ValueError("pack_pages([]) needs dim")
        return PackedPages(torch.empty(0, dim, dtype=dtype or torch.float32), offsets)
    for p in pages:
        if p.ndim != 2 or p.shape[1] != pages[0].shape[1]:
            raise ValueError("every page must be [n_i, dim] with the same dim")
    if dtype is None and all(isinstance(p, np.ndarray) for p in pages):
        return PackedPages(np.ascontiguousarray(np.concatenate(pages)), offsets)
    tensors = [as_tensor(p) for p in pages]
    tokens = torch.cat([t.to(dtype) if dtype is not None else t for t in tensors])
    return PackedPages(tokens.contiguous(), offsets)


def as_packed(pages: PackedPages | Sequence[Array]) -> PackedPages:
    """Accept a :class:`PackedPages` or a list of per-page arrays."""
    return pages if isinstance(pages, PackedPages) else pack_pages(pages)


Shard = PackedPages | tuple[Array, np.ndarray]
ShardSource = Shard | Callable[[], Shard]


def open_shard(source: ShardSource) -> PackedPages:
    """One shard of a page set (e.g. one document's pages) as :class:`PackedPages`.

    A source may be a zero-argument callable that opens the shard (say, memory-maps a
    document's files): a long list of them holds no open maps, and pickles as its
    arguments, so another process or a Ray task can open the shard where it runs.
    """
    shard = source() if callable(source) else source
    return shard if isinstance(shard, PackedPages) else PackedPages(*shard)


def pack_shards(
    shards: Sequence[ShardSource],
    *,
    dim: int | None = None,
    dtype: np.dtype | type | None = None,
    directory: str | Path | None = None,
) -> PackedPages:
    """Shards (numpy tokens) packed into one page set, in order, one shard at a time.

    Tokens are copied into a preallocated matrix: in RAM, or with ``directory`` straight
    into the files :meth:`PackedPages.save` writes, returned memory-mapped. Either way peak
    memory is the output plus one shard, so pages larger than RAM can be packed on disk.
    ``dim`` and ``dtype`` default to the first shard's; ``dim`` is needed when there is none.
    """
    lengths: list[np.ndarray] = []
    for source in shards:  # sizes first: opening a memory-mapped shard reads only its header
        shard = open_shard(source)
        lengths.append(shard.lengths)
        dim = shard.dim if dim is None else dim
        dtype = np.asarray(shard.tokens[:0]).dtype if dtype is None else dtype
    if dim is None:
        raise ValueError("pack_shards([]) needs dim")
    offsets = np.zeros(sum(x.size for x in lengths) + 1, dtype=np.int64)
    if lengths:  # page lengths are small; the tokens are never concatenated
        np.cumsum(np.concatenate(lengths), out=offsets[1:])
    shape, dtype = (int(offsets[-1]), dim), np.dtype(dtype or np.float32)
    if directory is None:
        tokens = np.empty(shape, dtype)
    else:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tokens = np.lib.format.open_memmap(directory / TOKENS_FILE, mode="w+", dtype=dtype, shape=shape)
    row = 0
    for source in shards:
        shard = open_shard(source)
        tokens[row : row + shard.total_tokens] = np.asarray(shard.tokens)
        row += shard.total_tokens
    if row != shape[0]:
        raise ValueError("a shard changed size while it was being packed")
    if directory is None:
        return PackedPages(tokens, offsets)
    tokens.flush()
    del tokens
    np.save(directory / OFFSETS_FILE, offsets)
    return PackedPages.load(directory, mmap=True)
