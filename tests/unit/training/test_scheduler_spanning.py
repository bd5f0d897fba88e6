"""Placing a job over several nodes (SAGEPORT_MULTI_NODE_NETWORK=overlay): only when no single
node can hold it, on the fewest nodes, and never without the setting."""

from capacity.models import Placement
from tests.unit.training.test_scheduler import finish, gpus_of, make_job, make_node
from training import scheduler


def nodes_of(job) -> dict[str, str]:
    return dict(Placement.objects.filter(job=job).order_by("host").values_list("host", "node__name"))


def test_without_the_setting_a_job_no_single_node_holds_never_fits_as_before(db, settings):
    settings.SAGEPORT_SPAN_NODES = False
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    job = make_job("ml.p3.8xlarge", count=2)  # 2 x 4 GPUs

    decision = scheduler.place(job)

    assert isinstance(decision, scheduler.NeverFits)
    assert "needs 8 NVIDIA GPUs on one node," in decision.reason
    assert not Placement.objects.filter(job=job).exists()


def test_without_the_setting_a_job_waits_for_one_node_even_when_two_hold_it_together(db, settings):
    settings.SAGEPORT_SPAN_NODES = False
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    busy_a, busy_b = make_job("ml.p3.2xlarge", count=3), make_job("ml.p3.2xlarge", count=3)
    assert scheduler.place(busy_a) == scheduler.Placed("node-a")
    assert scheduler.place(busy_b) == scheduler.Placed("node-b")
    job = make_job("ml.p3.2xlarge", count=2)  # fits on one empty node; 1 + 1 GPUs free now

    decision = scheduler.place(job)

    assert isinstance(decision, scheduler.Waiting)
    assert "on one node;" in decision.reason


def test_with_the_setting_a_job_that_fits_on_one_node_still_goes_on_one(db, settings):
    settings.SAGEPORT_SPAN_NODES = True
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=8)
    job = make_job("ml.p3.2xlarge", count=4)

    assert scheduler.place(job) == scheduler.Placed("node-a")  # packed: the fuller node that fits
    assert set(nodes_of(job).values()) == {"node-a"}


def test_with_the_setting_a_job_no_single_node_holds_spans_the_fewest_nodes(db, settings):
    settings.SAGEPORT_SPAN_NODES = True
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=8)
    make_node("node-c", gpus=4)
    job = make_job("ml.p3.8xlarge", count=3)  # 3 x 4 GPUs: b holds two, a or c the third

    decision = scheduler.place(job)

    assert decision == scheduler.Placed("node-b")  # algo-1's node runs the job's steps
    assert nodes_of(job) == {"algo-1": "node-b", "algo-2": "node-b", "algo-3": "node-a"}
    assert gpus_of(job) == {"algo-1": ("0", "1", "2", "3"), "algo-2": ("4", "5", "6", "7"),
                            "algo-3": ("0", "1", "2", "3")}
    assert scheduler.node_of(job.pk) == "node-b"


def test_with_the_setting_a_job_waits_while_all_nodes_together_lack_the_room(db, settings):
    settings.SAGEPORT_SPAN_NODES = True
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    busy = make_job("ml.p3.8xlarge")  # all of one node
    assert scheduler.place(busy) == scheduler.Placed("node-a")
    job = make_job("ml.p3.8xlarge", count=2)

    waiting = scheduler.place(job)
    assert isinstance(waiting, scheduler.Waiting)
    assert "spread over several" in waiting.reason

    finish(busy)
    assert scheduler.place(job) == scheduler.Placed("node-a")
    assert nodes_of(job) == {"algo-1": "node-a", "algo-2": "node-b"}


def test_with_the_setting_a_job_larger_than_all_nodes_together_never_fits(db, settings):
    settings.SAGEPORT_SPAN_NODES = True
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=6)  # holds one 4-GPU instance, not two
    job = make_job("ml.p3.8xlarge", count=3)

    decision = scheduler.place(job)

    assert isinstance(decision, scheduler.NeverFits)
    assert "on one node or spread over several" in decision.reason
