"""What a client reads of the approval modes, as wire models (runtime/wire.py): `state.modes`
of a session's context (GET /session/:id/context, /load and /resume), built once by
`modes_state` from `approval_modes.AVAILABLE_MODES`.

A module of its own: the models need approval_modes' `ApprovalMode`, so approval_modes.py
(which the workflows import) cannot import them back.
"""

from __future__ import annotations

from runtime.sessions.approval_modes import ApprovalMode, available_modes
from runtime.wire import WireModel


class ModeOption(WireModel):
    id: ApprovalMode
    name: str
    description: str


class ModesState(WireModel):
    current_mode_id: str
    available_modes: list[ModeOption]


def modes_state(current: str) -> ModesState:
    """`state.modes` of GET /session/:id/context: `current` and every mode."""
    return ModesState(
        current_mode_id=current,
        available_modes=[ModeOption.model_validate(mode) for mode in available_modes()],
    )
