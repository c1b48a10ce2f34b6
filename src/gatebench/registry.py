"""One generic registry for every kind of plug-in (datasets, detectors, diagnostics).

Entries come from three places:

* built-ins, registered lazily as ``"module:attr"`` strings so that heavy
  modules are imported only when their entry is used;
* the :meth:`Registry.register` decorator (or :meth:`Registry.add`);
* installed third-party packages, through entry points in the registry's group
  (``gatebench.detectors``, ``gatebench.loaders``, ``gatebench.diagnostics``).
  The group is read once, on the registry's first lookup, and each entry point
  is imported only when its name is first asked for.

An entry point's name is the registry name and its value the registered
object (``my-detector = my_package.detectors:MyDetector``), typically the name
the decorator was applied to. The decorator running while its module imports
does not count as a second registration.
"""

from __future__ import annotations

import difflib
import importlib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points, packages_distributions
from typing import Any, Generic, TypeVar, cast

from gatebench.errors import ConfigError, PluginError

__all__ = ["BUILTIN", "Registry"]


@dataclass(frozen=True)
class _Pending:
    """An entry point found but not imported yet.

    Wrapped rather than tested with ``isinstance(item, EntryPoint)``: with the
    ``importlib_metadata`` backport imported by some dependency, ``entry_points()``
    can return the backport's EntryPoint class, which is not the standard
    library's, and an unwrapped entry would be handed out unloaded.
    """

    ep: Any


T = TypeVar("T")
F = TypeVar("F")

#: The origin of entries that ship with gatebench.
BUILTIN = "built-in"


