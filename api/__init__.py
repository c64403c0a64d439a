"""The FastAPI facade: the one door for clients."""
