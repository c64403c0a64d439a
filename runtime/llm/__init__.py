"""Model routing shared by the API, the workflows and the activities (DESIGN.md, Models)."""

from runtime.llm.active import ActiveModel, active_model, served_model_id

__all__ = ["ActiveModel", "active_model", "served_model_id"]
