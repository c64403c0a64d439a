"""The Windows pool for direct clients (spec standing-agents §2.3, issue 12).

- `GET|PUT /api/v1/tenants/{tenant}/features/windows-pool` — the tenant flag, default off.
- `POST /api/v1/tenants/{tenant}/windows/{holder}/{verb}` with the verb's arguments →
  `{"result"}` or `{"error": {code, message, data}}`, the status mirroring the code;
  strict (401 `token_required` while no token is configured).
  FEATURE_DISABLED and VALIDATION_ERROR (bad arguments; a `session-`/`turn-`/`agent-`
  holder that is not this tenant's or has settled: api/windows/holders.py) answer before
  any lease; every other verb runs through the holder's `WindowsLeaseWorkflow`
  (runtime/windows/lease_client.py).
- `GET /api/v1/tenants/{tenant}/windows/leases` — the tenant's running leases.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from api.deps import SettingsDep, StoreDep, TemporalDep, TenantPath
from api.errors import ApiError, rpc_error, temporal_unavailable, worker_unavailable
from api.input_bounds import StrictJsonRoute
from api.openapi import errors, json_body
from api.requests import read_body
from api.security import require_configured_token
from api.windows.holders import refuse_holder
from api.windows.models import (
    VERB_ERRORS,
    WindowsLeases,
    WindowsVerbArgs,
    WindowsVerbResult,
)
from api.windows.temporal_calls import run_verb
from runtime.failures import decode_failure
from runtime.store.tenants import feature_enabled, set_feature
from runtime.tenants.views import FeatureBody, FeatureState
from runtime.windows import lease_client
from runtime.windows.errors import WindowsError, WindowsErrorCode
from runtime.windows.lease_contracts import HOLDER_PATTERN, WINDOWS_POOL_FEATURE
from runtime.windows.verbs import WindowsVerb, parse_verb, validate_and_clamp

router = APIRouter(prefix="/api/v1/tenants/{tenant}", route_class=StrictJsonRoute)
FEATURE_PATH = f"/features/{WINDOWS_POOL_FEATURE}"

HolderPath = Annotated[str, Path(pattern=HOLDER_PATTERN)]
VerbPath = Annotated[str, Path(pattern=r"^windows_[a-z_]{1,40}$")]


def _feature(tenant: str, enabled: bool) -> FeatureState:
    return FeatureState(tenant=tenant, feature=WINDOWS_POOL_FEATURE, enabled=enabled)


@router.get(FEATURE_PATH, responses=errors(400), response_model_exclude_none=True)
async def get_windows_pool(tenant: TenantPath, store: StoreDep) -> FeatureState:
    enabled = await asyncio.to_thread(feature_enabled, store, tenant, WINDOWS_POOL_FEATURE)
    return _feature(tenant, enabled)


@router.put(
    FEATURE_PATH,
    dependencies=[Depends(require_configured_token)],
    responses=errors(400, 401),
    response_model_exclude_none=True,
)
async def put_windows_pool(body: FeatureBody, tenant: TenantPath, store: StoreDep) -> FeatureState:
    """Enable or disable. Disabling refuses new verbs; held leases end by their own
    release, settlement or idle expiry."""
    await asyncio.to_thread(set_feature, store, tenant, WINDOWS_POOL_FEATURE, body.enabled)
    return _feature(tenant, body.enabled)


@router.get("/windows/leases", responses=errors(400, 503))
async def list_leases(tenant: TenantPath, client: TemporalDep) -> WindowsLeases:
    try:
        leases = await asyncio.wait_for(lease_client.list_leases(client, tenant), 30)
    except TimeoutError as err:
        raise worker_unavailable() from err
    return WindowsLeases(leases=leases)


def _typed(err: ApplicationError) -> ApiError:
    failure = decode_failure(err)
    assert isinstance(failure, WindowsError)
    return ApiError.of(failure)


@router.post(
    "/windows/{holder}/{verb}",
    # Strict like every mutation agentrt adds beyond the session spec: a verb leases a
    # machine and drives its desktop.
    dependencies=[Depends(require_configured_token)],
    responses=VERB_ERRORS,
    openapi_extra=json_body(WindowsVerbArgs, required=False),
)
async def call_verb(
    tenant: TenantPath,
    holder: HolderPath,
    verb: VerbPath,
    request: Request,
    store: StoreDep,
    settings: SettingsDep,
    client: TemporalDep,
) -> WindowsVerbResult:
    """One verb of the holder's lease (its first verb leases a machine)."""
    try:
        parsed = parse_verb(verb)
    except ApplicationError as err:
        raise _typed(err) from err
    if not await asyncio.to_thread(feature_enabled, store, tenant, WINDOWS_POOL_FEATURE):
        raise ApiError.of(WindowsError.agentrt(WindowsErrorCode.FEATURE_DISABLED))
    body = await read_body(request)
    try:
        args = validate_and_clamp(parsed, body)
    except ApplicationError as err:
        raise _typed(err) from err
    if parsed != WindowsVerb.RELEASE:
        # A release never leases: it stays open to any holder (idempotent, not_held).
        try:
            refusal = await refuse_holder(store, client, settings, tenant, holder)
        except TimeoutError as err:
            raise temporal_unavailable() from err
        except RPCError as err:
            raise rpc_error(err) from err
        if refusal is not None:
            raise ApiError.of(refusal)
    try:
        result = await run_verb(client, settings, tenant, holder, parsed, args)
    except lease_client.LeaseCallFailed as err:
        raise ApiError.of(err.error) from err
    except lease_client.LeaseUnavailable as err:
        raise worker_unavailable() from err
    except RPCError as err:
        raise rpc_error(err) from err
    return WindowsVerbResult(result=result)
