"""Terraform against what the application expects: module shape, typed and described variables,
the outputs the app reads, IAM actions equal to what the jobs do (S3, the log store, MSK), the log
store's key schema, Kafka reachable with IAM from the job runs and Airflow only, and the names the
local-s3 bootstrap creates. `terraform fmt` and checkov run in test_terraform_tools.py."""

import json
import re
import tempfile
from pathlib import Path

import hcl2
import pytest

from eo.cloud.artifact_store import JAR_MANIFEST
from eo.cloud.outputs import (
    KAFKA_CLUSTER_ACTIONS,
    LOG_STORE_ACTIONS,
    LOG_STORE_KEYS,
    MONITOR_KAFKA_GROUP_ACTIONS,
    MONITOR_KAFKA_TOPIC_ACTIONS,
    REQUIRED_OUTPUTS,
    SPARK_KAFKA_GROUP_ACTIONS,
    SPARK_KAFKA_GROUP_PREFIX,
    SPARK_KAFKA_TOPIC_ACTIONS,
    SPARK_S3_BUCKET_ACTIONS,
    SPARK_S3_OBJECT_ACTIONS,
)
from eo.core.sources import DECLARED
from eo.runtime.config import REPO_ROOT, load_settings
from eo.runtime.kafka_admin import OFFSETS_GROUP
from infra.s3 import BUCKET_OUTPUTS, local_outputs, tfvars

pytestmark = pytest.mark.unit

TF = REPO_ROOT / "terraform"
MODULES = sorted(p for p in (TF / "modules").iterdir() if p.is_dir())
ROOT = TF / "platform"  # the one root: every environment applies it with its own tfvars and workspace
ENVIRONMENTS = sorted(p for p in (TF / "environments").iterdir() if p.is_dir())
# The modules environments/<env>/main.tf called through module "platform" before it became the root.
FORMER_PLATFORM_MODULES = {"storage", "delta_log_store", "network", "kafka", "iam", "compute", "orchestration"}


def parse(path: Path) -> dict:
    with open(path) as fh:
        return hcl2.load(fh)


def unquote(value):
    return value.strip('"') if isinstance(value, str) else [unquote(v) for v in value]


def blocks(folder: Path, kind: str) -> dict:
    found = {}
    for tf in folder.glob("*.tf"):
        for block in parse(tf).get(kind, []):
            found.update({unquote(k): v for k, v in block.items()})
    return found


def test_every_module_has_the_four_files_and_a_readme():
    assert {m.name for m in MODULES} == {
        "storage",
        "delta_log_store",
        "network",
        "kafka",
        "iam",
        "compute",
        "orchestration",
    }
    for module in MODULES:
        names = {p.name for p in module.iterdir()}
        assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md"} <= names, module.name


@pytest.mark.parametrize("folder", [*MODULES, ROOT], ids=lambda p: str(p.relative_to(TF)))
def test_every_variable_is_typed_and_described(folder):
    variables = blocks(folder, "variable")
    assert variables, folder
    for name, body in variables.items():
        assert "type" in body, f"{folder.name}.{name} has no type"
        assert unquote(body.get("description", "")).strip(), f"{folder.name}.{name} has no description"


def test_the_root_outputs_everything_the_application_reads():
    outputs = blocks(ROOT, "output")
    assert set(REQUIRED_OUTPUTS) <= set(outputs), set(REQUIRED_OUTPUTS) - set(outputs)
    for name, body in outputs.items():
        assert unquote(body.get("description", "")).strip(), f"output {name} has no description"


def test_an_environment_is_only_its_tfvars():
    """Code, variables and outputs are typed once, in the root; an environment holds what differs."""
    assert [env.name for env in ENVIRONMENTS] == ["dev", "prod"]
    for env in ENVIRONMENTS:
        assert sorted(p.name for p in env.iterdir()) == ["terraform.tfvars"], env.name


