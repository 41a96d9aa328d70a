"""Plug-ins: add placement policies, schedulers, dispatchers, arrival processes, radio
models, governors (and sweep executors, designs, techniques, link distributions) from
Python or from installed packages, without forking socsim (docs/plugins.md).

From Python, one ``register_*`` function per family::

    from simulator.plugins import register_scheduler

    @register_scheduler("lifo")
    def lifo(rid, position, priority, deadline_at_s, ready_s):
        return (-rid, position)

From an installed package, an entry point in the family's group (:data:`FAMILIES`)
naming the function (or a module that registers it when imported)::

    [project.entry-points."socsim.schedulers"]
    lifo = "my_policies.schedulers:lifo"

Entry points are loaded on a registry's first lookup, in every process that looks a
name up (sweep workers included). Names registered from Python exist only in the
process that ran the registration: list the module under ``plugins:`` in the scenario so
that the loader, and every sweep worker, imports it (:func:`import_plugins`).

A scenario file is untrusted input, so a module it names under ``plugins:`` is imported
only when it is allowed (:func:`plugin_allowed`): part of the package of an installed
``socsim.*`` entry point, already imported by the Python that registered entries from it,
or allowed by the user (``--allow-plugin MODULE``, ``allow_plugins=``; docs/security.md).
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from simulator.errors import SocsimError
from simulator.registry import PluginError, Registry, installed_entry_points
from simulator.schema import nearest

#: family -> (module, registry attribute, entry-point group)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "placement": ("simulator.placement.base", "POLICIES", "socsim.placement"),
    "scheduler": ("simulator.scheduling", "SCHEDULERS", "socsim.schedulers"),
    "dispatcher": ("simulator.scheduling", "DISPATCHERS", "socsim.dispatchers"),
    "arrival": ("simulator.workload", "ARRIVALS", "socsim.arrivals"),
    "radio_model": ("simulator.network.radio", "RADIO_MODELS", "socsim.radio_models"),
    "governor": ("simulator.hardware.governors", "GOVERNORS", "socsim.governors"),
    "executor": ("simulator.sweep.executors", "EXECUTORS", "socsim.executors"),
    "design": ("simulator.sweep.design", "DESIGNS", "socsim.designs"),
    "technique": ("simulator.graph.techniques.base", "TECHNIQUES", "socsim.techniques"),
    "bandwidth_distribution": (
        "simulator.network.impairments",
        "CAPACITY_DISTRIBUTIONS",
        "socsim.bandwidth_distributions",
    ),
    "jitter": ("simulator.network.impairments", "JITTERS", "socsim.jitters"),
}

#: a dotted module name, as ``import`` takes it
MODULE_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"


def registry(family: str) -> Registry:
    """The registry of ``family`` (a key of :data:`FAMILIES`)."""
    try:
        module, attribute, _ = FAMILIES[family]
    except KeyError:
        raise PluginError(
            f"unknown plug-in family '{family}'; families: {', '.join(FAMILIES)}"
        ) from None
    return getattr(importlib.import_module(module), attribute)


def _registrar(family: str) -> Callable[..., Any]:
    def register(name: str, function: Callable | None = None, *, options=None, doc: str = ""):
        target = registry(family)
        if function is None:  # used as a decorator
            return target.register(name, options, doc)
        return target.add(name, function, options, doc)

    module, attribute, group = FAMILIES[family]
    register.__name__ = register.__qualname__ = f"register_{family}"
    register.__doc__ = (
        f"Add ``function`` to ``{module}.{attribute}`` under ``name`` (the entry-point "
        f"group of installed packages is ``{group}``).\n\n"
        "Call ``register_" + family + "(name, function, options=Record, doc=...)`` or use "
        "``@register_" + family + "(name, options=...)`` as a decorator. ``options`` is the "
        ":class:`~simulator.schema.Record` that checks the entry's YAML options (None: it "
        "takes none).\n\nRaises\n------\nSocsimError\n    When ``name`` is taken."
    )
    return register


register_placement = _registrar("placement")
register_scheduler = _registrar("scheduler")
register_dispatcher = _registrar("dispatcher")
register_arrival = _registrar("arrival")
register_radio_model = _registrar("radio_model")
register_governor = _registrar("governor")
register_executor = _registrar("executor")
register_design = _registrar("design")
register_technique = _registrar("technique")
register_bandwidth_distribution = _registrar("bandwidth_distribution")
register_jitter = _registrar("jitter")


def allowed_plugin_names(allow_plugins: Iterable[str]) -> tuple[str, ...]:
    """``allow_plugins`` (``--allow-plugin``, ``allow_plugins=``) checked: module names.

    Raises
    ------
    SocsimError
        When it is a single string (a list is expected) or holds something that is not a
        dotted module name.
    """
    if isinstance(allow_plugins, str):
        raise SocsimError(
            f"allow_plugins takes a list of module names, got the string {allow_plugins!r} "
            f"(write [{allow_plugins!r}])"
        )
    names = tuple(allow_plugins)
    for name in names:
        if not isinstance(name, str) or not re.fullmatch(MODULE_PATTERN, name):
            raise SocsimError(f"allow_plugins: {name!r} is not a module name like my_pkg.policies")
    return names


def _within(name: str, root: str) -> bool:
    """``name`` is ``root`` or one of its submodules (whole dotted components)."""
    return name == root or name.startswith(root + ".")


def entry_point_modules() -> tuple[str, ...]:
    """The modules named by installed entry points of a ``socsim.*`` group, sorted.

    The distributions that declare them said they are socsim plug-ins: they are trusted
    as installed software, and so is every module of their top-level packages."""
    points = installed_entry_points()
    groups = points.groups if hasattr(points, "groups") else ()
    modules = {
        getattr(point, "module", None) or point.value.split(":", 1)[0].strip()
        for group in groups
        if group.startswith("socsim.")
        for point in points.select(group=group)
    }
    return tuple(sorted(modules))


def python_registered_modules() -> tuple[str, ...]:
    """Modules, already imported, whose objects were registered in this process's
    registries (built-in ones, ``register_*`` calls, loaded entry points), sorted.

    Looks at the registries already imported only, and loads no entry point."""
    found: set[str] = set()
    for module, attribute, _ in FAMILIES.values():
        owner = sys.modules.get(module)
        if owner is not None:
            found.update(getattr(owner, attribute).registered_modules())
    return tuple(sorted(m for m in found if m in sys.modules))


def plugin_allowed(name: str, allow_plugins: Iterable[str] = ()) -> bool:
    """Whether a scenario may make socsim import module ``name`` (a ``plugins:`` item).

    Allowed: ``name`` is in ``allow_plugins`` or a submodule of one of them (the user
    allowed it); or a module of the top-level package of an installed ``socsim.*``
    entry point (:func:`entry_point_modules`); or an already imported module that
    registered entries from Python in this process, or a package above one
    (:func:`python_registered_modules`: importing it again runs nothing). Nothing is
    imported to decide.
    """
    if any(_within(name, allowed) for allowed in allow_plugins):
        return True
    if name in sys.modules and any(_within(module, name) for module in python_registered_modules()):
        return True
    roots = {module.split(".", 1)[0] for module in entry_point_modules()}
    return any(_within(name, root) for root in roots)


def refusal(name: str, allow_plugins: Iterable[str] = ()) -> tuple[str, str | None]:
    """The message (and the nearest allowed module, if any) for a ``plugins:`` item that
    :func:`plugin_allowed` refuses."""
    message = (
        f"socsim would import module '{name}', running its code: not allowed, as a scenario "
        "file may only name modules of installed socsim plug-ins (packages with socsim.* "
        "entry points) or modules your Python code registered entries from; if you trust "
        f"it, allow it with --allow-plugin {name} (allow_plugins=['{name}'] in the library)"
    )
    known = (*allow_plugins, *entry_point_modules(), *python_registered_modules())
    return message, nearest(name, known)


def import_plugins(modules: Iterable[str], allow_plugins: Iterable[str] | None = None) -> None:
    """Import each module of ``modules`` (a scenario's ``plugins:``), once per process.

    Parameters
    ----------
    modules : iterable of str
        Dotted module names.
    allow_plugins : iterable of str, optional
        Modules the user allows (:func:`plugin_allowed`); a module not allowed is refused
        before anything is imported. None: no check (a list from Python code, or one
        already checked where the scenario was made).

    Raises
    ------
    PluginError
        Naming the module and what went wrong (not allowed, not found, or its import
        failed).
    """
    for name in modules:
        if not isinstance(name, str) or not re.fullmatch(MODULE_PATTERN, name):
            raise PluginError(f"plugins: {name!r} is not a module name like my_pkg.policies")
        if allow_plugins is not None and not plugin_allowed(name, allow_plugins):
            raise PluginNotAllowedError(name, *refusal(name, allow_plugins))
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise PluginError(
                f"plug-in module '{name}' failed to import: {type(exc).__name__}: {exc}"
            ) from exc


class PluginNotAllowedError(PluginError):
    """A scenario names, under ``plugins:``, a module it may not make socsim import."""

    def __init__(self, module: str, message: str, suggestion: str | None = None):
        self.module, self.suggestion = module, suggestion
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.module, str(self), self.suggestion))
