"""A Bash run as the next session needs it (§13.1).

Claude Code reports a command that exits 0 as ``PostToolUse`` with
``{"stdout", "stderr", "interrupted", ...}``, and one that fails as
``PostToolUseFailure`` with an ``error`` text (``Exit code 1`` and the
output). Either way this module sees the command, its output as text, and
whether Claude Code says it was interrupted, and makes:

- the key part ``<slug>-<h>``: the §6.6 slug rule applied to the command,
  and the first 6 hex digits of the SHA-1 of the whole command, so that a
  rerun of a command updates its own entries and two commands never share
  one (``tool:Bash:<slug>-<h>``, ``error:<slug>-<h>``);
- the value: ``interrupted`` and the exit status when known, then the lines
  that say what failed, then the rest of the output;
- whether the run failed, succeeded, or neither (interrupted without a
  failure), and the line that sums a success up.

The lines that say what failed, in this order (each kind in output order):
``FAILED``/``FAIL``/``ERROR`` lines of test runners (jest's ``●`` titles
of failing tests, cargo's ``test x ... FAILED``); pytest's ``E   ``
lines; error lines (``error:``, ``Error:``, ``SomeError:``, ``fatal:``,
with or without a ``file:line:`` in front, at the start of a line: an
indented ``ValueError:`` in a docstring printed by ``cat`` is not one; a
Rust panic, a Go panic or data race, a failed assertion); the last line of
a Python traceback; and the test runner's summary line (``1 failed, 3
passed in 0.02s``), found as the last line counting passed/failed tests.
A failed run with none of the first four kinds reports its
``file:line[:col]: message`` lines instead (a linter's or compiler's
diagnostics, ``go vet``'s for one). A run failed when its exit status is
not 0, or any of the first four kinds is present, or its summary counts
failures or errors.

Terminal colour codes are removed first; the lines that say what failed
keep their text (trimmed at both ends); the other lines lose the rules drawn
around them (``=====``) and their runs of whitespace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from .._core import truncate
from ..extract import slug

#: §6.6: the value of a tool result is cut to this many bytes.
VALUE_BYTES: Final = 300
#: §13.1: the failure lines an ``error:`` entry holds are cut to this.
ERROR_BYTES: Final = 500
HASH_DIGITS: Final = 6
INTERRUPTED: Final = "interrupted"
RESOLVED_PREFIX: Final = "resolved: "

_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# "Exit code 1" (how Claude Code reports a failed command), "exit status 1",
# "Command exited with non-zero status code 1".
_STATUS: Final = re.compile(
    r"^(?:exit (?:code|status)|command exited with non-zero status code)[: ]\s*(\d{1,3})$",
    re.IGNORECASE,
)
# A bare "FAIL" line says nothing the others do not: the text after counts.
_RUNNER_FAILURE: Final = re.compile(
    r"^(?:FAILED|FAIL|ERROR)(?::?\s+\S)|^--- FAIL:|^\u25cf (?!Console\b)"
    r"|^test .* \.\.\. FAILED$"
)
_PYTEST_E: Final = re.compile(r"^E\s{2,}\S")
_ERROR_LINE: Final = re.compile(
    r"^(?:[^\s:]+:\d+(?::\d+)?:\s*|[^\s(]+\(\d+,\d+\):\s*)?"
    r"(?:[\w.]*(?:Error|Exception)|error|ERROR|fatal|FATAL)(?:\[[\w-]+\]| TS\d+)?:\s*\S"
    r"|^npm ERR!|^thread '.*' panicked at |^assertion\b.*\bfailed\b"
    r"|^panic: |^WARNING: DATA RACE"
)
# "file:line[:col]: message", a compiler's or linter's diagnostic: a line
# that says what failed when a run failed and no other line does.
_LOCATED: Final = re.compile(r"^[^\s:]+:\d+(?::\d+)?: \S")
_TRACEBACK: Final = "Traceback (most recent call last):"
_CHAINED: Final = ("During handling of the above exception", "The above exception was")
_COUNT: Final = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|passing|failing"
    r"|tests? (?:passed|failed))\b|^test result:|^Ran \d+ tests? in ",
    re.IGNORECASE,
)
_FAILING_COUNT: Final = re.compile(
    r"\b[1-9]\d* (?:failed|failing|errors?)\b|^test result: FAILED", re.IGNORECASE
)
_DECORATION: Final = "=-_*#~ \t"
_SPACES: Final = re.compile(r"\s+")
# Rules drawn with 3 or more of these, at either end of a line of the rest.
_RULE: Final = re.compile(r"^[=_\-*~#]{3,}\s*|\s*[=_\-*~#]{3,}$")


def key_part(command: str) -> str:
    """``<slug>-<h>`` of ``command`` (see the module docstring)."""
    digest = _sha1(command.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{slug(command)}-{digest[:HASH_DIGITS]}"


@dataclass(frozen=True)
class Run:
    """One Bash run, analysed."""

    status: int | None
    interrupted: bool
    failure_lines: tuple[str, ...]
    summary: str | None
    rest: tuple[str, ...]
    failed: bool

    @property
    def succeeded(self) -> bool:
        """Neither failed nor interrupted."""
        return not self.failed and not self.interrupted

    def value(self) -> str:
        """The ``tool:Bash:`` value: status, failure lines, the rest, cut to
        :data:`VALUE_BYTES`."""
        head = [INTERRUPTED] if self.interrupted else []
        if self.status is not None:
            head.append(f"exit {self.status}")
        lines = ([", ".join(head)] if head else []) + list(self.reported_lines()) + list(self.rest)
        return truncate("\n".join(lines), VALUE_BYTES)

    def reported_lines(self) -> tuple[str, ...]:
        """The failure lines, then the summary line."""
        summary = () if self.summary is None else (self.summary,)
        return self.failure_lines + summary

    def error_value(self) -> str:
        """The ``error:`` value of a failed run: its failure lines (with the
        summary), or its last line and status when no line says more, cut to
        :data:`ERROR_BYTES`."""
        lines = list(self.reported_lines())
        if not lines:
            lines = list(self.rest[-1:])
            lines += [f"exit {self.status}"] if self.status is not None else []
        return truncate("\n".join(lines) or "failed", ERROR_BYTES)

    def success_line(self) -> str:
        """What sums a success up: the summary line, else the last line of
        output, else its exit status."""
        if self.summary is not None:
            return self.summary
        if self.rest:
            return self.rest[-1]
        return "exit 0" if self.status in (None, 0) else f"exit {self.status}"


def analyse(
    output: str, *, interrupted: bool = False, status: int | None = None, failed: bool = False
) -> Run:
    """The run whose output (stdout and stderr, or Claude Code's failure
    text) is ``output``; ``status`` when the caller knows it; ``failed``
    when the caller knows the run failed (Claude Code reported it as a
    failure) whatever its output shows."""
    lines = [line.strip() for line in _ANSI.sub("", output).splitlines()]
    raw = [line.rstrip() for line in _ANSI.sub("", output).splitlines()]
    taken: set[int] = set()
    for index, line in enumerate(lines):
        match = _STATUS.match(line)
        if match:
            taken.add(index)
            if status is None:
                status = int(match.group(1))
            break
    runner = _pick(lines, taken, lambda i, line: bool(_RUNNER_FAILURE.match(line)))
    pytest_e = _pick(lines, taken, lambda i, line: bool(_PYTEST_E.match(raw[i])))
    errors = _pick(lines, taken, lambda i, line: bool(_ERROR_LINE.match(raw[i])))
    traceback_end = _traceback_ends(raw, taken)
    summary_index = next(
        (i for i in range(len(lines) - 1, -1, -1) if i not in taken and _COUNT.search(lines[i])),
        None,
    )
    summary = None
    if summary_index is not None:
        taken.add(summary_index)
        summary = _SPACES.sub(" ", lines[summary_index].strip(_DECORATION))
    chosen = runner + pytest_e + errors + traceback_end
    if not chosen and status not in (None, 0):
        chosen = _pick(lines, taken, lambda i, line: bool(_LOCATED.match(raw[i])))
    failure_lines = tuple(_distinct(lines[i] for i in chosen))
    rest = tuple(tidy for i, line in enumerate(lines) if i not in taken and (tidy := _tidy(line)))
    failing_summary = summary is not None and bool(_FAILING_COUNT.search(summary))
    failed = (
        failed or bool(failure_lines) or failing_summary or (status is not None and status != 0)
    )
    return Run(status, interrupted, failure_lines, summary, rest, failed)


def resolved_value(run: Run, previous_error: str) -> str:
    """§13.1: the ``error:`` value once a later run of the command succeeds:
    a resolved marker (§5.5), the success, and the first failure line."""
    first = previous_error.split("\n", 1)[0]
    return truncate(f"{RESOLVED_PREFIX}{run.success_line()} (was: {first})", ERROR_BYTES)


def is_resolved_value(value: str) -> bool:
    """Whether an ``error:`` value is one :func:`resolved_value` wrote."""
    return value.startswith(RESOLVED_PREFIX)


# ----- helpers -------------------------------------------------------------

try:
    # CPython's own SHA-1: importing ``hashlib`` loads OpenSSL first, a few
    # milliseconds of every Bash event's process.
    from _sha1 import sha1 as _sha1  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # another interpreter
    from hashlib import sha1 as _sha1


def _pick(lines: list[str], taken: set[int], test: Callable[[int, str], bool]) -> list[int]:
    found = [i for i, line in enumerate(lines) if i not in taken and line and test(i, line)]
    taken.update(found)
    return found


def _traceback_ends(raw: list[str], taken: set[int]) -> list[int]:
    """The index of each Python traceback's last line (its exception)."""
    ends = []
    inside = False
    for index, line in enumerate(raw):
        if line.strip() == _TRACEBACK:
            inside = True
            continue
        if inside and line and not line[0].isspace() and not line.startswith(_CHAINED):
            inside = False
            if index not in taken:
                ends.append(index)
                taken.add(index)
    return ends


def _tidy(line: str) -> str:
    """A line of the rest without the rules drawn around it and with its
    runs of whitespace collapsed: bytes of the value are few."""
    return _SPACES.sub(" ", _RULE.sub("", line))


def _distinct(lines: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(lines))
