"""Names a package exports, loaded the first time they are read (PEP 562).

`fetcher`, `fetcher.handler` and `fetcher.net` re-export names defined in
their submodules without importing those at import time, so that importing
the package (`fetch --version`, a scheme's `from fetcher.handler import ...`)
costs nothing until a name is used.  Each keeps its table and a block of
imports under `TYPE_CHECKING` for type checkers; this module writes the
`__getattr__` that serves the table, once for all three.  It imports
nothing of fetcher: the bottom layer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(
    namespace: dict[str, Any], names: Mapping[str, str], modules: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """A module `__getattr__` for the module whose `globals()` is `namespace`.

    `names` maps a public name to the module that defines it under that
    name, `modules` a public name to a module re-exported whole (a module
    name may be relative to the package: ".url").  A name is
    imported when first read and then kept in `namespace`, so later reads
    are plain lookups; any other name raises AttributeError as usual.
    """
    package = namespace["__name__"]
    whole = modules or {}

    def __getattr__(name: str) -> Any:
        if name in whole:
            value = importlib.import_module(whole[name], package)
        elif name in names:
            value = getattr(importlib.import_module(names[name], package), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__
