"""Report tables too wide for the Reports pane are shown as lists, nothing else changes."""

from __future__ import annotations

from goalsui.tui.md_tables import fit_tables, table_width

TIMELINE = """## Timeline

| worker | run | trigger | planned | started | duration | status | source |
| --- | ---: | --- | --- | --- | ---: | --- | --- |
| commander | 7 | schedule | 20:00:00 | 20:00:00 | 0.4s | ok | run 7, workers/commander/outbox/20261202T190000Z-7.md |
| auditor | 10 | schedule | 02:30:00 | - | - | missed | run 10 |

## Findings
"""


def test_a_table_too_wide_becomes_one_labelled_item_per_row() -> None:
    out = fit_tables(TIMELINE, 80)
    assert out.splitlines() == [
        "## Timeline",
        "",
        "- **commander**: run 7 · trigger schedule · planned 20:00:00 · started 20:00:00"
        " · duration 0.4s · status ok · source run 7, workers/commander/outbox/20261202T190000Z-7.md",
        "- **auditor**: run 10 · trigger schedule · planned 02:30:00 · status missed"
        " · source run 10",  # the "-" cells say nothing and are left out
        "",
        "## Findings",
    ]


def test_a_table_that_fits_is_left_as_it_is() -> None:
    lines = TIMELINE.splitlines()
    header = [c.strip() for c in lines[2].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:6]]
    wide = table_width(header, rows)
    assert wide == 128  # 103 cells of text in eight columns, 3 per column, 1
    assert fit_tables(TIMELINE, wide) == TIMELINE
    assert fit_tables(TIMELINE, wide - 1) != TIMELINE


def test_tables_in_code_fences_stay_and_escaped_pipes_stay_in_their_cell() -> None:
    fenced = "```\n| a | b |\n| --- | --- |\n| 1 | 2 |\n```\n"
    assert fit_tables(fenced, 5) == fenced
    quoted_fence = "> ```\n> | a | b |\n> | --- | --- |\n> ```\n"
    assert fit_tables(quoted_fence, 5) == quoted_fence
    piped = "| cmd | note |\n| --- | --- |\n| `a \\| b` | the pipe is text |\n"
    # one cell; in a list item the pipe needs no escape
    assert fit_tables(piped, 10).splitlines()[0] == "- **`a | b`**: note the pipe is text"


def test_a_quoted_table_keeps_its_quote() -> None:
    quoted = "> ### Roster\n> | time | worker |\n> | --- | --- |\n> | 20:00 | commander |\n>\n> end"
    assert fit_tables(quoted, 10).splitlines() == [
        "> ### Roster",
        "> - **20:00**: worker commander",
        ">",
        "> end",
    ]
    assert fit_tables(quoted, 80) == quoted


def test_pipes_that_are_not_a_table_are_text() -> None:
    text = "a | b\nnot a divider | x\n\n| a | b |\nno divider below\n"
    assert fit_tables(text, 3) == text


def test_widths_are_terminal_cells_so_wide_characters_count_twice() -> None:
    assert table_width(["名前"], [["東京"]]) == 8  # 4 cells of text, 3, 1
    table = "| 名前 | 都市 |\n| --- | --- |\n| 山田 | 東京 |\n"
    assert fit_tables(table, 15) == table  # 4 + 4 cells of text, 3 per column, 1
    assert fit_tables(table, 14).startswith("- **山田**: 都市 東京")  # counted as characters: 11
