"""Plain-text tables for the CLI: aligned columns, no external formatting library.

Invariants: every row has as many cells as there are headers (else ``ValueError``);
cells are converted with ``str``; a column is right-aligned when its alignment letter is
``"r"`` (numbers), left-aligned otherwise; lines carry no trailing spaces.
"""


def format_table(headers, rows, align: str = "") -> str:
    """Render ``headers`` and ``rows`` as aligned text with a dashed rule under headers.

    ``align`` holds one letter per column (``"l"`` or ``"r"``); missing letters mean
    ``"l"``.
    """
    headers = [str(h) for h in headers]
    cells = []
    for index, row in enumerate(rows):
        row = [str(c) for c in row]
        if len(row) != len(headers):
            raise ValueError(f"table row {index} has {len(row)} cells, expected "
                             f"{len(headers)} (one per header {headers})")
        cells.append(row)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    align = align.ljust(len(headers), "l")

    def line(row):
        parts = [c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(row, widths, align)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule] + [line(r) for r in cells])
