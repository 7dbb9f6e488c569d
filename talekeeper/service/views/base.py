"""The base of every view: no undeclared keys in, only the given keys out."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class View(BaseModel):
    """A response body. `extra="forbid"`: a key the view does not declare is an error,
    never dropped without a word. Serialised, it keeps only the fields it was given, so
    validating a service's dict and writing it back gives the same keys."""

    model_config = ConfigDict(extra="forbid")

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
