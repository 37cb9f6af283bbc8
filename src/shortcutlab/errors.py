"""One exception hierarchy for the whole toolkit.

Every error a user can cause derives from :class:`ShortcutlabError`, a plain exception; the
command line (and only it) turns one into a one-line message and exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterable


class ShortcutlabError(Exception):
    """Base class of all errors raised by shortcutlab on bad input or missing data."""


class DataNotFoundError(ShortcutlabError):
    """Required data or weights are missing; the message says how to provide them."""


class DiagvibError(ShortcutlabError):
    """Bad input to the DiagViB-6 generator, studies or datasets."""


class SpecError(DiagvibError):
    """An invalid study or dataset specification."""


class TrainError(ShortcutlabError):
    """Bad model name, configuration or weights."""


class RunnerError(ShortcutlabError):
    """Problems scheduling, running or collecting jobs."""


class ProtocolError(ShortcutlabError):
    """Bad BiasBed protocol settings or an output folder without protocol results."""


class StatsError(ShortcutlabError):
    """Invalid input to a statistical test or comparison table."""


class VQAError(ShortcutlabError):
    """Bad VQA data, splits or predictions."""


class ImagenetXError(ShortcutlabError):
    """Bad ImageNet-X predictions or options."""


class FactorAnalysisError(ShortcutlabError):
    """Bad annotation table, predictions or options of the factor-analysis engine."""


def unknown_choice(kind: str, value: object, choices: Iterable[object]) -> str:
    """Format the standard message for a value outside a set of valid choices."""
    listed = ", ".join(str(c) for c in choices)
    return f"unknown {kind} {value!r}; valid choices: {listed}"
