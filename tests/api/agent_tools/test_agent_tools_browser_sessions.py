"""The agent-tools page's browser sessions are a bounded window (issue 18, item 6).

`GET /api/v1/agent-tools/session` used to mint a store row per call and never purge one,
so a page looping it (a cross-site `<img>` carries no SameSite=Strict cookie) grew the
table for ever. A live cookie is re-used; a cross-site request (`Sec-Fetch-Site:
cross-site`) is never given a new one (403 `cross_site_refused`); a mint purges the
expired rows and keeps the newest `agent_tools_max_browser_sessions`, by creation time
(the table has no last-use column).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select

from runtime.agent_tools.browser import (
    COOKIE_NAME,
    find_browser_session,
    open_browser_session,
)
from runtime.agent_tools.models import AgentToolsBrowserSession
from runtime.store import Store
from tests.conftest import ApiFactory

BOUND = 5


def _rows(store: Store) -> int:
    with store.session() as session:
        return int(
            session.execute(select(func.count()).select_from(AgentToolsBrowserSession)).one()[0]
        )


async def test_a_cookieless_loop_stays_within_the_bound_and_a_cookie_mints_nothing(
    api: ApiFactory,
) -> None:
    client = await api(agent_tools_max_browser_sessions=BOUND)
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    for _ in range(BOUND * 4):
        client.cookies.clear()  # what a cross-site page's request carries: no cookie
        response = await client.get("/api/v1/agent-tools/session")
        assert response.status_code == 200
        assert _rows(store) <= BOUND
    assert _rows(store) == BOUND

    # The page itself, with its cookie: the same session again, no row written.
    client.cookies.clear()
    first = await client.get("/api/v1/agent-tools/session")
    cookie = first.cookies[COOKIE_NAME]
    for _ in range(BOUND * 2):  # the client's jar sends the cookie back
        again = await client.get("/api/v1/agent-tools/session")
        assert again.json() == first.json()
        assert again.cookies[COOKIE_NAME] == cookie
    assert _rows(store) == BOUND
    # An evicted or unknown cookie gets a fresh session, as the page expects.
    client.cookies.clear()
    client.cookies.set(COOKIE_NAME, "stale")
    fresh = await client.get("/api/v1/agent-tools/session")
    assert fresh.cookies[COOKIE_NAME] != "stale"
    assert _rows(store) == BOUND


def test_a_mint_purges_expired_sessions_and_evicts_the_oldest(store: Store) -> None:
    now = datetime.now(UTC)
    with store.session() as session:
        for n in range(3):
            session.add(
                AgentToolsBrowserSession(
                    session_hash=f"expired-{n}",
                    csrf_token="x",
                    created_at=now - timedelta(days=2),
                    expires_at=now - timedelta(seconds=1),
                )
            )
        session.commit()
    assert _rows(store) == 3
    kept = [open_browser_session(store, None, max_sessions=2) for _ in range(2)]
    assert _rows(store) == 2  # the expired ones are gone, both new ones kept
    newest = open_browser_session(store, None, max_sessions=2)
    assert _rows(store) == 2
    assert find_browser_session(store, kept[0].cookie) is None  # the oldest evicted
    assert find_browser_session(store, kept[1].cookie) is not None
    assert find_browser_session(store, newest.cookie) is not None
    # A live cookie is answered from its row: nothing minted, nothing evicted.
    again = open_browser_session(store, newest.cookie, max_sessions=2)
    assert (again.cookie, again.csrf_token) == (newest.cookie, newest.csrf_token)
    assert _rows(store) == 2


def test_the_bound_holds_at_one(store: Store) -> None:
    sessions = [open_browser_session(store, None, max_sessions=1) for _ in range(3)]
    assert _rows(store) == 1
    assert find_browser_session(store, sessions[-1].cookie) is not None


async def test_a_cross_site_request_mints_no_session(api: ApiFactory) -> None:
    """What a browser says of a cross-site `<img>` or link: `Sec-Fetch-Site: cross-site`."""
    client = await api(agent_tools_max_browser_sessions=BOUND)
    store: Store = client.app.state.store  # type: ignore[attr-defined]
    cross_site = {"Sec-Fetch-Site": "cross-site"}
    for _ in range(BOUND * 2):
        client.cookies.clear()
        refused = await client.get("/api/v1/agent-tools/session", headers=cross_site)
        assert refused.status_code == 403
        assert refused.json()["code"] == "cross_site_refused"
        assert COOKIE_NAME not in refused.cookies
    assert _rows(store) == 0

    # The page itself (same-origin, or a client that sends no Sec-Fetch-Site) gets one.
    for headers in ({"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}, {}):
        client.cookies.clear()
        opened = await client.get("/api/v1/agent-tools/session", headers=headers)
        assert opened.status_code == 200, headers
    assert _rows(store) == 3
    # A live cookie is re-used whatever the header says: nothing is minted for it.
    again = await client.get("/api/v1/agent-tools/session", headers=cross_site)
    assert again.status_code == 200 and again.json() == opened.json()
    assert _rows(store) == 3


def test_eviction_is_by_creation_not_last_use(store: Store) -> None:
    """The table has no last-use column (and a migration is out of scope), so a session in
    use is evicted when it is the oldest created: the page then opens a fresh one."""
    oldest = open_browser_session(store, None, max_sessions=2)
    newer = open_browser_session(store, None, max_sessions=2)
    assert open_browser_session(store, oldest.cookie, max_sessions=2).cookie == oldest.cookie
    open_browser_session(store, None, max_sessions=2)
    assert find_browser_session(store, oldest.cookie) is None
    assert find_browser_session(store, newer.cookie) is not None
