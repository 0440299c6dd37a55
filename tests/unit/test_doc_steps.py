"""The reader of the tutorial's steps (tests/e2e/doc_steps.py): what it runs, and what output it accepts."""

from __future__ import annotations

import pytest

from tests.e2e.doc_steps import Command, File, matches, steps

PAGE = """\
# A page

<!-- test: stack-is-up -->
```console
$ cbt dev up
```

```console
$ cbt init shop
wrote shop/config.yaml
...
$ cd shop
```

Prose between blocks.

<!-- test: file models/a.sql -->
```sql
SELECT 1
```

```sql
SELECT 'not a step'
```

<!-- test: background -->
```console
$ cbt run all
```

<!-- test: until-match -->
```console
$ cbt status
covered ... 60
```
"""


def test_a_page_reads_as_its_commands_and_files_in_order() -> None:
    assert steps(PAGE) == [
        Command(5, "cbt dev up", (), "stack-is-up"),
        Command(9, "cbt init shop", ("wrote shop/config.yaml", "..."), "run"),
        Command(12, "cd shop", (), "run"),
        File(18, "models/a.sql", "SELECT 1\n"),
        Command(28, "cbt run all", (), "background"),
        Command(33, "cbt status", ("covered ... 60",), "until-match"),
    ]


def test_a_directive_applies_only_to_the_block_right_below_it() -> None:
    page = "<!-- test: background -->\n\nSome prose.\n\n```console\n$ cbt status\n```\n"
    assert [s.mode for s in steps(page) if isinstance(s, Command)] == ["run"]


@pytest.mark.parametrize("page", ["```console\n$ x\n", "```console\noutput first\n```\n",
                                  "<!-- test: sometimes -->\n```console\n$ x\n```\n"])
def test_a_malformed_page_is_refused(page: str) -> None:
    with pytest.raises(ValueError):
        steps(page)


@pytest.mark.parametrize(("expected", "actual", "ok"), [
    (("a", "b"), "a\nb\n", True),
    (("a", "b"), "a\nc\n", False),
    (("a",), "a\nb\n", False),
    (("a", "..."), "a\nb\nc\n", True),
    (("...", "c"), "a\nb\nc\n", True),
    (("...", "c"), "a\nb\n", False),
    (("covered ... 60",), "covered [1, 2) 60  ", True),
    (("covered ... 60",), "covered [1, 2) 59", False),
    ((), "", True),
    ((), "something\n", False),
    (("x", ""), "x\n", True),
    (("MODEL   RANGE", "a.b     [1, 2)"), "MODEL        RANGE\nlonger.b     [1, 2)\n", False),
    (("MODEL   RANGE", "a.b     [1, 2)"), "MODEL   RANGE\na.b          [1, 2)\n", True),
    (("a b",), "ab", False),
])
def test_output_matches_what_the_page_shows_with_ellipses_for_what_varies(
        expected: tuple[str, ...], actual: str, ok: bool) -> None:
    assert matches(expected, actual) is ok
