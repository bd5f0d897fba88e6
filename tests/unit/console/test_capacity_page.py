"""The console's capacity page names what holds each GPU: here a transform job's instance, whose
name links to the job's page."""
from batchtransform import placement
from capacity import single_node
from tests.unit.batchtransform.test_placement import make_job
from tests.unit.console.conftest import operator
from tests.unit.training.test_scheduler import make_node


def test_the_capacity_page_names_a_transform_instance_and_its_gpu(db):
    make_node("node-a", gpus=1)
    job = make_job("ml.g4dn.xlarge")
    assert placement.place(job) == single_node.Placed("node-a")

    page = operator().get("/console/capacity/").content.decode()

    scope = f"/console/accounts/{job.account_id}/{job.region}"  # an operator's links name the account
    name = job.transform_job_name
    assert f'href="{scope}/transform-jobs/{name}/">{name} (algo-1)' in page