def test_every_environment_sets_each_variable_without_default_and_no_undeclared_one():
    variables = blocks(ROOT, "variable")
    required = {name for name, body in variables.items() if "default" not in body}
    assert {"environment", "region", "lake_bucket_name", "force_destroy"} <= required
    for env in ENVIRONMENTS:
        values = tfvars(env / "terraform.tfvars")
        assert required <= set(values), f"{env.name} does not set {required - set(values)}"
        assert set(values) <= set(variables), f"{env.name} sets undeclared {set(values) - set(variables)}"
        assert values["environment"] == env.name


def test_state_in_s3_with_locking_one_object_per_environment():
    backend = parse(ROOT / "versions.tf")["terraform"][0]["backend"][0]['"s3"']
    assert backend["use_lockfile"] is True and backend["encrypt"] is True
    assert "bucket" not in backend, "the state bucket is the user's (backend.hcl)"
    # Workspace <env> keeps its state at effectively-once/<env>/terraform.tfstate: the key of each
    # environment's state when it was a root of its own.
    assert unquote(backend["workspace_key_prefix"]) == "effectively-once"
    assert unquote(backend["key"]) == "terraform.tfstate"
    # An environment's tfvars plan against that environment's state only.
    conditions = [v["condition"] for v in blocks(ROOT, "variable")["environment"]["validation"]]
    assert "${var.environment == terraform.workspace}" in conditions


def test_a_state_of_the_former_environment_roots_moves_to_the_root_unchanged():
    main = parse(ROOT / "main.tf")
    modules = {unquote(k) for block in main["module"] for k in block}
    moved = {(block["from"], block["to"]) for block in main.get("moved", [])}
    assert FORMER_PLATFORM_MODULES <= modules
    assert moved == {(f"${{module.platform.module.{m}}}", f"${{module.{m}}}") for m in FORMER_PLATFORM_MODULES}
    name_prefix = unquote(main["locals"][0]["name_prefix"])
    assert name_prefix == "${var.project}-${var.environment}", "the former roots named everything eo-<env>"


def iam_locals() -> dict:
    values = parse(TF / "modules" / "iam" / "main.tf")["locals"][0].items()
    return {k: set(unquote(v)) for k, v in values if isinstance(v, list) and k != "__comments__"}


def policy_statements(role: str) -> dict[str, dict[str, str]]:
    """Sid -> the Action and Resource expressions of the statements of the role's inline policy."""
    text = (TF / "modules" / "iam" / "main.tf").read_text()
    start = text.index(f'resource "aws_iam_role_policy" "{role}"')
    body = text[start : text.index("\n}\n", start)]
    found = {}
    for sid, block in re.findall(r'Sid\s*=\s*"(\w+)"(.*?)\n\s*\},?\n', body, re.S):
        fields = dict(re.findall(r"^\s*(Action|Resource)\s*=\s*(.+)$", block, re.M))
        found[sid] = {"action": fields["Action"].strip(), "resource": fields["Resource"].strip()}
    return found


def test_spark_role_may_do_exactly_what_the_jobs_do():
    actions = iam_locals()
    assert actions["s3_object_rw"] == SPARK_S3_OBJECT_ACTIONS
    assert actions["s3_bucket_rw"] == SPARK_S3_BUCKET_ACTIONS
    assert actions["log_store"] == LOG_STORE_ACTIONS
    policy = (TF / "modules" / "iam" / "main.tf").read_text()
    spark_policy = policy[policy.index('resource "aws_iam_role_policy" "spark"') : policy.index("# --- Airflow")]
    assert '"*"' not in spark_policy.replace('"${var.lake_bucket_arn}/*"', ""), "no wildcard resources for Spark"
    assert "Action   = local.s3_object_rw" in spark_policy and "Action   = local.log_store" in spark_policy


