"""socsim's version: written once, in ``setup.cfg``; read from the installed package's
metadata (``importlib.metadata``), so ``socsim --version``, ``simulator.__version__``
and ``pip show socsim`` always agree.
"""

from __future__ import annotations

import configparser
from pathlib import Path

DISTRIBUTION = "socsim"


def version() -> str:
    """The version of the running socsim: the installed distribution's metadata.

    A source tree that was never installed (``PYTHONPATH=.``) has no metadata: then the
    ``setup.cfg`` beside the package, which is what an install writes into it;
    ``0+unknown`` when neither is there.
    """
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        pass
    setup_cfg = Path(__file__).resolve().parents[1] / "setup.cfg"
    parser = configparser.ConfigParser()
    parser.read(setup_cfg, encoding="utf-8")  # a missing file reads as empty
    if parser.get("metadata", "name", fallback="") == DISTRIBUTION:
        return parser.get("metadata", "version", fallback="") or "0+unknown"
    return "0+unknown"


__version__ = version()
