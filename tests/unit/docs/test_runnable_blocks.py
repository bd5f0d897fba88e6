"""The markers of runnable blocks (tests/runnable_docs.py) are well formed: each one marks a fenced
block in a language the runner knows, so a typo in a marker or a fence fails here rather than
leaving a block silently untested by tests/e2e/test_docs_snippets.py."""
import pytest

from tests.runnable_docs import MalformedMarker, runnable_blocks

BLOCK = "```python\nprint('hello')\n```\n"


def test_the_docs_mark_python_and_shell_blocks_all_well_formed():
    blocks = runnable_blocks()

    assert {block.language for block in blocks} >= {"python", "sh"}
    assert all(block.code.strip() for block in blocks)


def test_a_marked_block_is_its_code_without_the_fences(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"Mark it `<!-- runnable -->`.\n\n<!-- runnable -->\n{BLOCK}\n```sh\nnot marked\n```\n")

    [block] = runnable_blocks([page])  # prose naming the marker marks nothing

    assert (block.language, block.line, block.code) == ("python", 4, "print('hello')\n")
    assert block.place == f"{page}:4"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"<!-- runable -->\n{BLOCK}", "is not the marker"),
        (f"<!--runnable-->\n{BLOCK}", "is not the marker"),
        (f"<!-- Runnable: python -->\n{BLOCK}", "is not the marker"),
        (f"  <!-- runnable -->\n{BLOCK}", "from the first column"),
        (f"<!-- runnable -->\n\n{BLOCK}", "not followed by a fenced block"),
        ("<!-- runnable -->\n```pyhton\nprint(1)\n```\n", "not 'pyhton'"),
        ("<!-- runnable -->\n```\nprint(1)\n```\n", "not ''"),
        ("<!-- runnable -->\n```python\nprint(1)\n", "no closing fence"),
    ],
    ids=["typo", "spacing", "options", "indented", "gap", "language-typo", "no-language", "unclosed"],
)
def test_a_malformed_marker_names_its_place_and_its_fault(tmp_path, text, problem):
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\n{text}")

    with pytest.raises(MalformedMarker, match=problem) as raised:
        runnable_blocks([page])

    assert f"{page}:3" in str(raised.value)
