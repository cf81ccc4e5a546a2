"""Convert our chat messages to the formats backends take (OpenAI dicts, HF chat templates).

One place for image encoding, stop strings and prompt-length checks, so the
vLLM, OpenAI-client, transformers and server code paths agree.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from trident_local.models.protocols import ChatRequest, ChatResult, ImagePart, Message

if TYPE_CHECKING:
    from PIL import Image

_MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


def image_to_data_url(part: ImagePart, fmt: str = "PNG") -> str:
    """``data:image/...;base64,...`` for an image part; a PNG/JPEG file is sent as is, not re-encoded."""
    if part.image is None and part.path is not None:
        with open(part.path, "rb") as f:
            head = f.read(8)
        kind = "PNG" if head.startswith(b"\x89PNG") else "JPEG" if head.startswith(b"\xff\xd8") else None
        if kind is not None:
            with open(part.path, "rb") as f:
                return f"data:{_MIME[kind]};base64,{base64.b64encode(f.read()).decode('ascii')}"
    img = part.load()
    buf = io.BytesIO()
    fmt = fmt.upper()
    (img.convert("RGB") if fmt == "JPEG" else img).save(buf, format=fmt)
    return f"data:{_MIME[fmt]};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def data_url_to_image(url: str) -> Image.Image:
    """Decode a ``data:image/*;base64,`` URL (what OpenAI-compatible clients send)."""
    from PIL import Image as _Image

    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError("only data:image/...;base64 URLs are accepted (no remote fetches)")
    raw = base64.b64decode(url.split(";base64,", 1)[1], validate=False)
    with _Image.open(io.BytesIO(raw)) as im:
        return im.convert("RGB")


def to_openai_messages(
    messages: Sequence[Message], image_mode: Literal["data_url", "pil"] = "data_url"
) -> list[dict[str, Any]]:
    """OpenAI chat format; text-only messages stay plain strings (some templates need that)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m.content, str):
            out.append({"role": m.role, "content": m.content})
            continue
        parts: list[dict[str, Any]] = []
        for p in m.parts():
            if isinstance(p, str):
                parts.append({"type": "text", "text": p})
            elif image_mode == "pil":
                parts.append({"type": "image_pil", "image_pil": p.load()})
            else:
                parts.append({"type": "image_url", "image_url": {"url": image_to_data_url(p)}})
        out.append({"role": m.role, "content": parts})
    return out


def to_hf_messages(
    messages: Sequence[Message], multimodal: bool
) -> tuple[list[dict[str, Any]], list[Image.Image]]:
    """HF chat-template messages plus the images in prompt order.

    Multimodal processors take ``{"type": "image"}`` placeholders in a content
    list; text-only templates (Llama-3's ``content | trim``) need strings.
    """
    out: list[dict[str, Any]] = []
    images: list[Image.Image] = []
    for m in messages:
        if not multimodal:
            if m.images():
                raise ValueError("this model takes text only, but the request has images")
            out.append({"role": m.role, "content": m.text()})
            continue
        parts: list[dict[str, Any]] = []
        for p in m.parts():
            if isinstance(p, str):
                parts.append({"type": "text", "text": p})
            else:
                images.append(p.load())
                parts.append({"type": "image"})
        out.append({"role": m.role, "content": parts})
    return out, images


def request_has_images(req: ChatRequest) -> bool:
    return any(m.images() for m in req.messages)


def apply_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` at the first stop string; returns (text, whether a stop string was found)."""
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def error_result(_: Any, e: Exception) -> ChatResult:
    """The ChatResult of a request that failed: empty text, ``error`` says why."""
    return ChatResult(text="", finish_reason="error", error=f"{type(e).__name__}: {e}")
