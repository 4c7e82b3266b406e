"""A dataclass's generated methods compiled when first called, not when the class is made.

``@dataclass`` writes the source of each method it adds (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, and a frozen class's ``__setattr__`` and ``__delattr__``) and compiles each with
``exec`` as the class is made: about 0.1 ms a method on Python 3.11 and 3.12, six for a frozen
class. The flatten program makes about a hundred dataclasses as it imports its modules, in every
process: 25-30 ms of a rebuild after one edit, most of it for methods no build calls (a frozen
class's ``__setattr__``, most ``__repr__``s). Python 3.13 compiles a class's methods in one
``exec``. On 3.11 and 3.12 the flatten program (flatten/shell/process.py ``main``: once a build
is not replayed, which imports no dataclass, and before flatten makes one) has ``dataclasses``
hand out, for every method but ``__init__``, a function that compiles the method on its first
call, from the very source and namespaces ``dataclasses`` gave, and puts it in its own place on
the class: from then on the class calls the generated method itself. ``__init__`` is compiled at
once (it is always called, and ``inspect.signature`` reads it for a class without a docstring).

Imported as a library, flatten leaves ``dataclasses`` as it is: only the program installs this.
docs/performance.md ("Fifteenth round"); tests/shell/test_dataclass_methods.py.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

# The releases whose dataclasses make each method with this private function, under this signature.
_RELEASES = ((3, 11), (3, 12))


def defer_methods() -> bool:
    """Have ``dataclasses`` compile every generated method but ``__init__`` on its first call;
    False (nothing changed) where this Python's ``dataclasses`` works otherwise."""
    create = getattr(dataclasses, "_create_fn", None)
    if sys.version_info[:2] not in _RELEASES or create is None or getattr(create, "deferring", False):
        return False
    dataclasses._create_fn = _deferring(create)  # type: ignore[attr-defined]
    return True


def _deferring(create: Callable[..., Any]) -> Callable[..., Any]:
    def make(
        name: str,
        args: tuple[str, ...] | list[str],
        body: tuple[str, ...] | list[str],
        *,
        globals: dict[str, Any] | None = None,
        locals: dict[str, Any] | None = None,
        return_type: Any = dataclasses.MISSING,
    ) -> Callable[..., Any]:
        if name == "__init__":
            return create(name, args, body, globals=globals, locals=locals, return_type=return_type)  # type: ignore[no-any-return]
        # ``dataclasses`` may reuse and change a ``locals`` dict it passed (a frozen class's
        # ``__setattr__`` and ``__delattr__`` share one): the method is made from it as it is now.
        kept = None if locals is None else dict(locals)
        made: list[Callable[..., Any]] = []

        def first_call(self: object, *rest: object) -> Any:
            if not made:
                method = create(name, args, body, globals=globals, locals=kept, return_type=return_type)
                method.__qualname__ = first_call.__qualname__  # as dataclasses named it on the class
                made.append(method)
                # In its place on the class (a subclass inherits it from there): the next calls
                # are the generated method's own. A ``__repr__`` is wrapped (reprlib's recursion
                # guard) and stays behind this function.
                for owner in type(self).__mro__:
                    if owner.__dict__.get(name) is first_call:
                        setattr(owner, name, method)
                        break
            return made[0](self, *rest)

        first_call.__name__ = name
        return first_call

    make.deferring = True  # type: ignore[attr-defined]
    return make
