"""AtomCite: verify and correct the page citations of an answer.

Parse the answer into (claim, cited page) pairs (:mod:`.parse`), judge each claim
on its cited page only through a text channel (:mod:`.judge_text`; the CPU
default is a no-model support scorer) and an image channel
(:mod:`.judge_image`), merge the two (:mod:`.merge`), and apply a conservative,
deterministic repair policy that may re-point a citation to a supported page in
a +-window (:mod:`.repair`); :mod:`.pipeline` ties them together::

    from trident_local.verify import Verifier
    report = Verifier.from_index("idx").verify("Sales rose 5% [p. 3].", doc="report.pdf")
"""

from __future__ import annotations

__all__ = [
    "Claim",
    "ClaimResult",
    "Judgement",
    "VerificationReport",
    "Verifier",
    "parse_answer",
]


def __getattr__(name: str):  # lazy: keep imports cheap
    if name == "Verifier":
        from trident_local.verify.pipeline import Verifier

        return Verifier
    if name == "parse_answer":
        from trident_local.verify.parse import parse_answer

        return parse_answer
    if name in ("Claim", "ClaimResult", "Judgement", "VerificationReport"):
        from trident_local.verify import types

        return getattr(types, name)
    raise AttributeError(name)
