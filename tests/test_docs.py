"""The repository documents its own contract and licence.

- Every ``§N`` / ``§N.M`` reference in the code, tests, benchmarks, examples
  and documents names a section heading of docs/behaviour.md, so a reader can
  follow any comment to the rule it implements.
- Nothing cites a document that is not in the repository (the project's
  private working notes) or an issue number, which mean nothing to a reader
  of the repository.
- LICENSE holds the licence that pyproject.toml declares.

Plain file reads: no store is opened.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "behaviour.md"

#: Directories whose files may cite the contract (searched recursively).
CITING_TREES = ("rust", "python", "tests", "benches", "examples", "docs", ".ci")
#: Single files at the top of the repository that may cite it.
CITING_FILES = ("README.md", "pyproject.toml", "Cargo.toml")
#: Build output and tool caches: not the project's text.
SKIPPED_DIRS = frozenset(
    {
        "__pycache__",
        "target",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
        ".benchmarks",
    }
)

_NUMBER = r"\d+(?:\.\d+)*"
EN_DASH = "\u2013"
#: ``§5.4``, or a range such as ``§6.1-§6.4`` or ``§5.2.4-5`` written with an
#: en dash (spaces allowed around it) or a hyphen (directly between the
#: numbers). Lists (``§5.5/§5.6``, ``§7, §8``) are just several references.
REFERENCE = re.compile(
    rf"§\s?(?P<start>{_NUMBER})(?:(?:\s?{EN_DASH}\s?|-)§?\s?(?P<end>{_NUMBER}))?"
)
#: A section heading of the contract: ``## §5 ...``, ``### §5.4 ...``.
HEADING = re.compile(rf"^#{{1,6}}\s+§(?P<number>{_NUMBER})(?=\s|$)")

#: The upper-case name of the working notes' contract, spelled in two halves
#: so that a search of the tree for it finds only real citations; the
#: repository's own contract is docs/behaviour.md (lower case), which these
#: patterns leave alone.
OUTSIDE_CONTRACT = "BEHAV" + "IOUR"
#: Citations that point outside the repository, with what to write instead.
FORBIDDEN = (
    (re.compile(rf"\b{OUTSIDE_CONTRACT}(?:\.md)?\s*§"), "cite a section as §N.M alone"),
    (re.compile(rf"\b{OUTSIDE_CONTRACT}\b"), "the contract is docs/behaviour.md"),
    (re.compile(r"design\.md", re.IGNORECASE), "not a document of the repository"),
    (re.compile(r"seed-persistent-memory", re.IGNORECASE), "not a document of the repository"),
    (re.compile(r"\.\./shared", re.IGNORECASE), "a path outside the repository"),
    (re.compile(r"\bissue\s+#?\d+", re.IGNORECASE), "issue numbers mean nothing here"),
)


def project_texts() -> Iterator[tuple[Path, str]]:
    """(path, text) of every text file that may cite the contract. Binary
    files (a built extension module, say) are skipped."""
    paths = [ROOT / name for name in CITING_FILES]
    for tree in CITING_TREES:
        base = ROOT / tree
        if base.is_dir():
            paths.extend(
                path
                for path in sorted(base.rglob("*"))
                if path.is_file()
                and not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)
                and not path.name.endswith(".egg-info")
            )
    for path in paths:
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield path, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def parse_number(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def cited_sections(text: str) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(line number, section) for every section a text cites. A range names
    each section from its start to its end when both share everything but
    the last number (``§6.1-§6.4`` is 6.1, 6.2, 6.3, 6.4); a bare end
    replaces the last numbers of the start (``§5.2.4-5`` is 5.2.4, 5.2.5)."""
    for line_number, line in enumerate(text.splitlines(), start=1):
        for match in REFERENCE.finditer(line):
            start = parse_number(match["start"])
            yield line_number, start
            if match["end"] is None:
                continue
            end = parse_number(match["end"])
            if "§" not in match[0][1:] and len(end) < len(start):
                end = start[: len(start) - len(end)] + end
            if len(end) == len(start) and end[:-1] == start[:-1] and end[-1] > start[-1]:
                for last in range(start[-1] + 1, end[-1]):
                    yield line_number, (*start[:-1], last)
            yield line_number, end


def contract_headings() -> list[tuple[int, ...]]:
    """The section numbers of the contract's headings, in document order.
    Lines inside fenced code blocks are not headings."""
    headings = []
    in_fence = False
    for line in CONTRACT.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            headings.append(parse_number(match["number"]))
    return headings


def dotted(section: tuple[int, ...]) -> str:
    return "§" + ".".join(str(part) for part in section)


def where(path: Path, line_number: int) -> str:
    return f"{path.relative_to(ROOT)}:{line_number}"


def test_reference_parser_reads_single_sections_ranges_and_lists() -> None:
    text = f"§5, §5.4; §6.1{EN_DASH}§6.4 and §5.2.4-5, §5.5/§5.6 (§1.2.) §3 {EN_DASH} §5"
    assert [dotted(section) for _, section in cited_sections(text)] == [
        "§5",
        "§5.4",
        "§6.1",
        "§6.2",
        "§6.3",
        "§6.4",
        "§5.2.4",
        "§5.2.5",
        "§5.5",
        "§5.6",
        "§1.2",
        "§3",
        "§4",
        "§5",
    ]


def test_contract_headings_are_unique_ordered_and_nested() -> None:
    headings = contract_headings()
    assert headings, "docs/behaviour.md has no § headings"
    assert headings == sorted(set(headings)), "headings must be unique and in numeric order"
    orphans = [dotted(h) for h in headings if len(h) > 1 and h[:-1] not in headings]
    assert not orphans, f"subsections without a parent heading: {orphans}"


