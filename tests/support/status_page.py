"""Reading the status page at `/` as a user sees it: the cells of its tables by their data-col attribute."""

from __future__ import annotations

from html.parser import HTMLParser


class Tables(HTMLParser):
    """Rows of every <table id=...> as {data-col: (text, title)}; enough to read the page as a user sees it."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[dict[str, tuple[str, str | None]]]] = {}
        # Open tables, innermost last: a table nested in a cell (who runs a version) has an id of its own.
        self._open: list[str | None] = []
        self._cell: tuple[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        table_id = attributes.get("id")
        if tag == "table":
            self._open.append(table_id)
            if table_id:
                self.tables[table_id] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append({})
        elif tag == "td" and self._table is not None and "data-col" in attributes:
            self._cell = (attributes["data-col"] or "", attributes.get("title"))
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table is not None:
            column, title = self._cell
            self.tables[self._table][-1][column] = ("".join(self._text).strip(), title)
            self._cell = None
        elif tag == "table" and self._open:
            self._open.pop()

    @property
    def _table(self) -> str | None:
        return self._open[-1] if self._open else None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)


def tables_of(page: str) -> dict[str, list[dict[str, str]]]:
    parser = Tables()
    parser.feed(page)
    return {
        table: [{column: text for column, (text, _) in row.items()} for row in rows if row]
        for table, rows in parser.tables.items()
    }


def titles_of(page: str, table: str) -> list[dict[str, str | None]]:
    parser = Tables()
    parser.feed(page)
    return [{column: title for column, (_, title) in row.items()} for row in parser.tables[table] if row]
