"""The memory panel's entry points: read the memories on the path, edit or delete one.

`memory.panel` does the work inside a session; these own the transaction (and the
adventure's writer lock for changes), for the JSON API, the page and the terminal alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from talekeeper.memory import panel
from talekeeper.memory.panel import MemoryEdit, MemoryNew, MemoryNotFound
from talekeeper.service.unit_of_work import reading, writing
from talekeeper.views.context import Memory, MemoryPanel

if TYPE_CHECKING:
    from talekeeper.service.app import Talekeeper

__all__ = [
    "MemoryEdit",
    "MemoryNew",
    "MemoryNotFound",
    "add",
    "delete",
    "edit",
    "panel_of",
    "switch",
]


def panel_of(tk: Talekeeper, adventure_id: int) -> MemoryPanel:
    """The memories on the path to the head (used / idle / forgotten), the summary in force,
    and the last background run's error, if any."""
    with reading(tk, adventure_id) as (session, adventure):
        return MemoryPanel.model_validate(panel.panel(session, adventure))


def edit(tk: Talekeeper, adventure_id: int, memory_id: int, change: MemoryEdit) -> Memory:
    with writing(tk, adventure_id) as (session, adventure):
        return Memory.model_validate(panel.edit(session, adventure, memory_id, change))


def add(tk: Talekeeper, adventure_id: int, new: MemoryNew) -> Memory:
    """A memory the player writes, at the moment being read (`memory.panel.add`)."""
    with writing(tk, adventure_id) as (session, adventure):
        return Memory.model_validate(panel.add(session, adventure, new))


def switch(tk: Talekeeper, adventure_id: int, on: bool) -> MemoryPanel:
    """This adventure's memory bank on or off; the panel after."""
    with writing(tk, adventure_id) as (session, adventure):
        panel.switch(session, adventure, on)
        return MemoryPanel.model_validate(panel.panel(session, adventure))


def delete(tk: Talekeeper, adventure_id: int, memory_id: int) -> None:
    with writing(tk, adventure_id) as (session, adventure):
        panel.delete(session, adventure, memory_id)