class Registry(Generic[T]):
    """A name -> object mapping that refuses duplicates and suggests near names.

    Parameters
    ----------
    kind : str
        What the registry holds, used in error messages ("dataset", "detector").
    group : str, optional
        Entry-point group read for third-party plug-ins; none when omitted.
    check : callable, optional
        ``check(name, obj)`` returns why a plug-in's object cannot be used
        (wrong type, mismatched name), or None when it can.
    listing : str, optional
        The command that lists the entries, named in unknown-name errors.

    Examples
    --------
    >>> reg: Registry[int] = Registry("number")
    >>> reg.add("one", 1)
    >>> reg.get("one")
    1
    >>> reg.get("onr")
    Traceback (most recent call last):
    ...
    gatebench.errors.ConfigError: unknown number 'onr'; did you mean 'one'? Known: one
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        check: Callable[[str, Any], str | None] | None = None,
        listing: str | None = None,
    ) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._listing = listing
        self._items: dict[str, T | str | _Pending] = {}
        # Module that registered each entry, to tell built-ins from third-party code.
        self._modules: dict[str, str] = {}
        self._dists: dict[str, str] = {}
        self._loading: set[str] = set()
        self._problems: list[str] = []
        self._discovered = group is None

    def add(self, name: str, obj: T | str, *, module: str | None = None) -> None:
        """Register ``obj`` (or a lazy ``"module:attr"`` path) under ``name``.

        ``module`` is where ``obj`` is defined (default: ``obj.__module__``);
        it decides the entry's :meth:`origin`.
        """
        module = module or _module_of(obj)
        if name in self._items and not self._replaces_placeholder(name, module):
            raise ConfigError(
                f"{self.kind} {name!r} is already registered ({self.origin(name)}); "
                "pick another name"
            )
        self._items[name] = obj
        if name not in self._dists:
            self._modules[name] = module

    def register(self, name: str) -> Callable[[F], F]:
        """Decorator form of :meth:`add`: ``@REGISTRY.register("name")``."""

        def deco(obj: F) -> F:
            self.add(name, cast(T, obj))
            return obj

        return deco

    def get(self, name: str) -> T:
        """Return the entry for ``name``, importing it if it was registered lazily.

        Raises
        ------
        ConfigError
            If ``name`` is unknown or a built-in's optional dependency is missing.
        PluginError
            If a plug-in's entry point cannot be imported or names the wrong object.
        """
        self._discover()
        try:
            item = self._items[name]
        except KeyError:
            raise ConfigError(self._unknown_message(name)) from None
        if isinstance(item, _Pending):
            return self._load_entry_point(name, item.ep)
        if isinstance(item, str):
            return self._import(name, item)
        return item

    def origin(self, name: str) -> str:
        """Where ``name`` comes from: ``"built-in"`` or the distribution providing it."""
        if name in self._dists:
            return self._dists[name]
        module = self._modules.get(name, "")
        top = module.partition(".")[0]
        if top == "gatebench":
            return BUILTIN
        dists = packages_distributions().get(top)
        if dists:
            return dists[0]
        return f"module {module}" if module else "unknown"

    def problems(self) -> list[str]:
        """Plug-in entry points that were ignored, and why (a name already taken)."""
        self._discover()
        return list(self._problems)

    def rediscover(self) -> None:
        """Forget the plug-ins found so far; the next lookup reads the entry points again.

        For a session that installed or removed a plug-in after its first lookup.
        """
        for name in self._dists:
            self._items.pop(name, None)
            self._modules.pop(name, None)
        self._dists.clear()
        self._problems.clear()
        self._discovered = self.group is None

    def names(self) -> list[str]:
        """Registered names in registration order (plug-ins after built-ins)."""
        self._discover()
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self._discover()
        return iter(list(self._items))

    def __len__(self) -> int:
        self._discover()
        return len(self._items)

    def _discover(self) -> None:
        if self._discovered:
            return
        # Set first: a plug-in module may itself look the registry up while it imports.
        self._discovered = True
        for ep in entry_points(group=str(self.group)):
            dist = _dist_name(ep)
            if ep.name in self._items and _same_package(self._modules.get(ep.name), ep.module):
                # The plug-in was imported, and its decorator ran, before this lookup.
                self._dists[ep.name] = dist
                continue
            if ep.name in self._items:
                why = (
                    f"{self.kind} plug-in {ep.name!r} from package {dist} is ignored: the name "
                    f"is already registered ({self.origin(ep.name)}); rename its entry point"
                )
                self._problems.append(why)
                warnings.warn(why, RuntimeWarning, stacklevel=3)
                continue
            self._items[ep.name] = _Pending(ep)
            self._dists[ep.name] = dist

    def _replaces_placeholder(self, name: str, module: str) -> bool:
        # The decorator runs while its own lazy entry (or entry point) is being
        # imported, or when its module is imported before the entry is looked up.
        if name in self._loading:
            return True
        item = self._items[name]
        if isinstance(item, _Pending):
            return item.ep.module == module
        return isinstance(item, str) and item.partition(":")[0] == module

    def _import(self, name: str, path: str) -> T:
        module, _, attr = path.partition(":")
        self._loading.add(name)
        try:
            item = getattr(importlib.import_module(module), attr)
        except ImportError as exc:
            raise ConfigError(
                f"{self.kind} {name!r} is registered but cannot be imported ({exc}); "
                "install the extra it needs (see README) or pick another"
            ) from exc
        finally:
            self._loading.discard(name)
        self._items[name] = item
        return cast(T, item)

    def _load_entry_point(self, name: str, ep: EntryPoint) -> T:
        self._loading.add(name)
        try:
            loaded = ep.load()
        except Exception as exc:  # a third-party import can fail in any way
            raise PluginError(
                self._plugin_message(name, ep, f"{type(exc).__name__}: {exc}")
            ) from exc
        finally:
            self._loading.discard(name)
        current = self._items[name]
        obj = loaded if isinstance(current, _Pending) else current
        why = self._check(name, obj) if self._check is not None else None
        if why:
            raise PluginError(self._plugin_message(name, ep, why))
        self._items[name] = obj
        return cast(T, obj)

    def _plugin_message(self, name: str, ep: EntryPoint, why: str) -> str:
        dist = self._dists.get(name, _dist_name(ep))
        return (
            f"{self.kind} plug-in {name!r} cannot be loaded: entry point "
            f"'{ep.name} = {ep.value}' (group {ep.group}) of package {dist} failed with "
            f"{why}. Fix or upgrade {dist}, or uninstall it (pip uninstall {dist})"
        )

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, self._items, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ";"
        message = f"unknown {self.kind} {name!r}{hint} Known: {', '.join(self._items)}"
        if self._listing:
            message += f". `{self._listing}` describes each one"
        return message


def _module_of(obj: object) -> str:
    if isinstance(obj, str):
        return obj.partition(":")[0]
    return str(getattr(obj, "__module__", "") or "")


def _same_package(module: str | None, other: str) -> bool:
    return bool(module) and str(module).partition(".")[0] == other.partition(".")[0]


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else "(unknown)"
