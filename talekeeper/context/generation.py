"""The generation settings, declared once: how long the narrator writes, how it samples,
how the state is updated and what a contradiction does — each field with its label
(`title`), its help text (`description`), its bounds and, for a choice, the words each
choice is offered in (`choices`). The Settings page, the sampler presets and the API
schema all read them from here.

Stored and overridden in `service/settings.py`; pure (no I/O).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from talekeeper.context.budget import DEFAULT_CAP, EMBEDDED_BUDGET
from talekeeper.llm.backends import NUMBERS

OPTIONAL_NUMBERS = NUMBERS  # each left to the model server when empty
MAX_BIASES, MAX_PHRASES, LONGEST_PHRASE = 300, 50, 100


def parse_logit_bias(text: str) -> dict[int, float]:
    """ "1234: -100, 5678: 2" → {1234: -100.0, 5678: 2.0}; a ValueError names what is wrong."""
    found: dict[int, float] = {}
    for part in (p.strip() for p in text.replace("\n", ",").split(",")):
        if not part:
            continue
        token, sep, bias = part.partition(":")
        try:
            number, weight = int(token.strip()), float(bias.strip())
        except ValueError:
            raise ValueError(
                f"“{part[:40]}” is not a “token number: bias” pair (e.g. 1234: -100)"
            ) from None
        if not sep or not 0 <= number < 10**7 or not -100 <= weight <= 100:
            raise ValueError(
                f"“{part[:40]}”: a token number from 0 and a bias from -100 to 100, please"
            )
        found[number] = weight
    if len(found) > MAX_BIASES:
        raise ValueError(f"at most {MAX_BIASES} token biases")
    return found


def parse_phrases(text: str) -> list[str]:
    """ "a|b" (or one a line) → ["a", "b"]; a ValueError names what is too long."""
    phrases: list[str] = []
    for part in text.replace("\n", "|").split("|"):
        phrase = " ".join(part.split())
        if phrase and phrase.lower() not in (p.lower() for p in phrases):
            if len(phrase) > LONGEST_PHRASE:
                raise ValueError(f"a banned phrase is at most {LONGEST_PHRASE} characters")
            phrases.append(phrase)
    if len(phrases) > MAX_PHRASES:
        raise ValueError(f"at most {MAX_PHRASES} banned phrases")
    return phrases


class GenerationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tokens: int | None = Field(
        None,
        ge=16,
        le=4096,
        description=(
            "Longest narration per turn, in tokens. Empty: sized from the reply length and the "
            "model's context window (with room for the state block when the narrator writes one)."
        ),
        title="Longest narration (tokens)",
    )
    reply_length: Literal["short", "medium", "long"] = Field(
        "medium",
        description=(
            "How long the narrator's replies should be: short (one to three sentences), medium "
            "(a paragraph), long (two or three paragraphs). The narrator is told, and its token "
            "limit follows."
        ),
        title="Reply length",
        json_schema_extra={
            "choices": {
                "short": "Short: one to three sentences",
                "medium": "Medium: a paragraph",
                "long": "Long: two or three paragraphs",
            }
        },
    )
    temperature: float = Field(
        0.8, ge=0.0, le=2.0, description="Higher is more surprising.", title="Temperature"
    )
    top_p: float = Field(
        0.95, gt=0.0, le=1.0, description="Nucleus sampling cut-off.", title="Top p"
    )
    # More samplers, each left to the model server when empty (llm/backends.SAMPLERS); a
    # page offers only those the connection's server takes.
    min_p: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="Drop words less likely than this share of the likeliest. Suggested: 0.05. Empty: the server's default.",
        title="Min P",
    )
    top_k: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="Consider only this many likeliest words. Suggested: 40 for a small model, else empty. Empty: the server's default.",
        title="Top K",
    )
    repetition_penalty: float | None = Field(
        None,
        ge=0.5,
        le=2.0,
        description="Above 1 discourages repeating recent text. Suggested: 1.05 to 1.1. Empty: the server's default.",
        title="Repetition penalty",
    )
    frequency_penalty: float | None = Field(
        None,
        ge=-2.0,
        le=2.0,
        description="Above 0 discourages the words the reply has already used often. Suggested: 0.2. Empty: the server's default.",
        title="Frequency penalty",
    )
    presence_penalty: float | None = Field(
        None,
        ge=-2.0,
        le=2.0,
        description="Above 0 nudges towards new topics. Suggested: 0.2. Empty: the server's default.",
        title="Presence penalty",
    )
    dry_multiplier: float | None = Field(
        None,
        ge=0.0,
        le=100.0,
        description="DRY (“don't repeat yourself”): how hard a phrase the story already has is pushed away when the model starts it again; 0 is off. Suggested: 0.8.",
        title="DRY strength",
    )
    dry_base: float | None = Field(
        None,
        ge=1.0,
        le=8.0,
        description="DRY: how fast that push grows with the length of the repeat. Suggested: 1.75.",
        title="DRY growth",
    )
    dry_allowed_length: int | None = Field(
        None,
        ge=1,
        le=100,
        description="DRY: repeats up to this many tokens long are let be (names, set phrases). Suggested: 2.",
        title="DRY allowed length",
    )
    xtc_threshold: float | None = Field(
        None,
        ge=0.0,
        le=0.5,
        description="XTC (“exclude top choices”): words at least this likely may be set aside for a less obvious one. Suggested: 0.1.",
        title="XTC threshold",
    )
    xtc_probability: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="XTC: how often that happens; 0 is off. Suggested: 0.5.",
        title="XTC chance",
    )
    logit_bias: str = Field(
        "",
        max_length=4000,
        description="For the experienced: raise or lower single tokens of this model's tokenizer, as “token number: bias” pairs separated by commas (-100 bans one, e.g. “1234: -100, 5678: 2”). Banned phrases need no numbers.",
        title="Logit bias",
    )
    banned_phrases: str = Field(
        "",
        max_length=4000,
        description="Phrases the story must never contain, separated by | (e.g. “a testament to|shivers down her spine”). Kept out as the model writes: by the server where it can, otherwise the reply is stopped before the phrase and the model goes on; the text is never cut.",
        title="Banned phrases",
    )
    stop: str = Field(
        "",
        max_length=400,
        description="Text that ends the narration at once, several separated by | (e.g. “\n> |###”).",
        title="Stop at",
    )
    seed: int | None = Field(
        None,
        ge=0,
        le=2**31 - 1,
        description="The same seed and prompt give the same narration, where the server supports it. Empty: random.",
        title="Seed",
    )
    context_budget: int | None = Field(
        None,
        ge=512,
        le=131072,
        description=(
            "Most tokens of story and instructions sent each turn, the reply included. Empty: "
            f"the model server's own context window, up to {DEFAULT_CAP:,} (the embedded model: "
            f"{EMBEDDED_BUDGET:,} of its window, leaving room for the state pass); a number "
            "here caps it."
        ),
        title="Context budget (tokens)",
    )
    state_updates: Literal["auto", "inline", "structured", "off"] = Field(
        "auto",
        description=(
            "How the model reports what changed: 'inline' (a state block after the prose), "
            "'structured' (a second short request under a JSON Schema), 'off' (narrative only), "
            "'auto' (structured for the embedded model and Ollama, inline otherwise)."
        ),
        title="State updates",
        json_schema_extra={
            "choices": {
                "auto": "Automatic (structured for the built-in model and Ollama, inline otherwise)",
                "inline": "Inline: the narrator appends a state block",
                "structured": "Structured: a second short request under a JSON Schema",
                "off": "Off: a plain narrative, no state changes",
            }
        },
    )

    contradictions: Literal["off", "flag", "retry"] = Field(
        "flag",
        description=(
            "When the narration says what the state does not (someone here who is elsewhere, "
            "a key you do not hold): 'flag' shows a warning under the turn, 'retry' tells it "
            "again once before it is written (both tellings are in Insights) and warns if it "
            "still clashes, 'off' says nothing. Changes the narration tells outright are read "
            "whatever this says."
        ),
        title="When the narration contradicts the state",
        json_schema_extra={
            "choices": {
                "flag": "Warn me under the turn",
                "retry": "Tell it again once, then warn me",
                "off": "Say nothing",
            }
        },
    )

    @field_validator(*OPTIONAL_NUMBERS, mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """A cleared form field means "the server's default", not zero."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("logit_bias")
    @classmethod
    def _bias_pairs(cls, value: str) -> str:
        parse_logit_bias(value)  # refuses what it cannot read, in words
        return value.strip()

    @field_validator("banned_phrases")
    @classmethod
    def _phrases(cls, value: str) -> str:
        parse_phrases(value)
        return value.strip()

    def samplers(self) -> dict[str, Any]:
        """The optional samplers that are set, as `GenerationRequest` fields."""
        chosen: dict[str, Any] = {
            name: getattr(self, name)
            for name in OPTIONAL_NUMBERS
            if getattr(self, name) is not None
        }
        stops = [s.replace("\\n", "\n") for s in self.stop.split("|") if s.strip()]
        if stops:
            chosen["stop"] = stops[:4]
        if self.logit_bias:
            chosen["logit_bias"] = parse_logit_bias(self.logit_bias)
        if self.banned_phrases:
            chosen["banned_phrases"] = parse_phrases(self.banned_phrases)
        return chosen

    @field_validator("context_budget", "max_tokens", mode="before")
    @classmethod
    def _blank_is_default(cls, value: object) -> object:
        # A form field left empty means "sized from the model".
        return None if isinstance(value, str) and not value.strip() else value
