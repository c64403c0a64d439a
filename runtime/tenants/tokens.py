"""Tenant tokens: bearer tokens an administrator issues for one tenant, with a role.

A token is `agentrt_` + 43 URL-safe characters (256 bits), shown once when it is created;
the store keeps only its SHA-256 (hex), so a leaked database gives no usable token. A
token is looked up by that digest (`verify`): the lookup compares digests, never the
token, and a guess that matches no digest tells nothing about the token's characters.

Roles: `coder` (the tenant's MCP tools) and `operator` (the tenant's REST routes,
decisions included); what each reaches is decided in one place, api/security/roles.py.
The deployment token (`AGENTRT_TOKEN`) is the administrator's and is no row here.

A revoked token keeps its row (`revoked_at` set), so the names that verified answers
recorded (`operator:alice`) stay traceable; a name is unique among the tenant's *live*
tokens only (a partial unique index, `WHERE revoked_at IS NULL`, on SQLite and
PostgreSQL alike), so a revoked name can be issued again. Every request verifies against
the store: a revoke takes effect at the next request, in every process.

Store side only: imports nothing from api/, activities/ or workflows/.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlalchemy import Column, DateTime, Index, text, update
from sqlmodel import Field, Session, SQLModel, col, select

from runtime.failures import WireError
from runtime.store.engine import Store

TOKEN_PREFIX = "agentrt_"
ROLES: tuple[str, ...] = ("coder", "operator")
Role = Literal["coder", "operator"]
NAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
TOKEN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

_LIVE = text("revoked_at IS NULL")


class TenantToken(SQLModel, table=True):
    """One issued token: its digest, never the token."""

    __tablename__ = "tenant_tokens"
    __table_args__ = (
        Index("ix_tenant_tokens_token_hash", "token_hash", unique=True),
        # A name is taken while a live token carries it; revoked rows stay for the record.
        Index(
            "uq_tenant_tokens_live_name",
            "tenant",
            "name",
            unique=True,
            sqlite_where=_LIVE,
            postgresql_where=_LIVE,
        ),
    )

    token_id: str = Field(primary_key=True, max_length=64)
    tenant: str = Field(max_length=200)
    name: str = Field(max_length=64)
    role: str = Field(max_length=20)
    token_hash: str = Field(max_length=64)
    created_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    revoked_at: datetime | None = Field(
        default=None, sa_column=Column(DateTime(timezone=True), nullable=True)
    )


class Identity(BaseModel):
    """Who a request verifiably is: the administrator (the deployment token), or a
    tenant token's name and role in its tenant."""

    kind: Literal["admin", "tenant"]
    tenant: str | None = None
    name: str | None = None
    role: Role | None = None
    token_id: str | None = None

    @property
    def label(self) -> str:
        """What an answer records: `admin`, or `<role>:<name>` (`operator:alice`)."""
        if self.kind == "admin":
            return "admin"
        return f"{self.role}:{self.name}"

    @property
    def is_admin(self) -> bool:
        return self.kind == "admin"


ADMIN = Identity(kind="admin")


class IssuedToken(BaseModel):
    """What `create` returns: the row's fields and the plaintext token, this once."""

    token_id: str
    tenant: str
    name: str
    role: Role
    token: str
    created_at: datetime


class TokenNameTaken(WireError):
    """A live token of the tenant already has this name: 409."""

    kind: Literal["token_name_taken"] = "token_name_taken"
    tenant: str
    name: str

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Tenant "{self.tenant}" already has a live token named "{self.name}"',
            "code": self.kind_name,
            "tenant": self.tenant,
            "name": self.name,
        }


class TokenNotFound(WireError):
    """No token of this id in this tenant: 404."""

    kind: Literal["token_not_found"] = "token_not_found"
    tenant: str
    token_id: str

    @property
    def http_status(self) -> int:
        return 404

    def response_body(self) -> dict[str, Any]:
        return {
            "error": f'Tenant "{self.tenant}" has no token with id "{self.token_id}"',
            "code": self.kind_name,
            "tokenId": self.token_id,
        }


class TokenRefused(Exception):
    """A refusal of the token store; `failure` is its wire answer."""

    def __init__(self, failure: WireError) -> None:
        super().__init__(failure.kind_name)
        self.failure = failure


def token_digest(token: str) -> str:
    """The SHA-256 (hex) the store keeps of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create(store: Store, tenant: str, name: str, role: Role) -> IssuedToken:
    """Issue a token; the plaintext is in the result and nowhere else.

    Raises:
        TokenRefused(TokenNameTaken): a live token of the tenant has this name (two
            concurrent creates of one name: one wins, on the unique index; the other
            runs again, `Store.run_transaction`, and finds the winner's token).
    """
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token_id = uuid.uuid4().hex
    created_at = datetime.now(UTC)

    def write(db: Session) -> None:
        taken = db.exec(
            select(TenantToken.token_id).where(
                col(TenantToken.tenant) == tenant,
                col(TenantToken.name) == name,
                col(TenantToken.revoked_at).is_(None),
            )
        ).first()
        if taken is not None:
            raise TokenRefused(TokenNameTaken(tenant=tenant, name=name))
        db.add(
            TenantToken(
                token_id=token_id,
                tenant=tenant,
                name=name,
                role=role,
                token_hash=token_digest(token),
                created_at=created_at,
            )
        )
        db.flush()

    store.run_transaction(write)
    return IssuedToken(
        token_id=token_id,
        tenant=tenant,
        name=name,
        role=role,
        token=token,
        created_at=created_at,
    )


def list_tokens(store: Store, tenant: str) -> list[TenantToken]:
    """The tenant's live tokens, oldest first."""
    with store.session() as db:
        rows = db.exec(
            select(TenantToken)
            .where(col(TenantToken.tenant) == tenant, col(TenantToken.revoked_at).is_(None))
            .order_by(col(TenantToken.created_at), col(TenantToken.token_id))
        ).all()
        return list(rows)


def revoke(store: Store, tenant: str, token_id: str) -> TenantToken:
    """Revoke a token of the tenant (again: a no-op); the next request with it is 401.

    Raises:
        TokenRefused(TokenNotFound): the tenant has no token of this id.
    """
    with store.transaction() as db:
        db.exec(
            update(TenantToken)
            .where(
                col(TenantToken.token_id) == token_id,
                col(TenantToken.tenant) == tenant,
                col(TenantToken.revoked_at).is_(None),
            )
            .values(revoked_at=datetime.now(UTC))
        )
        row = db.get(TenantToken, token_id, populate_existing=True)
    if row is None or row.tenant != tenant:
        raise TokenRefused(TokenNotFound(tenant=tenant, token_id=token_id))
    return row


def verify(store: Store, presented: str) -> Identity | None:
    """The identity of a live tenant token, or None (unknown, malformed or revoked).

    Only tokens of agentrt's shape are looked up: anything else costs no query.
    """
    if not presented.startswith(TOKEN_PREFIX) or len(presented) > 200:
        return None
    digest = token_digest(presented)
    # The read pool: on SQLite a per-request lookup must not queue behind the write lock.
    with Session(store.read_engine) as db:
        row = db.exec(
            select(TenantToken).where(
                col(TenantToken.token_hash) == digest, col(TenantToken.revoked_at).is_(None)
            )
        ).first()
    if row is None or row.role not in ROLES:
        return None
    role: Role = "coder" if row.role == "coder" else "operator"
    return Identity(
        kind="tenant", tenant=row.tenant, name=row.name, role=role, token_id=row.token_id
    )
