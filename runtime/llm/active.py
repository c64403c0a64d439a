"""Which provider and model this deployment runs, and what a session's model id means now.

A session records the model id it was created with (or switched to). The provider is
the deployment's (`AGENTRT_MODEL_PROVIDER`), and it may change between two starts of
the daemon: a session created under `scripted` and prompted after a switch to
`openai` must ask OpenAI for the configured model, not for a model named `scripted`.
`served_model_id` is that rule, used by the worker when it runs a model step and by
the API when it reports a session's current model.
"""

from __future__ import annotations

from pydantic import BaseModel

from runtime.settings import Settings

SCRIPTED_MODEL = "scripted"


class ActiveModel(BaseModel):
    """The provider agents talk to, and the model they get unless a session chose one."""

    provider: str
    model_id: str


def active_model(settings: Settings) -> ActiveModel:
    if settings.model_provider == "openai":
        return ActiveModel(provider="openai", model_id=settings.openai_model)
    return ActiveModel(provider="scripted", model_id=SCRIPTED_MODEL)


def served_model_id(provider: str, default_model_id: str, session_model_id: str | None) -> str:
    """The model a step asks the current provider for, given the session's model id.

    `scripted` serves only itself. Any other provider serves the session's own choice,
    except `scripted` (left over from a session created before the switch), which
    means the provider's default model.
    """
    if provider == "scripted":
        return SCRIPTED_MODEL
    if not session_model_id or session_model_id == SCRIPTED_MODEL:
        return default_model_id
    return session_model_id
