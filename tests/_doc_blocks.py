"""The fenced code blocks of a Markdown page, with the heading each stands under: what
tests/test_api_reference.py checks against the code, tests/test_doc_examples.py runs and
tests/test_readme.py runs of the README.

A block whose first line is a comment starting ``# fragment:`` is a fragment: a piece of a
program (names it does not define, files it does not make), said so on the page, and not run.
"""

from __future__ import annotations

import os
import re

from tests._support import ROOT

STUB = "> **TODO-REF**"  # the line that marks a heading as a stub
FRAGMENT = "# fragment:"  # the first line of a block that is not meant to run alone

_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*$")
_EXAMPLE = re.compile(r"\*\*Example\*\*")


class Block:
    """A fenced code block: its language, first line number, lines, and whether it is an example."""

    def __init__(self, lang: str, line: int, example: bool):
        self.lang, self.line, self.example = lang, line, example
        self.lines: list[tuple[int, str]] = []

    @property
    def code(self) -> str:
        return "".join(f"{text}\n" for _n, text in self.lines)

    @property
    def fragment(self) -> bool:
        return bool(self.lines) and self.lines[0][1].startswith(FRAGMENT)


class Part:
    """A heading and the text up to the next heading of any level."""

    def __init__(self, level: int, title: str, line: int):
        self.level, self.title, self.line = level, title, line
        self.body: list[tuple[int, str]] = []
        self.blocks: list[Block] = []

    @property
    def stub(self) -> bool:
        return any(text.startswith(STUB) for _n, text in self.body)


def parts(text: str) -> list[Part]:
    """The page as headings with their own text and code blocks (``#`` inside a block is code)."""
    found = [Part(0, "", 0)]
    block = None
    last_text = ""
    for number, line in enumerate(text.splitlines(), 1):
        part = found[-1]
        if block is not None:
            if line.startswith("```"):
                block = None
            else:
                block.lines.append((number, line))
            continue
        if line.startswith("```"):
            block = Block(line[3:].strip().split(" ")[0], number, bool(_EXAMPLE.match(last_text)))
            part.blocks.append(block)
            continue
        heading = _HEADING.match(line)
        if heading:
            found.append(Part(len(heading.group(1)), heading.group(2), number))
            last_text = ""
            continue
        part.body.append((number, line))
        if line.strip():
            last_text = line.strip()
    return found


def read(*path: str) -> str:
    """A file of the repository, by its path from the root."""
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def python_blocks(text: str, heading: str | None = None) -> dict[tuple[str, int], Block]:
    """The ``python`` blocks of a page by (heading, n): the n-th such block (from 0) in the text
    under that heading (up to the next heading of any level); only those of ``heading`` if given."""
    found = {}
    for part in parts(text):
        if heading is not None and part.title != heading:
            continue
        blocks = [b for b in part.blocks if b.lang == "python"]
        found.update(((part.title, n), block) for n, block in enumerate(blocks))
    return found