def test_kafka_access_is_exactly_what_the_stream_and_the_lag_check_do():
    actions = iam_locals()
    assert actions["kafka_connect"] == KAFKA_CLUSTER_ACTIONS
    assert actions["spark_kafka_topic"] == SPARK_KAFKA_TOPIC_ACTIONS
    assert actions["spark_kafka_group"] == SPARK_KAFKA_GROUP_ACTIONS
    assert actions["monitor_kafka_topic"] == MONITOR_KAFKA_TOPIC_ACTIONS
    assert actions["monitor_kafka_group"] == MONITOR_KAFKA_GROUP_ACTIONS
    names = parse(TF / "modules" / "iam" / "main.tf")["locals"][0]
    assert unquote(names["spark_group_prefix"]) == SPARK_KAFKA_GROUP_PREFIX
    assert unquote(names["monitor_group"]) == OFFSETS_GROUP
    topic = "local.kafka_topic_arns"
    expected = {
        "spark": {
            "KafkaConnect": {"action": "local.kafka_connect", "resource": "[var.kafka_cluster_arn]"},
            "KafkaReadTheTopic": {"action": "local.spark_kafka_topic", "resource": topic},
            "KafkaSourceGroups": {
                "action": "local.spark_kafka_group",
                "resource": '["${var.kafka_group_arn_prefix}/${local.spark_group_prefix}*"]',
            },
            # The stream's source-loss guard reads earliest offsets with the lag check's consumer.
            "KafkaOffsetsGroup": {
                "action": "local.monitor_kafka_group",
                "resource": '["${var.kafka_group_arn_prefix}/${local.monitor_group}"]',
            },
        },
        "airflow": {
            "KafkaConnect": {"action": "local.kafka_connect", "resource": "[var.kafka_cluster_arn]"},
            "KafkaLagCheckTopic": {"action": "local.monitor_kafka_topic", "resource": topic},
            "KafkaLagCheckGroup": {
                "action": "local.monitor_kafka_group",
                "resource": '["${var.kafka_group_arn_prefix}/${local.monitor_group}"]',
            },
        },
    }
    for role, kafka in expected.items():
        statements = policy_statements(role)
        assert {sid: s for sid, s in statements.items() if sid.startswith("Kafka")} == kafka, role
        assert not any("kafka" in s["action"].lower() for sid, s in statements.items() if sid not in kafka), role
    # The topics the roles may read are the declared sources' (Terraform reads their files), and
    # the aws environment streams one of them.
    main = (TF / "platform" / "main.tf").read_text()
    assert 'fileset("${local.repo_root}/eo/core/sources", "*.schema.json")' in main
    assert 'source["x-topic"]' in main and "kafka_topics             = local.kafka_topics" in main
    assert load_settings_with_outputs("aws").topic in {source.topic for source in DECLARED.values()}


def for_each_member(rule: dict, key: str, value: str | None) -> dict:
    """One instance of a for_each rule: each.key and each.value substituted."""

    def substitute(v):
        if v == "${each.value}":
            return value
        return v.replace("${each.key}", key) if isinstance(v, str) else v

    return {k: substitute(v) for k, v in rule.items() if k not in ("for_each", "__is_block__")}


def test_airflow_may_read_the_manifests_its_job_drivers_name():
    from eo.cloud.artifacts import APPLICATION_MANIFEST

    statement = policy_statements("airflow")["ReadArtifactManifests"]
    assert statement == {
        "action": '["s3:GetObject"]',
        "resource": f'["${{var.artifacts_bucket_arn}}/{JAR_MANIFEST}", '
        f'"${{var.artifacts_bucket_arn}}/{APPLICATION_MANIFEST}"]',
    }


def rules(kind: str) -> list[dict]:
    """The network module's security group rules of one kind (ingress, egress), one per instance."""
    found = []
    for resource in parse(TF / "modules" / "network" / "main.tf")["resource"]:
        for rule in resource.get(f'"aws_vpc_security_group_{kind}_rule"', {}).values():
            found += [for_each_member(rule, k, v) for k, v in rule.get("for_each", {"": None}).items()]
    return found


