"""Every mode carries the control verbs its agent needs (spec standing-agents §2.5, §3.5):
`phase_complete` and `phase_blocked` to end an episode, `soa_propose_mode_change` to
propose leaving the mode, and `agent_workset_complete` while the agent is foundational.
A mode without them traps its agent; a stored row written before this rule gets them at
the tick too."""

from __future__ import annotations

import pytest

from runtime.standing_agents import catalog
from runtime.standing_agents.catalog import MODES, TOOL_SUPERSET, resolve_mode, with_control_verbs
from runtime.standing_agents.contracts import ModeDefinition

CONTROL = {"phase_complete", "phase_blocked", "soa_propose_mode_change"}


@pytest.mark.parametrize("foundational", [True, False], ids=["foundational", "steady"])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: f"{m.agent_type.value}-{m.name}")
def test_every_mode_of_the_catalogue_carries_the_control_verbs(
    mode: ModeDefinition, foundational: bool
) -> None:
    seeded = resolve_mode(mode.agent_type, mode.name)
    assert CONTROL <= set(seeded.tools)  # the seed lists them, as the catalogue route shows
    ticked = with_control_verbs(seeded, foundational)
    assert CONTROL <= set(ticked.tools)
    assert ("agent_workset_complete" in ticked.tools) or not foundational
    assert set(ticked.tools) <= TOOL_SUPERSET[mode.agent_type]


def test_a_stored_row_without_them_gets_them_at_the_tick() -> None:
    bare = catalog.MODES[0].model_copy(update={"tools": ["agent_query_memory"]})
    ticked = with_control_verbs(bare, foundational=True)
    assert set(ticked.tools) == CONTROL | {"agent_query_memory", "agent_workset_complete"}
    assert with_control_verbs(ticked, foundational=True) is ticked  # nothing to add
