"""Every advertised feature tag must have a behaviour test: no tag without a behaviour."""

from __future__ import annotations

import importlib

from api.capabilities import FEATURES, advertised_features
from runtime.settings import Settings

# tag -> the tests that show its behaviour ("module::function").
BEHAVIOUR_TESTS: dict[str, list[str]] = {
    "health": [
        "tests.test_routes::test_health_ok",
        "tests.test_routes::test_health_deep_counters",
    ],
    "capabilities": ["tests.test_routes::test_capabilities_shape"],
    "daemon_status": [
        "tests.test_routes::test_daemon_status_full_sees_the_worker",
        "tests.test_routes::test_daemon_status_rejects_unknown_detail",
    ],
    "require_auth": ["tests.test_security::test_require_auth_removes_the_health_exemption"],
    "allow_origin": [
        "tests.test_security::test_allowlisted_origin_gets_cors_headers",
        "tests.test_security::test_preflight_of_an_allowlisted_origin_is_204",
    ],
    "rate_limit": ["tests.test_security::test_read_tier_429_with_retry_after"],
}


def _everything_on() -> Settings:
    return Settings(
        token="t", require_auth=True, allow_origin=["https://a.example"], rate_limit=True
    )


def test_every_advertised_tag_has_a_behaviour_test() -> None:
    advertised = advertised_features(_everything_on())
    assert advertised == [tag for tag, _ in FEATURES]
    missing = [tag for tag in advertised if not BEHAVIOUR_TESTS.get(tag)]
    assert missing == [], f"tags advertised without a behaviour test: {missing}"
    for tag in advertised:
        for ref in BEHAVIOUR_TESTS[tag]:
            module_name, function = ref.split("::")
            module = importlib.import_module(module_name)
            assert callable(getattr(module, function, None)), f"{tag}: {ref} does not exist"


def test_conditional_tags_follow_their_toggles() -> None:
    plain = advertised_features(Settings())
    assert plain == ["health", "capabilities", "daemon_status"]
