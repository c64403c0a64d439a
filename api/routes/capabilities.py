"""GET /capabilities: what this daemon speaks and which features it really has."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.capabilities import advertised_features
from api.deps import SettingsDep
from api.routes.daemon_models import Capabilities
from runtime import __version__
from runtime.llm.active import active_model
from runtime.policy.permissions import POLICIES
from runtime.settings import Settings

router = APIRouter()


def model_service(settings: Settings) -> dict[str, Any]:
    """The one model service agents use: the configured provider and its default model."""
    active = active_model(settings)
    return {
        "id": active.provider,
        "provider": active.provider,
        "current": True,
        "modelId": active.model_id,
    }


@router.get("/capabilities")
async def capabilities(settings: SettingsDep) -> Capabilities:
    body = {
        "v": 1,
        "protocolVersions": {"current": "v1", "supported": ["v1"]},
        "agentrtVersion": __version__,
        "mode": "http-bridge",
        "features": advertised_features(settings),
        # Spec 002 leaves modelServices empty at its stage 1 and says clients must not
        # rely on it being filled; agentrt names its one active service here.
        "modelServices": [model_service(settings)],
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
