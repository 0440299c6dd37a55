"""What ``cbt import-cbt`` could not convert, or converted with a change the user must know about: one note per
finding, printed as ``file:line: what: what to do`` (paths relative to the CBT project's folder)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Note:
    path: str
    line: int
    what: str
    todo: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.todo}"


def format_report(notes: list[Note]) -> str:
    """Every note, sorted by file and line, then a count; one line per note."""
    lines = [str(note) for note in sorted(set(notes))]
    count = len(lines)
    lines.append(f"{count} thing{'s' if count != 1 else ''} to check by hand" if count else "nothing to check by hand")
    return "\n".join(lines)
