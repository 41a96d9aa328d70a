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
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from simulator.registry import PluginError, Registry

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


def import_plugins(modules: Iterable[str]) -> None:
    """Import each module of ``modules`` (a scenario's ``plugins:``), once per process.

    Raises
    ------
    PluginError
        Naming the module and what went wrong (not found, or its import failed).
    """
    for name in modules:
        if not isinstance(name, str) or not re.fullmatch(MODULE_PATTERN, name):
            raise PluginError(f"plugins: {name!r} is not a module name like my_pkg.policies")
        try:
            importlib.import_module(name)
        except Exception as exc:
            raise PluginError(
                f"plug-in module '{name}' failed to import: {type(exc).__name__}: {exc}"
            ) from exc
