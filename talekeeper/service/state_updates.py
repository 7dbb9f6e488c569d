"""How each model hands over what changed in the story.

- **inline** — the narrator appends a ```state block after the prose; the tolerant
  extractor reads it (trailing commas, `+5`, single quotes are repaired). Any
  OpenAI-compatible server (llama.cpp server, vLLM, LM Studio, Ollama's /v1).
- **structured** — after the prose, one short second request under the proposal's JSON
  Schema, narrowed to the ids, stat paths and milestones that exist, so it always parses
  and cannot invent names. The embedded model (a llama.cpp grammar) and Ollama's native
  API (`format`) use it by default; any server whose OpenAI API accepts a
  `json_schema` response format can be switched to it in the settings.
- **off** — a plain narrative: no vocabulary in the prompt, no state changes.

Small models without a grammar produce no usable JSON at all, and only enums of the
existing ids stop them inventing names — hence structured for the embedded model.
"""

from __future__ import annotations

from typing import Literal

from talekeeper.llm.base import GenerationRequest, Message, Provider
from talekeeper.state import Document, Rules, proposal_schema, state_for_prompt

StateMode = Literal["inline", "structured", "off"]
# Bound the block: a small model under a grammar can repeat one event up to the token limit.
MAX_STRUCTURED_EVENTS = 4
MAX_STRUCTURED_TOKENS = 200

QUESTION = (
    "[Story record, not part of the story. List only what the narration you just wrote changed, "
    "as events: stats that went up or down (change_stat with a signed amount), flags, milestones "
    "reached, items changing hands, characters moving, new facts. Use only the ids and stat paths "
    "below. If nothing changed, give an empty list.]"
)


def state_mode(setting: str, provider: Provider) -> StateMode:
    """'auto' made concrete for this provider (see the module docstring)."""
    if setting in ("inline", "structured", "off"):
        if setting == "structured" and not provider.supports_schema:
            return "inline"
        return setting  # type: ignore[return-value]
    return "structured" if provider.structured_by_default and provider.supports_schema else "inline"


def structured_request(
    narrator: GenerationRequest,
    narration: str,
    document: Document,
    rules: Rules,
    in_scene_ids: list[str],
    temperature: float = 0.2,
) -> GenerationRequest:
    """The state pass: the narrator's own request, extended by the reply and a short question.

    It shares the narrator's prompt byte for byte, so the model server reads it from its
    cache (only the question is new), and what stays cached afterwards is the story's
    prompt — the next turn starts warm. The ids and stat paths the events must name are in
    the question: the narrator is never shown them.
    """
    question = QUESTION + "\n" + state_for_prompt(document, rules, in_scene_ids)
    schema = proposal_schema(document, rules, max_events=MAX_STRUCTURED_EVENTS)
    common = {
        "json_schema": schema,
        "max_tokens": MAX_STRUCTURED_TOKENS,
        "temperature": temperature,
        "stop": [],
    }
    if narrator.mode == "chat":
        messages = [
            *narrator.messages,
            Message(role="assistant", content=narration),
            Message(role="user", content=question),
        ]
        return narrator.model_copy(update={"messages": messages, **common})
    prompt = f"{narrator.prompt}{narration}\n\n{question}\n"
    return narrator.model_copy(update={"prompt": prompt, **common})


def as_block(raw_json: str) -> str:
    """Wrap a structured answer as the inline protocol, so one extractor reads both."""
    return f"\n\n```state\n{raw_json.strip()}\n```"


async def warm_up(provider: Provider) -> None:
    """Pay llama.cpp's one-time grammar set-up (~15 s on 2 cores) at start, not on turn one."""
    from talekeeper.state import empty_document, empty_rules

    narrator = GenerationRequest(mode="chat", messages=[Message(role="user", content="Begin.")])
    request = structured_request(narrator, "Nothing happens.", empty_document(), empty_rules(), [])
    await provider.complete(request.model_copy(update={"max_tokens": 8}))
