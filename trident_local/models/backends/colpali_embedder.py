"""Page-image and query multi-vectors with colpali-engine (ColQwen2, ColQwen2.5, ColPali).

The model knows tensors, the processor knows images and text (colpali-engine's
split); this module only batches, strips padding rows and hands back one
float32 [n_tokens, dim] array per input. Scoring (MaxSim) lives in kernels/.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from trident_local.errors import TridentError
from trident_local.models.backends._device import pick_device, torch_dtype

if TYPE_CHECKING:
    from PIL import Image

# config.model_type -> (model class, processor class) in colpali_engine.models
FAMILIES: dict[str, tuple[str, str]] = {
    "qwen2_vl": ("ColQwen2", "ColQwen2Processor"),
    "qwen2_5_vl": ("ColQwen2_5", "ColQwen2_5_Processor"),
    "paligemma": ("ColPali", "ColPaliProcessor"),
}
_ALIASES = {
    "colqwen2": "qwen2_vl",
    "colqwen2.5": "qwen2_5_vl",
    "colqwen2_5": "qwen2_5_vl",
    "colpali": "paligemma",
}


def _model_type(folder: Path) -> str:
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise TridentError(f"{folder} has no config.json: cannot tell which ColPali family it is")
    return json.loads(cfg.read_text(encoding="utf-8")).get("model_type", "")


def _tie_meta_lm_head(net: Any) -> None:
    """Give a head left on the meta device its tied input embeddings back.

    colpali-engine 0.3.18's ColPali does not declare PaliGemma's lm_head tie in
    the way transformers 5 reads it, so a checkpoint without ``lm_head.weight``
    (ColPali's, since the head is tied) loads with the head on the meta device
    and ``.to(device)`` fails. The head is unused for embeddings; tying it back
    is what the checkpoint meant.
    """
    for name, param in list(net.named_parameters()):
        if not param.is_meta:
            continue
        if not name.endswith("lm_head.weight"):
            raise TridentError(f"the checkpoint has no weights for {name}")
        owner = net.get_submodule(name.rsplit(".", 1)[0])
        inner = getattr(net, "model", net)
        owner.weight = inner.get_input_embeddings().weight


class ColPaliEmbedder:
    """`MultiVectorEmbedder` over a local colpali-engine checkpoint (merged, or a LoRA adapter + base).

    ``base_model`` is needed only for adapter folders (``adapter_config.json``,
    as vidore publishes them): the local folder of the base model they were
    trained on. The adapter is merged into the base at load time.
    """

    def __init__(
        self,
        model: str,
        *,
        name: str = "colpali",
        dtype: str = "auto",
        device: str = "auto",
        family: str = "auto",
        base_model: str | None = None,
        attn_implementation: str | None = None,
        max_num_visual_tokens: int | None = None,
    ) -> None:
        import colpali_engine.models as cm

        self.name = name
        self.device = pick_device(device)
        folder = Path(model)
        adapter = (folder / "adapter_config.json").is_file()
        weights_dir = folder
        if adapter:
            if not base_model:
                base_id = json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"]
                raise TridentError(
                    f"{folder} is a LoRA adapter; set `base_model` in the profile's [options] to a local folder "
                    f"holding its base model {base_id!r}"
                )
            weights_dir = Path(base_model).expanduser()
            if not weights_dir.is_absolute():
                weights_dir = folder.parent / weights_dir  # siblings in models/
            if not (weights_dir / "config.json").is_file():
                raise TridentError(
                    f"{folder} is a LoRA adapter whose base model should be in {weights_dir}, but it is not there"
                )
        fam = _ALIASES.get(family, family) if family != "auto" else _model_type(weights_dir)
        if fam not in FAMILIES:
            raise TridentError(f"unknown ColPali family {fam!r}; known: {', '.join(sorted(FAMILIES))}")
        model_cls, proc_cls = (getattr(cm, n) for n in FAMILIES[fam])
        # eager attention on CPU: the default kernels give NaN on left-padded rows there.
        attn = attn_implementation or ("sdpa" if self.device.startswith("cuda") else "eager")
        net = model_cls.from_pretrained(
            str(weights_dir),
            dtype=torch_dtype(dtype, self.device),
            attn_implementation=attn,
            local_files_only=True,
        )
        if adapter:
            from peft import PeftModel

            net = PeftModel.from_pretrained(net, str(folder), local_files_only=True).merge_and_unload()
        _tie_meta_lm_head(net)
        proc_dir = (
            folder
            if (folder / "preprocessor_config.json").is_file() or (folder / "processor_config.json").is_file()
            else weights_dir
        )
        proc_kwargs: dict[str, Any] = {"local_files_only": True}
        if max_num_visual_tokens is not None and fam != "paligemma":
            proc_kwargs["max_num_visual_tokens"] = max_num_visual_tokens
        self._attach(net, proc_cls.from_pretrained(str(proc_dir), **proc_kwargs))

    def _attach(self, model: Any, processor: Any) -> None:
        self.model = model.to(self.device).eval()
        self.processor = processor
        self.dim = int(getattr(model, "dim", 128))

    @classmethod
    def from_model(
        cls, model: Any, processor: Any, *, name: str = "colpali", device: str = "auto"
    ) -> ColPaliEmbedder:
        """Wrap a colpali-engine model and processor already in memory (benchmarks, custom loading)."""
        self = cls.__new__(cls)
        self.name = name
        self.device = pick_device(device)
        self._attach(model, processor)
        return self

    def _forward(self, batch: Any) -> list[np.ndarray]:
        import torch

        batch = batch.to(self.device)
        with torch.inference_mode():
            emb = self.model(**batch)
        mask = batch["attention_mask"].bool()
        return [e[m].float().cpu().numpy() for e, m in zip(emb, mask, strict=True)]

    def embed_images(
        self,
        images: Iterable[Image.Image],
        *,
        batch_size: int = 4,
        show_progress: bool = False,
        prefetch: bool | None = None,
    ) -> list[np.ndarray]:
        """One float32 ``[tokens, dim]`` array per image, in order.

        ``images`` may be a generator (the pool passes pages as it opens them). With
        ``prefetch`` (default: on a GPU) a worker thread reads and processes batch k + 1
        on the CPU while the device runs batch k: on an H200 the processor's CPU work was
        as long as the 3B forward itself. At most two batches of images are held.
        """
        prefetch = (not self.device.startswith("cpu")) if prefetch is None else prefetch
        it = iter(images)

        def next_batch() -> Any:
            chunk = [im.convert("RGB") for im in islice(it, batch_size)]
            return self.processor.process_images(chunk) if chunk else None

        from tqdm import tqdm

        out: list[np.ndarray] = []
        prep = ThreadPoolExecutor(1, thread_name_prefix="colpali-prep") if prefetch else nullcontext()
        with prep as pool, tqdm(desc=f"{self.name}: pages", unit="page", disable=not show_progress) as bar:
            pending = pool.submit(next_batch) if pool else None
            while True:
                batch = pending.result() if pending else next_batch()
                if batch is None:
                    break
                if pool:
                    pending = pool.submit(next_batch)  # the CPU works on the next batch meanwhile
                vectors = self._forward(batch)
                out += vectors
                bar.update(len(vectors))
        return out

    def embed_queries(self, queries: Sequence[str], *, batch_size: int = 16) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        for start in range(0, len(queries), batch_size):
            # process_queries adds the query augmentation tokens the models were trained with
            out += self._forward(self.processor.process_queries(list(queries[start : start + batch_size])))
        return out
