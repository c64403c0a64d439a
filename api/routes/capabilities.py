"""GET /capabilities: what this daemon speaks and which features it really has."""

from __future__ import annotations

from fastapi import APIRouter

from api.capabilities import advertised_features
from api.deps import SettingsDep
from api.routes.daemon_models import Capabilities
from runtime import __version__
from runtime.policy.permissions import POLICIES

router = APIRouter()


@router.get("/capabilities")
async def capabilities(settings: SettingsDep) -> Capabilities:
    body = {
        "v": 1,
        "protocolVersions": {"current": "v1", "supported": ["v1"]},
        "agentrtVersion": __version__,
        "mode": "http-bridge",
        "features": advertised_features(settings),
        "modelServices": [],
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
