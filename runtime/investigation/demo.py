"""The demo investigation, loaded on first start so a fresh `agentrt up` has a case to explore.

The case (fictional: the Valmora harbor dredging contract) is a procurement
fraud through a shell company: a tender steered to a company owned through a
Cypriot nominee by the procurement director's brother-in-law, a volume
amendment for dredging that never happened, and money routed back through Riga.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from sqlmodel import Session, select

from runtime.investigation.loader import load_investigation
from runtime.investigation.models import InvestigationNode

DEMO_WORKSPACE = "demo"
DEMO_FILE = "demo_investigation.json"


def demo_data() -> dict[str, Any]:
    """The demo document (the format `agentrt load-investigation` reads)."""
    text = resources.files("runtime.investigation").joinpath(DEMO_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def ensure_demo(session: Session, workspace: str = DEMO_WORKSPACE) -> bool:
    """Load the demo into `workspace` unless it has nodes already; True when it loaded.

    Idempotent, and it never overwrites a user's own data loaded into that workspace.
    Writes through the caller's unit of work (`with store.transaction() as db:`), which
    commits it.
    """
    present = session.exec(
        select(InvestigationNode.id).where(InvestigationNode.workspace == workspace).limit(1)
    ).first()
    if present is not None:
        return False
    load_investigation(session, workspace, demo_data())
    return True