def test_msk_takes_sasl_iam_from_the_job_runs_and_airflow_only():
    msk = "${aws_security_group.msk.id}"
    ingress = [r for r in rules("ingress") if r["security_group_id"] == msk]
    assert {r["referenced_security_group_id"] for r in ingress} == {
        "${aws_security_group.emr.id}",
        "${aws_security_group.airflow.id}",
    }
    for rule in ingress:
        assert (rule["from_port"], rule["to_port"], unquote(rule["ip_protocol"])) == (9098, 9098, "tcp")
        assert not {"cidr_ipv4", "cidr_ipv6", "prefix_list_id"} & set(rule), "MSK is closed to address ranges"
    assert not [r for r in rules("egress") if r["security_group_id"] == msk]
    assert not [r for r in rules("ingress") if r["security_group_id"] == "${aws_security_group.emr.id}"]
    cluster = parse(TF / "modules" / "kafka" / "main.tf")["resource"][0]['"aws_msk_serverless_cluster"']['"this"']
    assert cluster["client_authentication"][0]["sasl"][0]["iam"][0]["enabled"] is True


def test_compute_airflow_and_kafka_live_in_the_network_modules_subnets_and_groups():
    modules = {unquote(k): v for m in parse(TF / "platform" / "main.tf")["module"] for k, v in m.items()}
    assert modules["compute"]["subnet_ids"] == "${module.network.private_subnet_ids}"
    assert modules["compute"]["security_group_ids"] == ["${module.network.emr_security_group_id}"]
    assert modules["orchestration"]["subnet_ids"] == "${slice(module.network.private_subnet_ids, 0, 2)}"
    assert modules["orchestration"]["security_group_ids"] == ["${module.network.airflow_security_group_id}"]
    assert modules["kafka"]["subnet_ids"] == "${module.network.private_subnet_ids}"
    assert modules["kafka"]["security_group_ids"] == ["${module.network.msk_security_group_id}"]
    for env in ENVIRONMENTS:
        variables = tfvars(env / "terraform.tfvars")
        assert not {"subnet_ids", "security_group_ids"} & set(variables), "no placeholder network ids"
        assert len(variables["availability_zones"]) >= 2


def test_log_store_table_has_the_schema_delta_expects():
    table = parse(TF / "modules" / "delta_log_store" / "main.tf")["resource"][0]['"aws_dynamodb_table"']['"log_store"']
    assert unquote(table["hash_key"]) == LOG_STORE_KEYS["hash"]
    assert unquote(table["range_key"]) == LOG_STORE_KEYS["range"]
    assert unquote(table["ttl"][0]["attribute_name"]) == LOG_STORE_KEYS["ttl"]


def load_settings_with_outputs(env: str):
    """An environment's settings with the local-s3 bootstrap's outputs standing in for Terraform's."""
    with tempfile.TemporaryDirectory() as folder:
        outputs = Path(folder) / "outputs.json"
        outputs.write_text(json.dumps(local_outputs(tfvars())))
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("EO_TF_OUTPUTS", str(outputs))
            return load_settings(env)


def test_lifecycle_prefixes_point_at_the_quarantine_table_and_the_reports():
    storage = blocks(TF / "modules" / "storage", "variable")
    settings = load_settings_with_outputs("aws")
    lake = f"s3a://{tfvars()['lake_bucket_name']}/"
    defaults = [unquote(prefix) for prefix in storage["quarantine_prefixes"]["default"]]
    assert [settings.table_path("quarantine").removeprefix(lake) + "/"] == defaults
    platform = (TF / "platform" / "main.tf").read_text()  # each source's: lake/<source>/silver/quarantine/
    assert 'quarantine_prefixes      = [for prefix in local.source_prefixes : "lake/${prefix}silver/quarantine/"]' in (
        platform
    )
    assert 'name == "clicks" ? "" : "${name}/"' in platform  # eo/runtime/config.py source_prefix
    assert settings.reports_root.removeprefix(lake) + "/" == unquote(storage["reports_prefix"]["default"])


def test_local_s3_bootstraps_the_dev_environments_names():
    variables, outputs = tfvars(), local_outputs(tfvars())
    for output, variable in BUCKET_OUTPUTS.items():
        assert outputs[output]["value"] == variables[variable]
    assert set(REQUIRED_OUTPUTS) <= set(outputs)
    assert variables["dags_bucket_name"].startswith("airflow-")


