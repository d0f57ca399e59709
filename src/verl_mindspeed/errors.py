"""Problems found in a configuration, and the one exception that lists them all."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Literal, Optional

from .i18n import render, trn

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Location:
    """Where an argument was written: a launch file and a 1-based line (``--args-file``)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Issue:
    """One problem with one key, phrased for the person who typed the key.

    ``key`` is the full dotted path as the user would type it on a verl command
    line, without any ``+``/``++`` prefix. ``suggestion`` is the corrected full
    key when the user most likely meant another key. ``override`` is a corrected
    command-line override the user can paste, when one can be written. ``message`` and ``hint``
    are usually :class:`~verl_mindspeed.i18n.Msg` strings: English, and renderable in Chinese.
    """

    severity: Severity
    key: str
    message: str
    hint: str = ""
    suggestion: Optional[str] = None
    rule: str = ""
    override: Optional[str] = None
    location: Optional[Location] = None
    """The file and line of the argument the issue is about, when the launch came from a file."""
    source: Optional[str] = None
    """For a finding of ``check --upstream``: the upstream ``file:line`` that raised or decided it."""
    replaces: Optional[str] = None
    """The argument that ``override`` replaces: one Hydra refuses as written, so no line pasted after it can help
    (Hydra stops at it); the fix goes in its place."""
    deletes: tuple[str, ...] = ()
    """Arguments the fix deletes from the launch (a key the release lacks, a word Hydra cannot read): the whole fix
    when there is no ``override``."""

    def to_json(self, lang: str = "en") -> dict:
        out = asdict(self)
        out.pop("severity")
        out["message"], out["hint"] = render(self.message, lang), render(self.hint, lang)
        return out

    def line(self, lang: str = "en") -> str:
        """The one-line form used in exception messages and plain reports."""
        text = f"{self.key}: {render(self.message, lang)}"
        if self.hint:
            text += f" ({render(self.hint, lang)})"
        return text


class ConfigError(ValueError):
    """Raised with every error of a configuration at once, one line per problem."""

    def __init__(self, issues: Iterable[Issue]):
        self.issues = [i for i in issues if i.severity == "error"]
        super().__init__(self.render("en"))

    def render(self, lang: str = "en") -> str:
        """The message in ``lang``: a count, then one line per error."""
        n = len(self.issues)
        head = render(trn("{n} MindSpeed configuration error:", "{n} MindSpeed configuration errors:", n, n=n), lang)
        return "\n".join([head, *(f"  - {i.line(lang)}" for i in self.issues)])


class EvaluationError(RuntimeError):
    """The command could not be evaluated at all (bad override syntax, no verl, unknown config)."""


class NoLaunchLine(EvaluationError):
    """A launch file that was read, with no ``python3 -m <module>`` line in it (a script that runs another one)."""
