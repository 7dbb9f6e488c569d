"""Shared fixtures: the demo scenario's rules and its initial document."""

from __future__ import annotations

import copy

import pytest

from talekeeper.state import initial_document, load_rules

from .demo_scenario import DEMO_RULES


@pytest.fixture
def raw_rules():
    return copy.deepcopy(DEMO_RULES)


@pytest.fixture(scope="session")
def rules():
    return load_rules(copy.deepcopy(DEMO_RULES))


@pytest.fixture
def doc(rules):
    return initial_document(rules)