def test_airflow_may_supervise_the_stream_job_run_and_read_its_progress():
    """stream_supervisor on MWAA lists, starts and cancels the eo-stream job run, and reads the
    checkpoint (and the seed's Delta log, for the VACUUM guard) on S3."""
    from ops.stream_service import EmrStreamService

    policy = (TF / "modules" / "iam" / "main.tf").read_text()
    airflow = policy[policy.index('resource "aws_iam_role_policy" "airflow"') :]
    for action in ("ListJobRuns", "StartJobRun", "CancelJobRun"):
        assert f'"emr-serverless:{action}"' in airflow, action
    assert EmrStreamService.NAME == "eo-stream"
    assert '"${var.checkpoint_bucket_arn}/checkpoints/*"' in airflow
    assert '"${var.lake_bucket_arn}/lake/${prefix}_stream/*"' in airflow  # each source's seed table


def test_airflow_may_watch_and_cancel_the_job_runs_it_starts():
    """Job runs are started without tags (eo/cloud/emr_serverless.py): a condition on their tags
    would deny GetJobRun and CancelJobRun. The statement names the application and its job runs."""
    import inspect

    from eo.cloud import emr_serverless

    policy = (TF / "modules" / "iam" / "main.tf").read_text()
    airflow = policy[policy.index('resource "aws_iam_role_policy" "airflow"') :]
    statement = airflow[airflow.index('"SubmitAndWatchSparkJobs"') :]
    statement = statement[: statement.index("},")]
    assert "aws:ResourceTag" not in statement and "tags=" not in inspect.getsource(emr_serverless.run)
    assert 'Resource = [var.emr_application_arn, "${var.emr_application_arn}/jobruns/*"]' in statement
    assert "emr_application_arn      = module.compute.application_arn" in (TF / "platform" / "main.tf").read_text()


def test_the_data_key_encrypts_mwaas_log_groups_too():
    """MWAA names its log groups airflow-<environment>-*: the key policy must let CloudWatch Logs use
    the key for them, or the environment fails to create its logging."""
    storage = (TF / "modules" / "storage" / "main.tf").read_text()
    policy = storage[storage.index('Sid       = "PlatformLogGroups"') :]
    assert "log-group:/${var.name_prefix}/*" in policy
    assert "log-group:airflow-${var.airflow_environment_name}-*" in policy
    root = (ROOT / "main.tf").read_text()
    assert 'airflow_environment_name = "${local.name_prefix}-airflow"' in root
    assert root.count("local.airflow_environment_name") == 3  # storage, iam and orchestration: one name


def test_airflow_may_do_what_its_dags_do_with_reports_and_metrics():
    """lake_maintenance deletes old reports and verify_agreement writes and removes markers under
    reports/ on the lake bucket; MWAA publishes Airflow's metrics as the execution role."""
    iam = (TF / "modules" / "iam" / "main.tf").read_text()
    airflow = iam[iam.index('resource "aws_iam_role_policy" "airflow"') : iam.index('resource "aws_iam_policy"')]
    reports = airflow[airflow.index('Sid      = "Reports"') :]
    reports = reports[: reports.index("\n      }")]
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert f'"{action}"' in reports, action
    assert '"${var.lake_bucket_arn}/reports/*"' in reports
    assert '"airflow:PublishMetrics"' in airflow
    assert "environment/${var.airflow_environment_name}" in airflow


def test_the_airflow_ui_is_public_behind_an_allow_list_or_private():
    variables = blocks(ROOT, "variable")
    assert unquote(variables["airflow_ui_access"]["default"]) == "private"
    assert variables["airflow_ui_allowed_cidrs"]["default"] == []
    root = (ROOT / "main.tf").read_text()
    assert 'var.airflow_ui_access == "public" ? "PUBLIC_ONLY" : "PRIVATE_ONLY"' in root
    orchestration = (TF / "modules" / "orchestration" / "main.tf").read_text()
    assert "webserver_access_mode            = var.webserver_access_mode" in orchestration
    iam = (TF / "modules" / "iam" / "main.tf").read_text()
    ui = iam[iam.index('resource "aws_iam_policy" "airflow_ui"') :]
    assert '"airflow:CreateWebLoginToken"' in ui
    assert '"aws:SourceIp" = var.airflow_ui_allowed_cidrs' in ui
    assert "airflow_ui_policy_arn" in blocks(ROOT, "output")


