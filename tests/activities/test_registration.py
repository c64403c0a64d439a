"""Each feature registers its own activities and workflows (activities/<feature>/__init__.py,
workflows/<feature>/__init__.py); the worker collects them. An activity a contract names
(a `…Activity` enum's member, an `ActivityContract`: what workflows call by) that no
feature registers would fail only when a workflow calls it; one registered twice would
fail the worker's start."""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Any

import temporalio.activity
import temporalio.workflow

import runtime
from activities import build_activities
from activities.llm import ScriptedModel
from runtime.activity_contract import ActivityContract
from runtime.settings import Settings
from runtime.store import EventJournal, Store
from workflows import all_workflows


def _registered_activities(tmp_path: Path) -> list[str]:
    store = Store(f"sqlite:///{tmp_path / 'agentrt.db'}")
    settings = Settings(data_dir=tmp_path / ".data", workspace=tmp_path)
    activities = build_activities(store, EventJournal(store), ScriptedModel(), settings)
    names = []
    for activity in activities:
        definition = temporalio.activity._Definition.from_callable(activity)
        assert definition is not None and definition.name is not None, activity
        names.append(definition.name)
    return names


def _contract_activity_enums() -> list[type[StrEnum]]:
    """Every `…Activity` StrEnum in runtime/ (the contracts workflows call activities by)."""
    found: dict[str, type[StrEnum]] = {}
    for module in pkgutil.walk_packages(runtime.__path__, "runtime."):
        if module.name.startswith("runtime.migrations") or module.name.endswith("search_child"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if (
                isinstance(value, type)
                and issubclass(value, StrEnum)
                and value.__name__.endswith("Activity")
                and value.__module__ == module.name
            ):
                found[f"{value.__module__}.{value.__name__}"] = value
    return list(found.values())


def test_every_activity_is_registered_once(tmp_path: Path) -> None:
    names = _registered_activities(tmp_path)
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    assert not twice, f"registered twice: {twice}"


def test_every_activity_a_contract_names_is_registered(tmp_path: Path) -> None:
    registered = set(_registered_activities(tmp_path))
    enums = _contract_activity_enums()
    assert len(enums) >= 8, [e.__name__ for e in enums]
    missing = sorted(
        f"{enum.__name__}.{member.name} ({member.value})"
        for enum in enums
        for member in enum
        if member.value not in registered
    )
    assert not missing, f"named by a contract, registered by no feature: {missing}"


def _contracts() -> list[ActivityContract[Any, Any]]:
    """Every ActivityContract runtime/ declares (module constants and `…ActivityContracts`
    classes): what workflows call activities by."""
    found: dict[str, ActivityContract[Any, Any]] = {}
    for module in pkgutil.walk_packages(runtime.__path__, "runtime."):
        if module.name.startswith("runtime.migrations") or module.name.endswith("search_child"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            holders = [value]
            if isinstance(value, type) and value.__module__ == module.name:
                holders = list(vars(value).values())
            for held in holders:
                if isinstance(held, ActivityContract):
                    found[held.name] = held
    return list(found.values())


def test_every_activity_a_contract_declares_is_registered(tmp_path: Path) -> None:
    registered = set(_registered_activities(tmp_path))
    contracts = _contracts()
    assert len(contracts) >= 45, sorted(c.name for c in contracts)
    missing = sorted(c.name for c in contracts if c.name not in registered)
    assert not missing, f"declared by a contract, registered by no feature: {missing}"


def test_every_workflow_is_registered_once() -> None:
    names = [temporalio.workflow._Definition.must_from_class(cls).name for cls in all_workflows()]
    assert len(names) == len(set(names)), names
    assert len(names) >= 10
