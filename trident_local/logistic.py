"""Logistic parameters fitted on a calibration split: weights over named features, a bias, a threshold.

One type for every no-model score that is a calibrated logistic model (the verifier's support
scorer, the evidence-first answer's confidence), so both save, load and evaluate alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self


@dataclass
class LogisticParams:
    """Logistic weights over named features, the decision threshold, and how they were calibrated."""

    weights: dict[str, float]
    bias: float
    threshold: float
    calibration: dict[str, Any] = field(default_factory=dict)

    def probability(self, feats: Mapping[str, float]) -> float:
        z = self.bias + sum(self.weights.get(k, 0.0) * float(v) for k, v in feats.items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        return cls(weights={str(k): float(v) for k, v in d["weights"].items()}, bias=float(d["bias"]),
                   threshold=float(d["threshold"]), calibration=dict(d.get("calibration", {})))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Self:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
