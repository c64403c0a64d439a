"""An activity's contract: its name, its argument's type and its result's type, in one object
that both sides use.

Workflows never import an activity module (the API imports workflows and must load no
activity), so they call activities by name. A name alone leaves the types to each call: a
hand-passed `result_type`, and an argument nobody checks. A contract closes both ends:

- the workflow calls `workflows.activity_calls.call_activity(CONTRACT, arg, ...)`, and mypy checks
  `arg` against the contract and types the result from it (no `result_type` at the call);
- the activity is declared with `@CONTRACT.defn`, and mypy checks the method's argument and
  result against the same contract (a mismatch is a type error, not a failed decode at
  run time).

Contracts live with their feature's other contracts (runtime/<feature>/), beside the
`…Activity` enum that names them.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from temporalio import activity

A = TypeVar("A")
R = TypeVar("R")
S = TypeVar("S")


@dataclass(frozen=True)
class ActivityContract(Generic[A, R]):
    """One activity: `name` (what the worker registers), `arg` (its one argument's type;
    None for an activity that takes none) and `result` (its result's type)."""

    name: str
    arg: type[A] | None
    result: type[R]

    def defn(
        self, method: Callable[[S, A], Coroutine[Any, Any, R]]
    ) -> Callable[[S, A], Coroutine[Any, Any, R]]:
        """`activity.defn` under the contract's name, for a method that takes its argument
        and returns its result."""
        return activity.defn(name=self.name)(method)

    def defn_without_argument(
        self, method: Callable[[S], Coroutine[Any, Any, R]]
    ) -> Callable[[S], Coroutine[Any, Any, R]]:
        """`activity.defn` for an activity whose contract takes no argument (`arg` None).

        Raises:
            TypeError: the contract takes an argument (raised where the method is
                decorated, so when its module is imported).
        """
        if self.arg is not None:
            raise TypeError(f"activity {self.name} takes a {self.arg.__name__}")
        return activity.defn(name=self.name)(method)
