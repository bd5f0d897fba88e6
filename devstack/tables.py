"""Plain-text tables for the operator's commands (`sageport keys list`, `sageport nodes list`)."""


def aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """Each row's cells left-aligned in columns two spaces apart; the first row is the heading."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