def test_terraform_uploads_the_dags_what_they_import_and_the_plugins():
    """`terraform apply` is the deploy of Airflow's side: every package the DAGs' tasks import (the
    ones dags/.airflowignore keeps unparsed) is uploaded by an aws_s3_object, and so are the plugins."""
    orchestration = TF / "modules" / "orchestration"
    packages = set(unquote(blocks(orchestration, "variable")["packages"]["default"]))
    ignored = {line.strip().rstrip("/") for line in (REPO_ROOT / "dags" / ".airflowignore").read_text().splitlines()}
    ignored = {name for name in ignored if name and not name.startswith("#")}
    assert ignored - {"eo_common", "conf", "platform.toml"} == packages  # eo_common lives in dags/ itself
    main = (orchestration / "main.tf").read_text()
    assert 'resource "aws_s3_object" "dag_files"' in main and "source_hash = filemd5(each.value)" in main
    assert not re.search(r"^\s*etag\s*=", main, re.M)  # SSE-KMS: S3's ETag is no MD5, every plan would differ
    assert 'fileset("${var.repo_root}/conf", "*.toml")' in main
    # The sources' declarations, which the tasks' imports read as data, go with the code.
    assert 'fileset("${var.repo_root}/${pkg}", "**/*.schema.json")' in main
    assert "eo" in packages and list((REPO_ROOT / "eo" / "core" / "sources").glob("*.schema.json"))
    assert "plugins_s3_path                  = aws_s3_object.plugins.key" in main
    # The zip is the whole plugins folder: the timetable the DAGs import from it included.
    zipped = main[main.index('data "archive_file" "plugins"') :]
    assert "source_dir  = var.plugins_folder" in zipped and 'excludes    = ["__pycache__"]' in zipped
    assert 'plugins_folder                = "${local.repo_root}/plugins"' in (ROOT / "main.tf").read_text()
    assert "from eo_timetables import" in (REPO_ROOT / "dags" / "eo_common" / "airflow_api.py").read_text()
    assert (REPO_ROOT / "plugins" / "eo_timetables.py").exists()
    assert "depends_on = [aws_s3_object.dag_files]" in main
    assert "aws s3 sync" not in (REPO_ROOT / "docs" / "cloud.md").read_text()


def test_the_outputs_the_tasks_read_are_uploaded_where_they_read_them(monkeypatch):
    """On MWAA the tasks find conf/terraform-outputs/aws.json beside the DAGs: Terraform writes it
    from the same map its outputs come from, so no one copies `terraform output` by hand."""
    from eo.runtime.tf_outputs import outputs_path

    outputs = (ROOT / "outputs.tf").read_text()
    block = outputs[outputs.index("application_outputs = {") : outputs.index("\n  }\n")]
    assert [line.split("=")[0].strip() for line in block.splitlines()[1:]] == list(REQUIRED_OUTPUTS)
    for name in REQUIRED_OUTPUTS:
        assert f"value       = local.application_outputs.{name}" in outputs, name
    root = (ROOT / "main.tf").read_text()
    upload = root[root.index('resource "aws_s3_object" "application_outputs"') :]
    assert 'key          = "dags/conf/terraform-outputs/${local.eo_env}.json"' in upload
    assert "jsonencode(local.application_outputs)" in upload
    assert re.search(r'eo_env\s+= "aws"', root) and "EO_ENV = local.eo_env" in root
    monkeypatch.delenv("EO_TF_OUTPUTS", raising=False)  # MWAA sets none: the file beside the DAGs
    assert outputs_path("aws", Path("/dags")) == Path("/dags/conf/terraform-outputs/aws.json")


