"""The investigation workspace: the business projections and commands the gateway delegates to.

Per workspace: a graph of typed nodes and edges, sources, evidence, claims,
provenance links, jobs, and research campaigns whose running needs a human
decision. `tools.run_tool` is the one entry of the nine agent tools;
`catalog.catalog` describes them with their real availability.
"""

from runtime.investigation.catalog import TOOL_DESCRIPTORS, TOOL_IDS, CatalogEntry, catalog
from runtime.investigation.demo import DEMO_WORKSPACE, ensure_demo
from runtime.investigation.loader import load_investigation, read_investigation_file
from runtime.investigation.outcomes import ObjectRef, ToolOutcome, ToolStatus
from runtime.investigation.research import (
    InvalidResearchTransition,
    ResearchAlreadyDecided,
    ResearchError,
    ResearchNotFound,
    complete_research,
    decide_research,
    prepare_research,
    research_state,
    start_research,
)
from runtime.investigation.tools import run_tool

__all__ = [
    "DEMO_WORKSPACE",
    "TOOL_DESCRIPTORS",
    "TOOL_IDS",
    "CatalogEntry",
    "InvalidResearchTransition",
    "ObjectRef",
    "ResearchAlreadyDecided",
    "ResearchError",
    "ResearchNotFound",
    "ToolOutcome",
    "ToolStatus",
    "catalog",
    "complete_research",
    "decide_research",
    "ensure_demo",
    "load_investigation",
    "prepare_research",
    "read_investigation_file",
    "research_state",
    "run_tool",
    "start_research",
]
