"""The console's HyperPod pages: clusters with their instance groups and checkpoint tier, elastic
jobs with their phase and world size; another account sees none of them."""

from clusters.models import Cluster
from tests.unit.clusters.helpers import call, group
from tests.unit.console.conftest import ACCOUNT_A, ctx
from tests.unit.elastic.fakes import manifest, submit


def test_the_hyperpod_pages_show_clusters_and_elastic_jobs_to_their_account(account_a, account_b):
    call("CreateCluster", ctx(ACCOUNT_A), ClusterName="trainers", InstanceGroups=[group(count=2)],
         TieredStorageConfig={"Mode": "Enable", "InstanceMemoryAllocationPercentage": 30})
    document = manifest(name="llama", groups=[{"name": "pods", "replicas": 2, "gpus": 1}])
    job = submit(document, account_id=ACCOUNT_A)
    cluster = Cluster.objects.get(cluster_name="trainers")

    listing = account_a.get("/console/hyperpod/").content.decode()
    assert "trainers" in listing and f">{job.namespace}/llama</a>" in listing
    page = account_a.get(f"/console/hyperpod/clusters/{cluster.cluster_name}/").content.decode()
    for shown in ("workers", "ml.g5.12xlarge", "Enabled · 30% of each node", "0 / 2"):
        assert shown in page, shown
    job_page = account_a.get(f"/console/hyperpod/jobs/{job.namespace}/{job.name}/").content.decode()
    assert 'data-testid="status">Pending<' in job_page
    assert 'data-testid="world">0 of 0 wanted<' in job_page  # the operator has not sized it yet

    other = account_b.get("/console/hyperpod/").content.decode()
    assert "trainers" not in other and "llama" not in other
    assert account_b.get(f"/console/hyperpod/clusters/{cluster.cluster_name}/").status_code == 404
    assert account_b.get(f"/console/hyperpod/jobs/{job.namespace}/{job.name}/").status_code == 404
