"""agentrt's tests, laid out like the code they test: by layer, then by feature
(`tests/<layer>/<feature>/`, the feature folders of the code); the kernel's tests sit at
the top of their layer.

| folder | tests |
|---|---|
| `tests/api/` | routes, security chain, OpenAPI, SSE (the app in process, a real dev server) |
| `tests/workflows/` | workflow logic (time-skipping server), replay of recorded histories |
| `tests/activities/` | workspace tools and effects, model providers |
| `tests/runtime/` | journal, settings, store, pure policy, layering, investigation data |
| `tests/e2e/` | the product as users run it: `agentrt up`, crashes, chaos, README recipes, SDKs |

Shared fixtures are in `tests/conftest.py`; helpers in `tests/*_helpers.py` and `tests/fakes/`.
"""