def test_every_section_reference_names_a_contract_heading() -> None:
    headings = set(contract_headings())
    dangling = [
        f"{where(path, line_number)}: {dotted(section)}"
        for path, text in project_texts()
        for line_number, section in cited_sections(text)
        if section not in headings
    ]
    assert not dangling, "references to sections docs/behaviour.md lacks:\n" + "\n".join(dangling)


def forbidden_citation(line: str) -> str | None:
    """The first forbidden citation on a line, with the reason, or None."""
    for pattern, reason in FORBIDDEN:
        if match := pattern.search(line):
            return f"{match[0]!r} ({reason})"
    return None


def test_nothing_cites_documents_outside_the_repository_or_issue_numbers() -> None:
    this_file = Path(__file__).resolve()
    offences = [
        f"{where(path, line_number)}: {offence}"
        for path, text in project_texts()
        # This file has to spell out what it forbids.
        if path.resolve() != this_file
        for line_number, line in enumerate(text.splitlines(), start=1)
        if (offence := forbidden_citation(line))
    ]
    assert not offences, "citations that point outside the repository:\n" + "\n".join(offences)


def test_forbidden_citations_spare_the_repositorys_own_contract() -> None:
    assert forbidden_citation("see docs/behaviour.md §5.4") is None
    assert forbidden_citation("the behaviour of §5") is None
    assert forbidden_citation(f"({OUTSIDE_CONTRACT} §5)") is not None
    assert forbidden_citation(f"see {OUTSIDE_CONTRACT}.md") is not None
    assert forbidden_citation("fixes Issue 12") is not None


def declared_license() -> str:
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    with (ROOT / "pyproject.toml").open("rb") as file:
        license_field = tomllib.load(file)["project"]["license"]
    return license_field if isinstance(license_field, str) else license_field["text"]


def test_license_file_matches_the_declared_license() -> None:
    declared = declared_license()
    assert declared == "MIT", "the LICENSE text below is the MIT licence"
    lines = (ROOT / "LICENSE").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"{declared} License"
    assert any(re.fullmatch(r"Copyright \(c\) \d{4} the membolt authors", line) for line in lines)
    text = " ".join(" ".join(lines).split())
    assert "Permission is hereby granted, free of charge, to any person" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


# ---------------------------------------------------------------------------
# File paths named in the documents and in comments exist
# ---------------------------------------------------------------------------

#: A path-like token: optional folders, then a file name with one of the
#: project's own extensions. Backticks, quotes and brackets around it are
#: not part of it.
NAMED_PATH = re.compile(
    r"(?<![\w./-])(?P<path>(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:py|pyi|rs|md|toml|sh))(?![\w/])"
)
#: Names of files outside the repository that documents may mention: the
#: peers' and tools' own files, and files a user or a run makes.
FOREIGN_NAMES = frozenset(
    {
        "settings.json",
        "settings.local.json",
        "CLAUDE.md",
        "__init__.py",
        "conftest.py",
        "setup.py",
        "lib.rs",
        "build.rs",
        "main.rs",
        "mod.rs",
        # A user's module that would shadow membolt (the installer says why).
        "membolt.py",
    }
)


#: Files of the example projects the scripted sessions work on
#: (benches/bench_resume.py and the Claude Code fixtures), named in their
#: payloads and in the README's block that shows one.
EXAMPLE_PROJECT_PATHS = frozenset({"tests/test_calc.py"})


def repository_files() -> list[str]:
    """Every file of the repository as a path relative to its root."""
    return [
        path.relative_to(ROOT).as_posix()
        for path in ROOT.rglob("*")
        if path.is_file()
        and not SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts)
        and ".git" not in path.relative_to(ROOT).parts
        and not any(part.startswith(".ci-venv") for part in path.relative_to(ROOT).parts)
    ]


def folders(files: list[str]) -> set[str]:
    """The names of every folder of the repository."""
    return {part for file in files for part in file.split("/")[:-1]}


def names_a_file(path: str, files: list[str]) -> bool:
    """Whether ``path`` names a file of the repository: some file's path
    ends with it, component by component (``redb/doctor.rs`` names
    ``rust/store/redb/doctor.rs``)."""
    return any(file == path or file.endswith("/" + path) for file in files)


def named_paths(text: str, comments_only: bool) -> Iterator[tuple[int, str]]:
    """(line number, path) of every path-like token of ``text``; in code, of
    its comments and docstrings only (string literals name files a test
    makes), approximated by lines whose first character is a comment
    marker or that lie inside a docstring."""
    in_docstring = False
    for line_number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if comments_only:
            quotes = stripped.count('"""')
            is_comment = stripped.startswith(("#", "//", "///", "//!"))
            if not (is_comment or in_docstring or quotes):
                continue
            if quotes % 2 == 1:
                in_docstring = not in_docstring
        for match in NAMED_PATH.finditer(line):
            yield line_number, match["path"]


def test_every_file_path_in_documents_and_comments_exists() -> None:
    files = repository_files()
    # A path whose first folder is none of the repository's is a user's
    # (``src/app.py`` in an example), not one of the project's files.
    own_folders = folders(files)
    missing = []
    for path, text in project_texts():
        comments_only = path.suffix in (".py", ".pyi", ".rs")
        for line_number, named in named_paths(text, comments_only):
            name = named.rsplit("/", 1)[-1]
            if name in FOREIGN_NAMES and "/" not in named:
                continue
            if "/" in named and named.split("/", 1)[0] not in own_folders:
                continue
            if named in EXAMPLE_PROJECT_PATHS:
                continue
            if named.startswith(("http", "www.")) or not names_a_file(named, files):
                missing.append(f"{where(path, line_number)}: {named}")
    assert not missing, "paths that name no file of the repository:\n" + "\n".join(missing)
