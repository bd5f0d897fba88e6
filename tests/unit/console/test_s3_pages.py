"""S3 through the console, against the real store: a prefix's folders and objects, an object
downloaded whole, for the owning account only; the training job page links its artifacts here
once they exist."""
from accounts import buckets
from storage.s3 import put_bytes
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, make_job, signed_in


def test_an_account_lists_its_buckets_folders_and_objects_and_downloads_one(account_a, bucket):
    buckets.claim(bucket, ACCOUNT_A)
    put_bytes(bucket, "output/job-1/output/model.tar.gz", b"weights" * 1000)
    put_bytes(bucket, "output/job-1/output/output.tar.gz", b"out")

    root = account_a.get(f"/console/s3/{bucket}/").content.decode()
    assert f'href="/console/s3/{bucket}/output/"' in root
    listing = account_a.get(f"/console/s3/{bucket}/output/job-1/output/").content.decode()
    assert f'href="/console/s3/{bucket}/output/job-1/output/model.tar.gz"' in listing
    assert "6.8\xa0KB" in listing and "output.tar.gz" in listing

    response = account_a.get(f"/console/s3/{bucket}/output/job-1/output/model.tar.gz")
    assert response.status_code == 200 and response.streaming
    assert b"".join(response.streaming_content) == b"weights" * 1000
    assert response["Content-Length"] == "7000"
    assert response["Content-Disposition"] == 'attachment; filename="model.tar.gz"'


def test_another_accounts_bucket_and_a_missing_object_are_not_found(bucket, db):
    buckets.claim(bucket, ACCOUNT_A)
    put_bytes(bucket, "secret.bin", b"a's")
    other = signed_in(ACCOUNT_B)

    assert other.get(f"/console/s3/{bucket}/").status_code == 404
    assert other.get(f"/console/s3/{bucket}/secret.bin").status_code == 404
    owner = signed_in(ACCOUNT_A)
    assert owner.get(f"/console/s3/{bucket}/missing.bin").status_code == 404
    assert owner.get("/console/s3/sageport-no-such-bucket-4d2e/").status_code == 404


def test_a_listing_pages_through_a_long_prefix(account_a, bucket, monkeypatch):
    monkeypatch.setattr("console.views_s3.PAGE_SIZE", 2)
    buckets.claim(bucket, ACCOUNT_A)
    for index in range(3):
        put_bytes(bucket, f"many/{index}.txt", b"x")

    first = account_a.get(f"/console/s3/{bucket}/many/").content.decode()
    assert "0.txt" in first and "1.txt" in first and "2.txt" not in first
    token = first.split("?token=")[1].split('"')[0]
    second = account_a.get(f"/console/s3/{bucket}/many/?token={token}").content.decode()
    assert "2.txt" in second and "0.txt" not in second


def test_a_training_job_links_its_model_only_once_it_was_written(account_a, bucket):
    buckets.claim(bucket, ACCOUNT_A)
    job = make_job(ACCOUNT_A, "linked")
    job.request["OutputDataConfig"]["S3OutputPath"] = f"s3://{bucket}/out"
    job.training_job_status = "Failed"
    job.save()
    artifacts = f"/console/s3/{bucket}/out/linked/output/model.tar.gz"

    page = account_a.get(f"/console/training-jobs/{job.training_job_name}/").content.decode()
    assert "not written: the job ended before it saved a model" in page and artifacts not in page
    assert "No output: the job ended before its containers wrote any." in page
    assert f'href="/console/s3/{bucket}/out/linked/output/"' in page

    put_bytes(bucket, "out/linked/output/model.tar.gz", b"model")
    page = account_a.get(f"/console/training-jobs/{job.training_job_name}/").content.decode()
    assert f'href="{artifacts}"' in page
