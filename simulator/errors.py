"""The error hierarchy of socsim.

Every error carries its facts as fields (not only a formatted string) and pickles, so
sweep workers can send them back to the parent process intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simulator.exitcodes import EXIT_INVALID, EXIT_RUNTIME


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input document.

    Attributes
    ----------
    path : str
        YAML path of the offending value, e.g. ``workload[0].arrival.rate_hz``
        (empty for the document root).
    message : str
        What is wrong and what was expected.
    file : str or None
        The file the value came from (an included file where it came from one).
    line : int or None
        1-based line of the value in ``file``.
    suggestion : str or None
        The nearest valid choice, when the value looks like a typo.
    """

    path: str
    message: str
    file: str | None = None
    line: int | None = None
    suggestion: str | None = None

    def __str__(self) -> str:
        where = self.file or "<scenario>"
        if self.line is not None:
            where += f":{self.line}"
        text = f"{where}: {self.path or '<root>'}: {self.message}"
        if self.suggestion:
            text += f" (did you mean '{self.suggestion}'?)"
        return text


class SocsimError(Exception):
    """Base class of every error socsim raises on purpose.

    ``exit_status`` is the ``socsim`` exit status it ends a command with
    (:mod:`simulator.exitcodes`): invalid input unless a subclass says otherwise.
    """

    exit_status: int = EXIT_INVALID


class SocsimWarning(UserWarning):
    """Base class of every warning socsim emits on purpose (a result that holds but
    leans on something the user should know, e.g. a radio run beyond its measured
    range). Filter with ``warnings.filterwarnings("ignore", category=SocsimWarning)``;
    the ``socsim`` command prints them to stderr as ``socsim: warning: ...``."""


class ScenarioError(SocsimError):
    """A scenario document (or a file it includes) is invalid.

    Lists every problem found, not only the first.
    """

    def __init__(self, problems: Sequence[Problem]):
        self.problems = tuple(problems)
        count = len(self.problems)
        head = f"{count} problem{'s' if count != 1 else ''} in scenario"
        super().__init__(head + ":\n" + "\n".join(f"  - {p}" for p in self.problems))

    def __reduce__(self):
        return (type(self), (self.problems,))


class ModelError(SocsimError):
    """A model graph is malformed (cycle, dangling edge, impossible shape...)."""

    def __init__(self, message: str, model: str | None = None):
        self.message = message
        self.model = model
        super().__init__(f"model '{model}': {message}" if model else message)

    def __reduce__(self):
        return (type(self), (self.message, self.model))


class PlacementError(SocsimError):
    """A placement cannot be made or violates a constraint."""

    def __init__(self, message: str, policy: str | None = None, op: str | None = None):
        self.message = message
        self.policy = policy
        self.op = op
        prefix = f"placement '{policy}'" if policy else "placement"
        where = f" (op '{op}')" if op else ""
        super().__init__(f"{prefix}{where}: {message}")

    def __reduce__(self):
        return (type(self), (self.message, self.policy, self.op))


class SimulationError(SocsimError):
    """The engine reached a state the modelling contract forbids."""

    exit_status = EXIT_RUNTIME


class OutputError(SocsimError):
    """An output location cannot be used (a file where a folder is wanted, read-only, a
    name that would leave ``runs/``...). Raised before anything is simulated."""


class WriteError(SocsimError):
    """Writing results failed part-way (disk full, I/O error); nothing half-written is
    left in place (results are staged under temporary names).

    Attributes
    ----------
    path : str
        What was being written.
    reason : str
        The operating system's words.
    """

    exit_status = EXIT_RUNTIME

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"could not write {path}: {reason}")

    def __reduce__(self):
        return (type(self), (self.path, self.reason))


class RunFailedError(SimulationError):
    """An exception escaped a callback of the engine: the run stopped at ``time_s``.

    The original exception is the ``__cause__`` (in the process that raised it; a sweep
    worker sends back the message only).

    Attributes
    ----------
    scenario : str
        Name of the scenario being run.
    time_s : float
        Simulated time of the failure, s.
    """

    def __init__(self, scenario: str, time_s: float, error: BaseException | str):
        self.scenario = scenario
        self.time_s = time_s
        self.error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        super().__init__(
            f"scenario '{scenario}' failed at simulated t = {time_s:.9g} s: {self.error}"
        )

    def __reduce__(self):
        return (type(self), (self.scenario, self.time_s, self.error))
