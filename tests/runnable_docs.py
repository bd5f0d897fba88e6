"""The documentation's runnable code blocks: a fenced block right after a line `<!-- runnable -->`
(an HTML comment, so invisible on the site and on GitHub) is one a user copies and runs as it is,
and tests/e2e/test_docs_snippets.py runs it against a live stack. The marker and its fence start
at the line's first column: in a list item, Python-Markdown would end the list at the comment. The
block's language says how it runs."""

import re
from dataclasses import dataclass
from pathlib import Path

from devstack.stack import PROJECT_DIR

MARKER = "<!-- runnable -->"
LANGUAGES = {"python", "sh", "bash"}  # python: the venv's interpreter; sh and bash: bash
DOCUMENTS = [PROJECT_DIR / "README.md", *sorted((PROJECT_DIR / "docs").glob("*.md"))]
# A line that is a comment naming "runnable" (or a near miss: `runable`, `run-able`) is meant as
# a marker; prose that mentions one (in backticks) is not.
_MARKER_LIKE = re.compile(r"^\s*<!--.*\brun\W?n?able\b.*-->\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^```(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # the fence's, 1-based
    language: str
    code: str

    @property
    def place(self) -> str:
        return f"{_shown(self.document)}:{self.line}"


class MalformedMarker(ValueError):
    """A marker that would not run what it marks: not followed by a fence, or in a language the
    runner does not know."""


def runnable_blocks(documents: list[Path] = DOCUMENTS) -> list[Block]:
    return [block for document in documents for block in _blocks_of(document)]


def _blocks_of(document: Path) -> list[Block]:
    lines = document.read_text().splitlines()
    blocks = []
    for index, line in enumerate(lines):
        if not _MARKER_LIKE.search(line):
            continue
        where = f"{_shown(document)}:{index + 1}"
        if line.rstrip() != MARKER:
            raise MalformedMarker(
                f"{where}: {line!r} is not the marker {MARKER!r} alone, from the first column"
            )
        blocks.append(_block_after(document, lines, index + 1, where))
    return blocks


def _block_after(document: Path, lines: list[str], start: int, where: str) -> Block:
    fence = _FENCE.match(lines[start]) if start < len(lines) else None
    if fence is None:
        raise MalformedMarker(f"{where}: the marker is not followed by a fenced block on the next line")
    language = fence["info"].strip()
    if language not in LANGUAGES:
        raise MalformedMarker(
            f"{where}: a runnable block's language is one of {sorted(LANGUAGES)}, not {language!r}"
        )
    body = []
    for line in lines[start + 1:]:
        if line.rstrip() == "```":
            return Block(document, start + 1, language, "\n".join(body) + "\n")
        body.append(line)
    raise MalformedMarker(f"{where}: the block has no closing fence")


def _shown(document: Path) -> Path:
    return document.relative_to(PROJECT_DIR) if document.is_relative_to(PROJECT_DIR) else document
