"""Build hook: the wheel carries the ``scenarios/`` library inside the package.

Everything else is declared in ``setup.cfg``. The library (presets, examples, sweeps,
ONNX models) lives at the top of the repository, where the docs and tests name it; a
built package copies it to ``simulator/scenarios``, where
``simulator.spec.paths.shipped_library_dir`` finds it in an installed socsim. An
editable install reads the repository's folder in place and copies nothing.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

LIBRARY = Path(__file__).resolve().parent / "scenarios"
#: what the library's scenarios read: YAML, predictor tables (JSON), ONNX, TFLite models, traces
SHIPPED_SUFFIXES = (".yaml", ".json", ".onnx", ".tflite", ".csv")


class BuildWithLibrary(build_py):
    """``build_py`` that also copies ``scenarios/`` into ``<build>/simulator/scenarios``."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "simulator" / "scenarios"
        for path in sorted(LIBRARY.rglob("*")):
            if path.is_file() and path.suffix in SHIPPED_SUFFIXES:
                destination = target / path.relative_to(LIBRARY)
                self.mkpath(str(destination.parent))
                self.copy_file(str(path), str(destination))


setup(cmdclass={"build_py": BuildWithLibrary})
