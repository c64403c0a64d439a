"""GET /capabilities: what this daemon speaks and which features it really has."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from temporalio.exceptions import ApplicationError

from api.deps import SettingsDep, StoreDep
from api.service.feature_tags import advertised_features
from api.service.models import Capabilities
from runtime import __version__
from runtime.failures import refusal_of
from runtime.llm.active import active_model
from runtime.llm.config_store import LlmConfigRefusal, load_chain_plan
from runtime.llm.contracts import SESSION_SITE, SETTINGS_PRESET
from runtime.sessions.permissions import (
    POLICIES,
)
from runtime.settings import Settings
from runtime.store import Store

router = APIRouter()


def model_service(settings: Settings, store: Store) -> dict[str, Any]:
    """The model session prompts use: the resolution of the `Session:Default` site.

    Unbound (the root's built-in `settings` preset), it is the configured provider and
    its default model, as before model routing; bound, it names the preset, its first
    (model, provider) and the fallback chain after it.
    """
    try:
        plan = load_chain_plan(store, settings, SESSION_SITE)
    except ApplicationError as err:
        # A preset or provider deleted under the read (a race with a bind): say what
        # the settings give, as an unbound site does, rather than refuse the read.
        if refusal_of(err, LlmConfigRefusal) is None:
            raise
        plan = None
    if plan is None or plan.preset_id == SETTINGS_PRESET:
        active = active_model(settings)
        return {
            "id": active.provider,
            "provider": active.provider,
            "current": True,
            "modelId": active.model_id,
        }
    first, *fallback = plan.entries
    return {
        "id": plan.preset_id,
        "provider": first.provider,
        "current": True,
        "modelId": first.model,
        "site": SESSION_SITE,
        "presetId": plan.preset_id,
        "fallback": [{"provider": e.provider, "modelId": e.model} for e in fallback],
    }


@router.get("/capabilities")
async def capabilities(settings: SettingsDep, store: StoreDep) -> Capabilities:
    service = await asyncio.to_thread(model_service, settings, store)
    body = {
        "v": 1,
        "protocolVersions": {"current": "v1", "supported": ["v1"]},
        "agentrtVersion": __version__,
        "mode": "http-bridge",
        "features": advertised_features(settings),
        # Spec 002 leaves modelServices empty at its stage 1 and says clients must not
        # rely on it being filled; agentrt names its one active service here.
        "modelServices": [service],
        "workspaceCwd": settings.workspace_cwd,
        "transports": ["rest"],
        "policy": {"permission": settings.permission_policy},
        "featureModes": {"permission_mediation": list(POLICIES)},
        "limits": {
            "maxSessions": settings.max_sessions,
            "maxPendingPromptsPerSession": settings.max_pending_prompts_per_session,
            "sessionRestoreTimeoutMs": 30_000,
            "permissionResponseTimeoutMs": settings.permission_response_timeout_ms,
        },
    }
    return Capabilities.model_validate(body)