def test_terraform_uploads_the_job_artifacts_and_the_outputs_the_job_runs_read():
    """`make artifacts` builds build/artifacts at the object keys the job driver names; apply runs
    `publish` over it (never an object per file: a key of an earlier build would be destroyed under
    the running stream), then uploads the manifests, and writes the outputs zip the job driver
    passes (eo/cloud/artifacts.py)."""
    from eo.cloud import artifacts
    from eo.cloud.artifact_store import MANIFESTS

    root = (ROOT / "main.tf").read_text()
    assert 'artifacts_dir = "${local.repo_root}/build/artifacts"' in root
    assert artifacts.BUILD_DIR == REPO_ROOT / "build" / "artifacts"
    listed = re.search(r"artifact_manifests = \[(.*)\]", root).group(1)
    assert set(unquote(m.strip()) for m in listed.split(",")) == set(MANIFESTS)
    assert set(MANIFESTS) == {JAR_MANIFEST, artifacts.APPLICATION_MANIFEST}
    publish = root[root.index('resource "terraform_data" "job_artifacts"') :]
    publish = publish[: publish.index("\n}\n")]
    assert "python -m eo.cloud.emr_serverless publish --bucket ${module.storage.artifacts_bucket}" in publish
    assert "filesha256(" in publish and "depends_on = [aws_s3_object.job_outputs]" in publish
    assert 'resource "aws_s3_object" "job_artifacts"' not in root and "fileset(local.artifacts_dir" not in root
    manifests = root[root.index('resource "aws_s3_object" "artifact_manifests"') :]
    assert "for_each     = toset(local.artifact_manifests)" in manifests
    assert "depends_on = [terraform_data.job_artifacts]" in manifests
    # The objects an earlier state held one resource each for are forgotten, not destroyed.
    assert re.search(r"removed \{\s+from = aws_s3_object.job_artifacts\s+lifecycle \{\s+destroy = false", root)
    outputs = root[root.index('resource "aws_s3_object" "job_outputs"') :]
    # On an object that always exists: a plan without build/artifacts fails instead of uploading nothing.
    assert 'fileexists("${local.artifacts_dir}/${key}")' in outputs
    assert (
        f'filename = "{artifacts.OUTPUTS_MEMBER}"' in root
        and "content  = jsonencode(local.application_outputs)" in root
    )
    assert re.search(rf'key\s+= "{artifacts.OUTPUTS_KEY}"', root)
    assert JAR_MANIFEST == "jars/manifest.json"


def test_superseded_job_artifacts_expire_by_the_tag_the_upload_gives_them():
    from eo.cloud.artifact_store import SUPERSEDED_TAG

    storage = (TF / "modules" / "storage" / "main.tf").read_text()
    rule = storage[storage.index('id     = "expire-superseded-artifacts"') :]
    rule = rule[: rule.index("\n  }\n")]
    name, value = SUPERSEDED_TAG
    assert f'key   = "{name}"' in rule and f'value = "{value}"' in rule
    assert "days = rule.value" in rule and "prefix" not in rule  # the tag alone: current objects never match
    assert 'each.key == "artifacts" ? [var.superseded_artifact_retention_days]' in storage
    assert blocks(TF / "modules" / "storage", "variable")["superseded_artifact_retention_days"]["default"] >= 7


def test_the_job_image_repository_is_private_immutable_scanned_and_encrypted():
    compute = (TF / "modules" / "compute" / "main.tf").read_text()
    repo = compute[compute.index('resource "aws_ecr_repository" "job_image"') :]
    assert 'image_tag_mutability = "IMMUTABLE"' in repo and "scan_on_push = true" in repo
    assert 'encryption_type = "KMS"' in repo and "kms_key         = var.kms_key_arn" in repo
    policy = compute[compute.index('resource "aws_ecr_repository_policy" "job_image"') :]
    assert 'Principal = { Service = "emr-serverless.amazonaws.com" }' in policy and '"aws:SourceAccount"' in policy
    assert 'image_uri = "${aws_ecr_repository.job_image.repository_url}:${image_configuration.value}"' in compute
    assert "job_image_repository_url" in blocks(ROOT, "output")
