"""Example socsim plug-ins (docs/plugins.md).

``policies`` is reached through entry points (``pyproject.toml``): installing the package
is enough. ``bursts`` registers itself from Python when imported: a scenario lists it
under ``plugins:``. Importing this package imports neither, so that each route is shown
on its own.
"""
