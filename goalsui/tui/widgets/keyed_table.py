"""A DataTable updated in place by stable row keys, so a refresh never moves the cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

Row = tuple[str, Sequence[Any]]

#: Past this many removals a rebuild is cheaper than DataTable's O(n) remove_row.
REBUILD_THRESHOLD = 200


class KeyedTable(DataTable[Any]):
    """``sync_rows`` shows exactly the given rows, in order; ``flex_column`` takes the
    width the others leave (no sideways scrolling)."""

    DEFAULT_CSS = "KeyedTable { height: 1fr; }"

    def __init__(self, *args: Any, flex_column: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("cursor_type", "row")
        super().__init__(*args, **kwargs)
        self.flex_column = flex_column

    def on_resize(self) -> None:
        self.fit_flex_column()

    def fit_flex_column(self) -> None:
        """Give the flex column the remaining width of the table."""
        if self.flex_column is None or self.flex_column not in self.columns or not self.size.width:
            return
        used = sum(
            column.get_render_width(self)
            for key, column in self.columns.items()
            if key.value != self.flex_column
        )
        column = self.columns[ColumnKey(self.flex_column)]
        width = max(8, self.size.width - used - 2 * self.cell_padding - 1)
        if column.auto_width or column.width != width:
            column.auto_width = False
            column.width = width
            self._require_update_dimensions = True
            self.refresh()

    @property
    def cursor_key(self) -> str | None:
        """The row key under the cursor (None when empty)."""
        try:
            row_key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:  # noqa: BLE001 - an empty or shrinking table
            return None
        return row_key.value

    def set_cell_in_place(self, row_key: str, column_key: str, value: Any) -> None:
        """Change one cell and repaint only its row (a countdown ticking): ``update_cell``
        bumps the update count that keys every render cache, so the whole table would be
        rendered again once a second. The column's width does not change."""
        key = RowKey(row_key)
        self._data[key][ColumnKey(column_key)] = value
        self._row_renderable_cache.clear()  # the cells' renderables, by update count
        self._cell_render_cache.clear()
        self._row_render_cache.clear()
        self._line_cache.clear()
        self.refresh_row(self.get_row_index(key))

    def row_keys(self) -> list[str]:
        return [row.key.value for row in self.ordered_rows if row.key.value is not None]

    def sync_rows(self, rows: Sequence[Row]) -> bool:
        """Update in place by key; returns True when anything changed."""
        wanted = [key for key, _ in rows]
        present = set(self.row_keys())
        wanted_set = set(wanted)
        cursor = self.cursor_key
        column_keys = list(self.columns)
        changed = False
        if len(present - wanted_set) > REBUILD_THRESHOLD:
            self.clear()
            present = set()
            changed = True
        for key in present - wanted_set:
            self.remove_row(key)
            changed = True
        new_rows: list[Row] = []
        for key, cells in rows:
            if key in present:
                data = self._data[RowKey(key)]
                for column_key, value in zip(column_keys, cells, strict=False):
                    if data.get(column_key) != value:
                        self.update_cell(key, column_key, value, update_width=True)
                        changed = True
            else:
                new_rows.append((key, cells))
        if new_rows:
            self._add_rows_keyed(new_rows)
            changed = True
        if self.row_keys() != wanted:
            self._reorder(wanted)
            changed = True
        if cursor is not None and cursor in wanted_set:
            index = wanted.index(cursor)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False, scroll=False)
        return changed

    def _add_rows_keyed(self, rows: list[Row]) -> None:
        """``add_row`` for many rows at once (it re-validates the cursor per row otherwise)."""
        if len(rows) < 50:
            for key, cells in rows:
                self.add_row(*cells, key=key)
            return
        from textual.widgets._data_table import Row as TableRow

        columns = self.ordered_columns
        was_empty = self.row_count == 0
        for key, cells in rows:
            row_key = RowKey(key)
            self._row_locations[row_key] = self.row_count
            self._data[row_key] = {
                column.key: cell for column, cell in zip(columns, cells, strict=False)
            }
            self.rows[row_key] = TableRow(row_key, 1, None, False)
            self._new_rows.add(row_key)
        self._require_update_dimensions = True
        self._update_count += 1
        self.cursor_coordinate = self.cursor_coordinate
        if was_empty and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()
        self.check_idle()
        self.refresh()

    def _reorder(self, wanted: list[str]) -> None:
        # The same bookkeeping DataTable.sort() does, with an explicit order.
        from textual._two_way_dict import TwoWayDict

        by_value = {key.value: key for key in self.rows}
        self._row_locations = TwoWayDict({by_value[k]: i for i, k in enumerate(wanted)})
        self._update_count += 1
        self.refresh()

    def move_to_key(self, key: str) -> bool:
        """Put the cursor on ``key``; False when absent."""
        try:
            index = self.get_row_index(key)
        except Exception:  # noqa: BLE001 - RowDoesNotExist
            return False
        self.move_cursor(row=index, animate=False)
        return True
