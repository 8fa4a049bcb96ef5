"""Runs every read-only call and command on damaged store copies (run as a
script by tests/test_damage.py) and reports what each answered.

    damage_reader.py TRIALS.json      (or /dev/stdin)

TRIALS.json lists ``{"path": ..., "keys": [...], "repair_to": ...}``
(``repair_to`` optional: where ``membolt repair`` puts the new store); one
JSON object per trial is printed, in order:

``answers``  what the reads returned: ``{"get": {key: entry dict | None},
             "entries": [...], "search": [...], "export": [...]}`` (a call
             that raised is absent)
``errors``   ``[call, exception class, message]`` for every MemboltError
``escaped``  the same for anything else raised (a PanicException, say):
             never allowed
``doctor``   the exit status of ``membolt doctor``
``repair``   with ``repair_to``: ``{"status": ..., "output": ..., "entries":
             [...]}``, the exit status and output of ``membolt repair`` and
             every entry of the store it made (``None`` if it made none)

Everything runs in this one process (one interpreter start for the whole
campaign); the test gives it a deadline, so a hang fails the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import membolt
from membolt import cli


def entry_dict(entry: membolt.Entry | None) -> dict[str, Any] | None:
    return None if entry is None else entry.to_dict()


def command(argv: list[str], *, with_errors: bool = False) -> tuple[int, str]:
    """Runs a CLI command in this process: its exit status and output (with
    what it wrote to stderr after it, if asked)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue() + (err.getvalue() if with_errors else "")


def repair(path: str, target: str) -> dict[str, Any]:
    """``membolt repair`` into ``target``, and what the new store holds."""
    status, output = command(["repair", "--db", path, "-o", target], with_errors=True)
    entries = None
    if os.path.exists(target):
        made = membolt.MemoryStore(target)
        entries = [e.to_dict() for e in made.entries()]
        made.close()
        membolt._core._release_all()
    return {"status": status, "output": output, "entries": entries}


def trial(path: str, keys: list[str], repair_to: str | None = None) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    errors: list[list[str]] = []
    escaped: list[list[str]] = []

    def attempt(name: str, call: Callable[[], Any]) -> None:
        try:
            answers[name] = call()
        except membolt.MemboltError as error:
            errors.append([name, type(error).__name__, str(error)])
        except BaseException as error:
            escaped.append([name, type(error).__name__, str(error)])

    store = membolt.MemoryStore(path, timeout=5)
    attempt("get", lambda: {key: entry_dict(store.get(key)) for key in keys})
    attempt("entries", lambda: [e.to_dict() for e in store.entries()])
    attempt("search", lambda: [e.to_dict() for e in store.search("value")])
    attempt("render", store.render)
    attempt("stats", lambda: command(["stats", "--db", path])[0])

    def export() -> list[dict[str, Any]] | None:
        status, text = command(["export", "--db", path])
        if status != 0:
            return None
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [line for line in lines if "key" in line]  # past the header line

    attempt("export", export)
    attempt("doctor", lambda: command(["doctor", "--db", path])[0])
    store.close()
    membolt._core._release_all()
    result = {
        "answers": answers,
        "errors": errors,
        "escaped": escaped,
        "doctor": answers.pop("doctor", None),
    }
    if repair_to is not None:
        try:
            result["repair"] = repair(path, repair_to)
        except BaseException as error:
            escaped.append(["repair", type(error).__name__, str(error)])
    return result


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as listing:
        trials = json.load(listing)
    for spec in trials:
        print(json.dumps(trial(spec["path"], spec["keys"], spec.get("repair_to"))), flush=True)


if __name__ == "__main__":
    main()
