"""iam.denied: what of the smoke's job runs and DAG-task calls the deployed policies would refuse,
by tests/infra/test_iam_actions.py's own check (its functions, not pytest): the needs its map
gives (eo/cloud/iam_actions.py, and the boto3 calls it finds in the product's code) of the Spark
role (every job run: S3A, the lease, delta-rs, Kafka, the Delta log store) and of the Airflow
role's EMR Serverless path (eo/cloud/emr_serverless.py: start, wait, cancel, the job driver's
manifest reads in eo/cloud/artifact_store.py), against the statements of
terraform/modules/iam/main.tf. It is the map's needs, not the requests moto saw: moto here
enforces no IAM (the test does that, on its own moto)."""

from __future__ import annotations

from pathlib import Path

from eo.runtime.config import REPO_ROOT


def _in_repo(module) -> str:
    """A module's file as the map's needs name their sites (a path from the checkout)."""
    return Path(module.__file__).resolve().relative_to(REPO_ROOT).as_posix()


def check() -> dict:
    from eo.cloud import artifact_store, emr_serverless
    from eo.cloud.iam_actions import AIRFLOW, SPARK
    from tests.infra import test_iam_actions as test

    # The Airflow role's EMR Serverless path: the job runs, and the manifests their drivers name keys from.
    airflow_paths = (_in_repo(emr_serverless), _in_repo(artifact_store))
    needs = [n for n in test.all_needs() if n.role == SPARK or (n.role == AIRFLOW and n.why.startswith(airflow_paths))]
    return {
        "checked_by": _in_repo(test),
        "needs": {SPARK: sum(n.role == SPARK for n in needs), AIRFLOW: sum(n.role == AIRFLOW for n in needs)},
        "denied": test.missing(needs, test.policies()),
    }
