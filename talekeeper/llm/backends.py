"""Which samplers a model server takes, asked of the server itself.

Samplers are where servers differ most: DRY and XTC exist on llama.cpp's server and
KoboldCpp, frequency/presence penalties and logit bias on OpenAI-compatible services,
a repeat penalty on Ollama; a strict service (Mistral) refuses a field it does not know.
So talekeeper offers and sends only what the server in use takes: a hosted service by its
documented list (llm/services.py; OpenRouter's per model), a local server by asking it
once — llama.cpp's `GET /props` (its default settings name every sampler it has),
KoboldCpp's `GET /api/extra/version`, Ollama's `GET /api/version`, vLLM's `GET /version`,
LM Studio's `GET /api/v0/models` — and anything else by the fields most OpenAI-compatible
servers read.

A `Backend` also says how a field is spelled on the wire (llama.cpp calls the repetition
penalty `repeat_penalty`, vLLM `repetition_penalty`, KoboldCpp `rep_pen`) and how banned
phrases are kept out: natively (KoboldCpp's phrase banning), by logit bias where the
tokenizer is known and a phrase is one token (llama.cpp's `/tokenize`), otherwise by
stopping the reply where the phrase begins and asking for the rest again (llm/banned.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# Every optional sampler talekeeper knows, in the order pages show them; NUMBERS are those
# that are one number each (the others are text: logit bias, banned phrases, stop strings).
SAMPLERS = (
    "min_p",
    "top_k",
    "repetition_penalty",
    "frequency_penalty",
    "presence_penalty",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "xtc_threshold",
    "xtc_probability",
    "logit_bias",
    "banned_phrases",
    "stop",
    "seed",
)
NUMBERS = tuple(name for name in SAMPLERS if name not in ("logit_bias", "banned_phrases", "stop"))
DRY = ("dry_multiplier", "dry_base", "dry_allowed_length")
XTC = ("xtc_threshold", "xtc_probability")
_COMMON_LOCAL = frozenset(
    {
        "min_p",
        "top_k",
        "repetition_penalty",
        "frequency_penalty",
        "presence_penalty",
        "stop",
        "seed",
    }
)
BannedBy = Literal["native", "logit_bias", "regenerate"]


@dataclass(frozen=True)
class Backend:
    """A kind of model server: the samplers it takes and how each is spelled."""

    kind: str
    label: str
    samplers: frozenset[str]
    wire: dict[str, str] = field(default_factory=dict)  # our name → the server's
    banned_by: BannedBy = "regenerate"
    tokenizer: bool = False  # it can say which tokens a text is (llama.cpp's /tokenize)

    def name_of(self, sampler: str) -> str:
        return self.wire.get(sampler, sampler)

    def takes(self, sampler: str) -> bool:
        # banned phrases are always kept out, one way or another (never by cutting text)
        return sampler == "banned_phrases" or sampler in self.samplers

    def narrowed(self, supported: frozenset[str] | None) -> Backend:
        """Only what a model says it takes, too (OpenRouter's supported_parameters)."""
        if supported is None:
            return self
        spelled = {self.wire.get(s, s): s for s in self.samplers}
        keep = frozenset(ours for theirs, ours in spelled.items() if theirs in supported)
        return Backend(self.kind, self.label, keep | {"stop"}, self.wire, self.banned_by)


LLAMACPP_BASE = _COMMON_LOCAL | {"logit_bias"}
LLAMACPP_WIRE = {"repetition_penalty": "repeat_penalty"}
KOBOLDCPP = Backend(
    "koboldcpp",
    "KoboldCpp",
    frozenset(
        {"min_p", "top_k", "repetition_penalty", "presence_penalty", "stop", "seed", *DRY, *XTC}
    ),
    {"repetition_penalty": "rep_pen", "seed": "sampler_seed"},
    banned_by="native",
)
OLLAMA = Backend(
    "ollama",
    "Ollama",
    _COMMON_LOCAL,
    {"repetition_penalty": "repeat_penalty"},
)
OLLAMA_OPENAI = Backend(  # Ollama's /v1: only OpenAI's own fields (its native API has more)
    "ollama-openai",
    "Ollama (OpenAI-compatible)",
    frozenset({"frequency_penalty", "presence_penalty", "seed", "stop"}),
)
VLLM = Backend("vllm", "vLLM", _COMMON_LOCAL | {"logit_bias"})
LMSTUDIO = Backend("lmstudio", "LM Studio", _COMMON_LOCAL, {"repetition_penalty": "repeat_penalty"})
EMBEDDED = Backend(  # llama-cpp-python's server (the embedded model)
    "embedded",
    "the embedded model",
    _COMMON_LOCAL | {"logit_bias"},
    {"repetition_penalty": "repeat_penalty"},
)
GENERIC_LOCAL = Backend(  # an OpenAI-compatible server that does not say what it is
    "openai-compatible",
    "an OpenAI-compatible server",
    _COMMON_LOCAL | {"logit_bias"},
    {"repetition_penalty": "repeat_penalty"},
)


def hosted(label: str, samplers: frozenset[str]) -> Backend:
    # OpenRouter and Together call it repetition_penalty, as here.
    return Backend("hosted", label, samplers)


def llamacpp(props: dict[str, Any]) -> Backend:
    """llama.cpp's server: DRY and XTC when its /props names them (older builds lack them)."""
    settings = props.get("default_generation_settings")
    settings = settings if isinstance(settings, dict) else {}
    params = settings.get("params") if isinstance(settings.get("params"), dict) else settings
    extra = {
        name
        for group in (DRY, XTC)
        if any(name in params for name in group)  # a build has a sampler whole or not at all
        for name in group
    }
    return Backend(
        "llamacpp",
        "llama.cpp server",
        LLAMACPP_BASE | extra,
        LLAMACPP_WIRE,
        banned_by="logit_bias",
        tokenizer=True,
    )


Probe = Callable[[str], Awaitable[Any]]  # GET a path of the server's root → JSON or None


async def detect(probe: Probe) -> Backend:
    """Ask a local OpenAI-compatible server what it is (each answer is untrusted JSON)."""
    props = await probe("/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        return llamacpp(props)
    kobold = await probe("/api/extra/version")
    if isinstance(kobold, dict) and kobold.get("result") == "KoboldCpp":
        return KOBOLDCPP
    ollama = await probe("/api/version")
    if isinstance(ollama, dict) and isinstance(ollama.get("version"), str):
        return OLLAMA_OPENAI
    vllm = await probe("/version")
    if isinstance(vllm, dict) and isinstance(vllm.get("version"), str):
        return VLLM
    lmstudio = await probe("/api/v0/models")
    if isinstance(lmstudio, dict) and isinstance(lmstudio.get("data"), list):
        return LMSTUDIO
    return GENERIC_LOCAL
