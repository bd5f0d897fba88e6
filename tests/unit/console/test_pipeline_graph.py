"""The execution page's graph: a step's column is its longest chain of dependencies, the steps of a
column keep the definition's order, and every edge joins a dependency's right side to its
dependent's left side."""
from console.pipeline_graph import BOX_HEIGHT, BOX_WIDTH, COLUMN_GAP, MARGIN, ROW_GAP, draw

STEP = BOX_WIDTH + COLUMN_GAP


def test_a_step_sits_one_column_right_of_its_deepest_dependency():
    dependencies = {
        "Process": frozenset(),
        "Train": frozenset({"Process"}),
        "Evaluate": frozenset({"Train", "Process"}),
        "Check": frozenset({"Evaluate"}),
        "Register": frozenset({"Check"}),
        "Fail": frozenset({"Check"}),
    }

    drawing = draw(dependencies, {"Process": "Succeeded", "Train": "Executing"})

    at = {box.name: (box.x, box.y) for box in drawing.boxes}
    assert at["Process"] == (MARGIN, MARGIN)
    assert at["Train"] == (MARGIN + STEP, MARGIN)
    assert at["Evaluate"] == (MARGIN + 2 * STEP, MARGIN)
    assert at["Register"] == (MARGIN + 4 * STEP, MARGIN)
    assert at["Fail"] == (MARGIN + 4 * STEP, MARGIN + BOX_HEIGHT + ROW_GAP)
    assert drawing.width == 2 * MARGIN + 5 * STEP - COLUMN_GAP
    assert drawing.height == 2 * MARGIN + 2 * BOX_HEIGHT + ROW_GAP
    assert {box.name: box.status for box in drawing.boxes}["Train"] == "Executing"
    assert {box.name: box.status for box in drawing.boxes}["Check"] == ""


def test_each_dependency_is_an_edge_from_its_right_side_to_the_steps_left_side():
    drawing = draw({"A": frozenset(), "B": frozenset(), "C": frozenset({"A", "B"})}, {})

    starts = sorted(edge.path.split(" C")[0] for edge in drawing.edges)
    middle = MARGIN + BOX_HEIGHT // 2
    right = MARGIN + BOX_WIDTH
    assert starts == [f"M{right} {middle}", f"M{right} {middle + BOX_HEIGHT + ROW_GAP}"]
    assert all(edge.path.endswith(f"{MARGIN + STEP} {middle}") for edge in drawing.edges)


def test_a_long_name_is_shortened_in_its_box_and_kept_whole_as_its_name():
    name = "PreprocessTheWholeDatasetForTraining"
    box = draw({name: frozenset()}, {}).boxes[0]

    assert box.name == name and box.label.endswith("…") and len(box.label) == 24


def test_no_step_draws_nothing():
    drawing = draw({}, {})

    assert (drawing.boxes, drawing.edges) == ([], [])
