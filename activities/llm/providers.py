"""Choosing the model provider from the settings (`AGENTRT_MODEL_PROVIDER`)."""

from __future__ import annotations

from activities.llm.contracts import ModelProvider
from activities.llm.openai import OpenAIProvider
from activities.llm.scripted import ScriptedModel
from runtime.settings import Settings


def provider_from_settings(settings: Settings) -> ModelProvider:
    """`scripted` (the default, built in) or `openai` (OPENAI_BASE_URL/API_KEY/MODEL)."""
    if settings.model_provider == "openai":
        return OpenAIProvider(
            base_url=settings.openai_base_url,
            model=settings.openai_model,
            api_key=settings.openai_api_key,
        )
    return ScriptedModel()
