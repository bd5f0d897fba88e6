"""Writing answers into `<object>.out`: TransformOutput.AssembleWith and input order.

API reference, TransformOutput.AssembleWith: "To concatenate the results in binary format,
specify None. To add a newline character at the end of every transformed record, specify Line."
Developer guide, "Use Batch Transform": "The predictions in an output file are listed in the same
order as the corresponding records in the input file"."""
import io

import pytest

from transform.assembly import OrderedOutput


def test_assemble_with_none_concatenates_the_answers_as_returned():
    out = io.BytesIO()
    output = OrderedOutput(out.write, "None", window=4)
    for sequence, answer in enumerate([b"\x00\x01", b"2\n", b"3"]):
        output.put(sequence, answer)
    assert out.getvalue() == b"\x00\x012\n3"


def test_assemble_with_line_ends_every_answer_with_a_newline():
    out = io.BytesIO()
    output = OrderedOutput(out.write, "Line", window=4)
    for sequence, answer in enumerate([b"0.1", b"0.9", b"0.5"]):
        output.put(sequence, answer)
    assert out.getvalue() == b"0.1\n0.9\n0.5\n"


def test_answers_arriving_out_of_order_are_written_in_input_order():
    out = io.BytesIO()
    output = OrderedOutput(out.write, "Line", window=3)
    output.put(2, b"c")
    output.put(1, b"b")
    assert out.getvalue() == b"" and output.waiting == 2
    output.put(0, b"a")
    assert out.getvalue() == b"a\nb\nc\n" and output.waiting == 0 and output.written == 3


def test_the_reorder_buffer_admits_only_a_window_beyond_the_oldest_unanswered_payload():
    output = OrderedOutput(io.BytesIO().write, None, window=2)
    assert output.admits(1) and not output.admits(2)
    output.put(1, b"b")
    with pytest.raises(ValueError, match="beyond the reorder window"):
        output.put(2, b"c")
    output.put(0, b"a")
    assert output.admits(3) and not output.admits(4)


def test_an_answer_cannot_be_written_twice():
    output = OrderedOutput(io.BytesIO().write, None, window=2)
    output.put(0, b"a")
    with pytest.raises(ValueError, match="already answered"):
        output.put(0, b"a")


def test_a_large_answer_held_in_a_file_is_copied_in_order_and_closed():
    """An answer too large for memory waits in a file (batchtransform/model_client.py); it is
    written in its place among the others, then its file is closed."""
    out = io.BytesIO()
    output = OrderedOutput(out.write, "Line", window=2)
    large = io.BytesIO(b"L" * 3_000_000)
    output.put(1, large)
    assert out.getvalue() == b"" and not large.closed
    output.put(0, b"small")
    assert out.getvalue() == b"small\n" + b"L" * 3_000_000 + b"\n"
    assert large.closed
