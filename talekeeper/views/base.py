"""The base of every view: no undeclared keys in, every declared key out."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class View(BaseModel):
    """A response body, built by a service and rendered as it is by the pages, the terminal
    and the JSON API. `extra="forbid"`: a key the view does not declare is an error, never
    dropped without a word. Serialised, every field it declares is there — null when empty —
    so a client can rely on a key being present."""

    model_config = ConfigDict(extra="forbid")


class Sparse(View):
    """A document of settings as stored: only the fields that are set (a field left out is
    "not set here", which null would not say — a sampler left to the server, a setting the
    environment does not override)."""

    @model_serializer(mode="wrap")
    def _given_keys_only(
        self, handler: SerializerFunctionWrapHandler
    ):  # no return type: keeps the schema
        data = handler(self)
        unset = type(self).model_fields.keys() - self.model_fields_set
        if not unset or not isinstance(data, dict):
            return data
        drop = set(unset) | {type(self).model_fields[name].alias for name in unset} - {None}
        return {key: value for key, value in data.items() if key not in drop}


TIMESTAMP = "When, as an ISO 8601 timestamp."
