"""A turn's events over HTTP: an SSE stream when the client asks for one, else the finished turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from fastapi import Request
from sse_starlette import EventSourceResponse

from talekeeper.service.turns import TurnEvent, finished_turn

TURN_STREAM = {
    200: {
        "content": {
            "text/event-stream": {
                "schema": {
                    "type": "string",
                    "description": "Server-sent events, each `event: <kind>` with a JSON `data` line, in this "
                    "order: `accepted` once (`{action_line, kind, text}`), then `text` and `reasoning` pieces "
                    "(`{text}`) and `status` words (`{message}`) — after a `retold` (`{message, "
                    "contradictions}`: that telling said what the state does not, setting `retry`) the "
                    "narration is told again and what was shown of it is to be cleared — then exactly one of `done` (the turn is "
                    "written and the player may act again: `TurnResult`) or `error` (`{message}`; nothing "
                    "was written). When `done`'s `turn.pending` is true, the state pass (and a companion's "
                    "remark) still runs in the background: a companion's `remark` may follow (`{by, text}`: "
                    "shown under their name, after the narration), and one `settled` event (`TurnResult`: the "
                    "turn with its changes) ends the stream; a writer sent meanwhile waits for it.",
                }
            }
        },
        "description": "The finished turn (settled: its background state pass done), or (asked for "
        "with `Accept: text/event-stream`) an SSE stream of it.",
    }
}


def sse_message(event: TurnEvent) -> dict[str, str]:
    return {"event": event.kind, "data": json.dumps(event.payload())}


async def turn_response(events: AsyncIterator[TurnEvent], request: Request):
    """A turn's events as an SSE stream when the client asks for one, else the finished turn."""
    first = await anext(events)  # refusals (busy, bad action, unknown adventure) raise here
    if "text/event-stream" in request.headers.get("accept", ""):

        async def stream():
            yield sse_message(first)
            async for event in events:
                yield sse_message(event)

        return EventSourceResponse(stream(), ping=15)
    return await finished_turn(events)
