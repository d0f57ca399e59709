"""A key's own fix, followed: what the key needs once its line sets it as meant, in the same line.

``~typo ++meant=v`` (a near miss), ``++k=full`` for ``k=fulll`` (a value), ``+k=v`` for ``k=v`` (Hydra's missing
``+``) set a key nothing read before, or a value no rule could judge. Set, it may need companions
(``recompute_granularity=full`` asks for ``recompute_method`` and ``recompute_num_layers``) or disagree with another
size: pasted alone, the line would clear its error and raise others. :func:`follow_fixes` judges the launch with each
such line applied, as the user would paste it, and folds the new errors' lines into it, so one paste clears all
(``launch.evaluate`` gives it the re-judging).
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Callable, Optional, Sequence

from ..errors import Issue
from ..i18n import tr
from ..overrides import shell_word

#: Lines followed per launch, and rounds per line (a companion's own companions): each costs one judging of the
#: launch.
MOST_FOLLOWED = 8
ROUNDS = 3
#: Errors whose line re-states the user's own key and value, corrected: the key is set as meant only once pasted.
RESTATING = frozenset({"unknown-key", "value", "hydra-missing-plus", "hydra-append", "hydra-sweep", "verl-key-moved",
                       "verl-positive-size"})


def follows(issue: Issue) -> bool:
    """Whether ``issue``'s line sets a key as the user meant it, so that what that key needs is judged only after
    (a line the shell cannot split is not pasted: it is said as printed)."""
    return issue.rule in RESTATING and issue.severity == "error" and bool(_words(issue.override)) and \
        (issue.rule != "unknown-key" or bool(issue.suggestion))


def _words(line: Optional[str]) -> list[str]:
    try:
        return shlex.split(line or "")
    except ValueError:  # an unclosed quote
        return []


def corrected(argv: Sequence[str], issue: Issue) -> list[str]:
    """The launch with ``issue``'s line pasted: in place of the argument it replaces, else appended."""
    words = _words(issue.override)
    if issue.replaces and issue.replaces in argv:
        at = list(argv).index(issue.replaces)
        return [*argv[:at], *words, *argv[at + 1:]]
    return [*argv, *words]


def _key(word: str) -> str:
    return word.lstrip("~+").partition("=")[0]


def _sets(issue: Issue) -> set[str]:
    return {_key(w) for w in _words(issue.override) if not w.startswith("~")}


def _fold(issue: Issue, new: Sequence[Issue], others: frozenset[str]) -> Optional[Issue]:
    """``issue`` whose line also sets what ``new`` asks for, but the keys another followed line sets (``others``:
    that line comes after, with the value the user meant); None where a new error has no line, or deletes."""
    words, added, rules = _words(issue.override), [], []
    for follow in new:
        extra = _words(follow.override)
        if not extra or follow.replaces or any(w.startswith("~") for w in extra):
            return None
        for word in (w for w in extra if _key(w) not in others):
            same = [n for n, w in enumerate(words) if not w.startswith("~") and _key(w) == _key(word)]
            if same and _reverses(words[same[-1]], word):
                return None  # the switch the user turned on, turned off: said, not folded
            if same:
                words[same[-1]] = word  # the meant value in the form or size the launch can run
            else:
                words.append(word)
            added.append(_key(word).rsplit(".", 1)[-1])
            rules.append(follow.rule)
    if not added:
        return issue
    return replace(issue, override=" ".join(shell_word(w) for w in words), hint=_more(issue, tr(
        "set as meant, '{near}' then meets {rules}; the line takes that fix too: {keys}", near=_leaf(issue),
        keys=", ".join(dict.fromkeys(added)), rules=", ".join(dict.fromkeys(rules)))))


def _reverses(meant: str, word: str) -> bool:
    """Whether ``word`` sets a switch to the opposite of the ``meant`` one."""
    values = (meant.partition("=")[2].strip("'\"").lower(), word.partition("=")[2].strip("'\"").lower())
    return set(values) == {"true", "false"}


def _leaf(issue: Issue) -> str:
    return (issue.suggestion or issue.key).rsplit(".", 1)[-1]


def _more(issue: Issue, text: str) -> str:
    return tr("{hint}; {more}", hint=issue.hint, more=text) if issue.hint else text


def follow_fixes(issues: Sequence[Issue], argv: Sequence[str],
                 judge: Callable[[list[str]], Sequence[Issue]]) -> list[Issue]:
    """``issues`` with each line that sets a key as meant (:func:`follows`) extended by the lines of the errors it
    raises once pasted.

    ``judge`` gives the issues of a launch's argv. A new error is one whose key and rule the launch as written does
    not have. The lines are first judged pasted together: where that raises nothing new, nothing changes (one judging
    for the report); else each line is judged alone. Where a new error has no line (or deletes), the issue keeps its
    own line, and its hint names the error the line will meet.
    """
    have = {(i.key, i.rule) for i in issues}
    setting = [(i, _sets(i)) for i in issues if follows(i)]
    seen: dict[tuple[str, ...], list[Issue]] = {}

    def new_errors(launch: list[str]) -> list[Issue]:  # each launch judged once (one line alone is every line)
        if tuple(launch) not in seen:
            seen[tuple(launch)] = [i for i in judge(launch) if i.severity == "error" and (i.key, i.rule) not in have]
        return seen[tuple(launch)]

    if not new_errors(_pasted(argv, [i for i, _keys in setting[:MOST_FOLLOWED]])):
        return list(issues)  # the lines pasted together raise nothing new: one judging, not one per line
    out, followed = [], 0
    for issue in issues:
        if not follows(issue) or followed >= MOST_FOLLOWED:
            out.append(issue)
            continue
        followed += 1
        current, new = issue, []
        for _ in range(ROUNDS):
            found = new_errors(corrected(argv, current))
            if not found:
                break
            new += found
            folded = _fold(issue, new, frozenset(k for i, keys in setting if i is not issue for k in keys))
            if folded is None:
                current = replace(issue, hint=_more(issue, tr("set as meant, '{near}' then meets: {message}",
                                                              near=_leaf(issue), message=found[0].message)))
                break
            current = folded
        out.append(current)
    return _together(out, argv, new_errors)


def _pasted(argv: Sequence[str], issues: Sequence[Issue]) -> list[str]:
    """The launch with every line of ``issues`` pasted, in order."""
    launch = list(argv)
    for issue in issues:
        launch = corrected(launch, issue)
    return launch


def _together(issues: list[Issue], argv: Sequence[str], new_errors: Callable[[list[str]], list[Issue]]) -> list[Issue]:
    """The folded lines judged pasted together, as the user pastes them: an error one line's value raises beside
    another's (a recompute_num_layers meant beside the full recompute another line brings) goes into the line that
    sets its key."""
    out = list(issues)
    for error in new_errors(_pasted(argv, [i for i in issues if follows(i)])):
        owner = next((n for n, i in enumerate(out) if follows(i) and error.key in _sets(i)), None)
        if owner is not None:
            others = frozenset(k for n, i in enumerate(out) if n != owner and follows(i) for k in _sets(i))
            out[owner] = _fold(out[owner], [error], others) or out[owner]
    return out


__all__ = ["follow_fixes", "follows", "corrected"]
