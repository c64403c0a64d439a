"""Refusals of the workspace mutations (`POST /workspace/init`) and their wire bodies.

The fence's own refusals stay `FileError`s (runtime/workspace/file_errors.py, which, like
the fence, imports only the standard library: the search child uses it); the init route
passes one on as the kernel's `RelayedRefusal`. A shape refusal of the body or the path
(a tool name too long) is the kernel's `InvalidRequest` (runtime/failures.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from runtime.failures import WireError

if TYPE_CHECKING:
    pass


class WorkspaceInitConflict(WireError):
    """`POST /workspace/init` without `force` where the memory file has content, or where
    its name is not a file at all (`existing_size` None): 409."""

    kind: Literal["workspace_init_conflict"] = "workspace_init_conflict"
    path: str
    existing_size: int | None = None

    @property
    def http_status(self) -> int:
        return 409

    def response_body(self) -> dict[str, Any]:
        if self.existing_size is None:
            error = (
                f"{self.path} is a directory, not a memory file; remove it or choose "
                "another name (--memory-file-name)"
            )
        else:
            error = f"{self.path} already exists with content; pass force: true to overwrite it"
        return {
            "error": error,
            "code": self.kind_name,
            "path": self.path,
            "existingSize": self.existing_size,
        }
