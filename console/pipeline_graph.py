"""An execution's steps drawn as the graph its definition wires: a step's column is the length of
the longest chain of steps it depends on, so every edge runs left to right, and the steps of a
column keep the definition's order. Pure Python: boxes and edges in SVG coordinates, which the
template draws."""
from dataclasses import dataclass

BOX_WIDTH, BOX_HEIGHT = 180, 44
COLUMN_GAP, ROW_GAP, MARGIN = 56, 14, 4
NAME_CHARACTERS = 24  # what fits in a box; the whole name is the box's tooltip


@dataclass(frozen=True)
class Box:
    name: str
    label: str  # the name, shortened to fit
    status: str
    x: int
    y: int


@dataclass(frozen=True)
class Edge:
    path: str  # an SVG path from the dependency's right side to the step's left side


@dataclass(frozen=True)
class Drawing:
    width: int
    height: int
    boxes: list[Box]
    edges: list[Edge]


def draw(dependencies: dict[str, frozenset[str]], statuses: dict[str, str]) -> Drawing:
    """`dependencies`: each step's, in the definition's order (acyclic, as the definition's
    parser guarantees); `statuses`: what each step's box says."""
    columns = _columns(dependencies)
    rows: dict[int, int] = {}
    boxes = {}
    for name, column in columns.items():
        row = rows.get(column, 0)
        rows[column] = row + 1
        x = MARGIN + column * (BOX_WIDTH + COLUMN_GAP)
        y = MARGIN + row * (BOX_HEIGHT + ROW_GAP)
        boxes[name] = Box(name, _shortened(name), statuses.get(name, ""), x, y)
    edges = [
        _edge(boxes[dependency], boxes[name])
        for name, needed in dependencies.items()
        for dependency in sorted(needed)
    ]
    width = MARGIN * 2 + (max(columns.values(), default=-1) + 1) * (BOX_WIDTH + COLUMN_GAP) - COLUMN_GAP
    height = MARGIN * 2 + max(rows.values(), default=0) * (BOX_HEIGHT + ROW_GAP) - ROW_GAP
    return Drawing(max(width, 0), max(height, 0), list(boxes.values()), edges)


def _columns(dependencies: dict[str, frozenset[str]]) -> dict[str, int]:
    columns: dict[str, int] = {}

    def column(name: str) -> int:
        if name not in columns:
            columns[name] = 1 + max((column(dep) for dep in dependencies[name]), default=-1)
        return columns[name]

    return {name: column(name) for name in dependencies}


def _edge(source: Box, target: Box) -> Edge:
    x1, y1 = source.x + BOX_WIDTH, source.y + BOX_HEIGHT // 2
    x2, y2 = target.x, target.y + BOX_HEIGHT // 2
    middle = (x1 + x2) // 2
    return Edge(f"M{x1} {y1} C{middle} {y1} {middle} {y2} {x2} {y2}")


def _shortened(name: str) -> str:
    return name if len(name) <= NAME_CHARACTERS else name[:NAME_CHARACTERS - 1] + "…"
