"""IAM that is checked, not hoped: every AWS action the jobs, the DAGs and the stream service
perform (eo/cloud/iam_actions.py: the boto3 calls found here in the code, and what S3A, the Delta
log store, delta-rs, the Kafka clients and MWAA do) is granted to the role that performs it by
terraform/modules/iam/main.tf, on a matching resource; and nothing is granted that nothing needs.

The policies are parsed from the HCL (python-hcl2), their jsonencode bodies evaluated with the
module's locals; resources are compared in Terraform's terms (${var.*}) with IAM's wildcards.
Conditions are not evaluated. Unit: no server, no subprocess."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache

import hcl2
import pytest

from eo.cloud import iam_actions
from eo.cloud.iam_actions import (
    AIRFLOW,
    IAM_MODULE,
    NOT_CLIENTS,
    OPERATIONS,
    POLICIES,
    PRODUCT,
    SITES,
    SPARK,
    TOLERATED,
    TRANSFERS,
    Need,
    file_uses,
    fixed_needs,
    method_operations,
    operation_actions,
    resource,
)
from eo.core.sources import DECLARED
from eo.runtime.config import REPO_ROOT, source_prefix

pytestmark = pytest.mark.unit

SERVICES = sorted({service for service, _ in OPERATIONS})
# Where a client is made from a service named by the caller.
FACTORIES = {"eo.cloud.emr_serverless:aws_client"}
GENERIC = {"get_paginator", "get_waiter"}


# --- the policies ----------------------------------------------------------------------------


@dataclass
class Statement:
    sid: str
    actions: list[str]
    resources: list[str]


def _text(value: str) -> str:
    return value[1:-1] if value.startswith('"') and value.endswith('"') else value


@cache
def terraform() -> dict:
    with open(REPO_ROOT / IAM_MODULE) as fh:
        return hcl2.load(fh)


def locals_() -> dict:
    return {k: v for k, v in terraform()["locals"][0].items() if not k.startswith("__")}


# A list with one item per declared source: [for topic in var.kafka_topics : "<prefix>/${topic}"],
# [for prefix in var.source_prefixes : ".../${prefix}_stream/*"].
PER_SOURCE = re.compile(r'\$\{\[for (\w+) in var\.(kafka_topics|source_prefixes) : "(.*)"\]\}')


def _source_item(variable: str, name: str) -> str:
    """What terraform/platform/main.tf passes for a declared source: its topic, or its folder ("" or
    "<source>/")."""
    if variable == "kafka_topics":
        return DECLARED[name].topic
    folder = source_prefix(name).removeprefix("/")
    return f"{folder}/" if folder else ""


def render(value, names: dict):
    """A jsonencode value: quotes off, ${local.x} replaced by the local (a literal one; region and
    account stay as they are written); a list over var.kafka_topics or var.source_prefixes, one
    item per declared source (what terraform/platform/main.tf passes)."""
    per_source = PER_SOURCE.fullmatch(value) if isinstance(value, str) else None
    if per_source:
        name = "${" + per_source[1] + "}"
        return [per_source[3].replace(name, _source_item(per_source[2], s)) for s in DECLARED]
    if isinstance(value, list):
        return [item for v in value for item in (lambda r: r if isinstance(r, list) else [r])(render(v, names))]
    whole = re.fullmatch(r"\$\{local\.(\w+)\}", value)
    if whole and (isinstance(names[whole[1]], list) or names[whole[1]].startswith(('"', "${[for"))):
        return render(names[whole[1]], names)
    text = _text(value)
    for name, local in names.items():
        if isinstance(local, str) and local.startswith('"') and f"${{local.{name}}}" in text:
            text = text.replace(f"${{local.{name}}}", render(local, names))
    return text


def statements(role: str, document: dict | None = None) -> list[Statement]:
    """The Allow statements of the role's inline policy in terraform/modules/iam/main.tf."""
    kind, name = POLICIES[role].split(".")
    if document is None:
        body = next(
            b[f'"{name}"']
            for r in terraform()["resource"]
            for k, b in r.items()
            if k == f'"{kind}"' and f'"{name}"' in b
        )
        text = body["policy"]
        assert text.startswith("${jsonencode(") and text.endswith(")}"), POLICIES[role]
        document = hcl2.loads(f"policy = {text[len('${jsonencode(') : -2]}\n")["policy"]
    names = locals_()
    found = []
    for s in document["Statement"]:
        assert _text(s["Effect"]) == "Allow", s
        found.append(Statement(_text(s["Sid"]), render(s["Action"], names), render(s["Resource"], names)))
    return found


def matches(pattern: str, value: str, case: bool = True) -> bool:
    """IAM's wildcards: * any run of characters (slashes too), ? one."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, value, 0 if case else re.IGNORECASE) is not None


def grants(statement: Statement, action: str, arn: str) -> bool:
    return any(matches(a, action, case=False) for a in statement.actions) and any(
        matches(r, arn) for r in statement.resources
    )


def missing(needs: list[Need], policies: dict[str, list[Statement]]) -> list[str]:
    """A line per need no statement of its role grants, saying what to add where."""
    return [
        f"the {n.role} role may not {n.action} on {n.resource} (needed by {n.why}): "
        f"grant it in {POLICIES[n.role]} of {IAM_MODULE}"
        for n in needs
        if not any(grants(s, n.action, n.resource) for s in policies[n.role])
    ]


# --- the calls in the code ---------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    path: str
    line: int
    qualname: str  # Class.method, function, or "" at module level
    method: str
    first_arg: str | None  # a literal first argument (get_paginator's operation, a factory's service)
    versioned: bool = False  # its function names a VersionId: the *Version actions

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line} {self.qualname or '<module>'}: .{self.method}()"


@cache
def operation_names(service: str) -> dict[str, str]:
    """snake_case client method -> API operation, from botocore's model of the service."""
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(op): op for op in model.operation_names}


def client_methods() -> set[str]:
    return {m for s in SERVICES for m in operation_names(s)} | {m for _, m in TRANSFERS} | GENERIC


def _literal(node: ast.Call) -> str | None:
    arg = node.args[0] if node.args else None
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def scan(path: str, source: str) -> tuple[list[Call], list[Call], dict[str, set[str]]]:
    """Client method calls, client factories (boto3.client / session.client / boto3.resource /
    aws_client), and each function's calls of self.<method>() (for ObjectStoreFiles' closure)."""
    methods = client_methods()
    calls, factories, self_calls = [], [], {}

    def visit(node: ast.AST, qual: str, versions: bool = False) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                versioned = not isinstance(child, ast.ClassDef) and "VersionId" in ast.unparse(child)
                visit(child, f"{qual}.{child.name}" if qual else child.name, versioned)
                continue
            if isinstance(child, ast.Call):
                func = child.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
                if (
                    name in ("client", "resource") and re.search(r"boto3|[sS]ession", receiver)
                ) or name == "aws_client":
                    factories.append(Call(path, child.lineno, qual, name, _literal(child)))
                elif isinstance(func, ast.Attribute) and name in methods and (module(path), name) not in NOT_CLIENTS:
                    versioned = versions or "VersionId" in ast.unparse(child)
                    calls.append(Call(path, child.lineno, qual, name, _literal(child), versioned))
                if isinstance(func, ast.Attribute) and receiver == "self":
                    self_calls.setdefault(qual, set()).add(name)
            visit(child, qual, versions)

    visit(ast.parse(source), "")
    return calls, factories, self_calls


@cache
def product() -> tuple[list[Call], list[Call], dict[str, set[str]]]:
    calls, factories, self_calls = [], [], {}
    for root in PRODUCT:
        for file in sorted((REPO_ROOT / root).rglob("*.py")) if (REPO_ROOT / root).is_dir() else []:
            path = file.relative_to(REPO_ROOT).as_posix()
            found = scan(path, file.read_text())
            calls += found[0]
            factories += found[1]
            self_calls.update({f"{path}:{q}": m for q, m in found[2].items()})
    return calls, factories, self_calls


def module(path: str) -> str:
    """eo/cloud/s3.py -> eo.cloud.s3"""
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def site_of(call: Call) -> tuple[str, iam_actions.Site] | None:
    """The most specific SITES entry of a call: module:Qual.name, module:Qual, module."""
    parts = call.qualname.split(".") if call.qualname else []
    for n in range(len(parts), -1, -1):
        key = f"{module(call.path)}:{'.'.join(parts[:n])}" if n else module(call.path)
        if key in SITES:
            return key, SITES[key]
    return None


def operations_of(call: Call, service: str) -> tuple[str, ...]:
    """The API operations a call makes (KeyError: none of the service's methods)."""
    if call.method in GENERIC:
        return (operation_names(service)[call.first_arg],)
    return method_operations(service, call.method, lambda m: operation_names(service)[m])


def unmapped(calls: list[Call], factories: list[Call]) -> list[str]:
    """A line per call or client the map does not know."""
    problems = []
    for f in factories:
        service = f.first_arg
        if service is None and f"{module(f.path)}:{f.qualname}" not in FACTORIES:
            problems.append(f"{f.where}: a client of a service not named here: name it, or add the helper to FACTORIES")
        elif service is not None and service not in SERVICES:
            problems.append(f"{f.where}: a {service} client: add its operations to OPERATIONS and its calls to SITES")
    for call in calls:
        found = site_of(call)
        if found is None:
            problems.append(
                f"{call.where}: a boto3 call in no SITES entry of eo/cloud/iam_actions.py (who runs it, on what)"
            )
            continue
        service = found[1].service
        try:
            operations = operations_of(call, service)
        except KeyError:
            problems.append(f"{call.where}: not a {service} client method ({found[0]} says {service})")
            continue
        for op in operations:
            if (service, op) not in OPERATIONS:
                problems.append(f"{call.where}: {service} {op}: add the IAM actions it needs to OPERATIONS")
    return problems


def actions_of(call: Call, service: str, operation: str) -> frozenset[str]:
    return operation_actions(service, operation, {"VersionId": "?"} if call.versioned else None)


def call_needs(calls: list[Call], self_calls: dict[str, set[str]]) -> list[Need]:
    """What each mapped call needs, as each role that runs it, where it reaches."""
    needs: list[Need] = []
    files: dict[str, list[Call]] = {}
    for call in calls:
        _, site = site_of(call)
        if site.location is None:
            files.setdefault(call.qualname.split(".")[-1], []).append(call)
            continue
        for role in site.roles:
            for op in operations_of(call, site.service):
                for action in actions_of(call, site.service, op):
                    needs.append(Need(role, action, resource(action, site.location), call.where))
    # ObjectStoreFiles: each operation a role performs under a location, with the methods it calls.
    site = SITES["eo.cloud.s3:ObjectStoreFiles"]

    def closure(method: str, seen: frozenset = frozenset()) -> list[Call]:
        inner = self_calls.get(f"eo/cloud/s3.py:ObjectStoreFiles.{method}", set()) - seen - {method}
        return files.get(method, []) + [c for m in sorted(inner) for c in closure(m, seen | {method})]

    for role, locations in file_uses().items():
        assert role in site.roles
        for location, operations in locations.items():
            for operation in sorted(operations):
                for call in closure(operation):
                    for op in operations_of(call, site.service):
                        for action in actions_of(call, site.service, op):
                            why = f"{call.where} ({operation} under {location})"
                            needs.append(Need(role, action, resource(action, f"{location}/KEY"), why))
    return needs


def all_needs() -> list[Need]:
    calls, _, self_calls = product()
    return call_needs(calls, self_calls) + fixed_needs()


def policies() -> dict[str, list[Statement]]:
    return {role: statements(role) for role in POLICIES}


# --- the tests ---------------------------------------------------------------------------------


def test_every_boto3_call_of_the_product_is_in_the_map():
    calls, factories, _ = product()
    assert not unmapped(calls, factories), "\n".join(unmapped(calls, factories))
    # The scan sees the calls it must: the lease, the files, the job runs, the jar manifest.
    seen = {(c.path, c.method) for c in calls}
    assert {
        ("eo/cloud/dynamodb_lease.py", "update_item"),
        ("eo/cloud/s3.py", "delete_objects"),
        ("eo/cloud/emr_serverless.py", "start_job_run"),
        ("ops/stream_service.py", "cancel_job_run"),
        ("eo/cloud/artifact_store.py", "get_object"),
    } <= seen
    assert {f.first_arg for f in factories} >= {"s3", "dynamodb", "emr-serverless"}


def test_a_call_or_client_the_map_does_not_know_fails_naming_where():
    calls, factories, _ = scan(
        "eo/cloud/s3.py",
        "import boto3\nclass ObjectStoreFiles:\n    def peek(self):\n"
        "        return self.client.select_object_content(Bucket='b')\n"
        "def queue():\n    return boto3.client('sqs')\n"
        "def elsewhere(c):\n    c.get_object(Bucket='b', Key='k')\n",
    )
    problems = unmapped(calls, factories)
    assert any("eo/cloud/s3.py:6 queue: .client(): a sqs client" in p for p in problems), problems
    assert any(
        "eo/cloud/s3.py:4 ObjectStoreFiles.peek: .select_object_content()" in p and "SelectObjectContent" in p
        for p in problems
    )
    assert any("eo/cloud/s3.py:8 elsewhere: .get_object()" in p and "no SITES entry" in p for p in problems)


def test_the_past_denials_would_be_caught():
    """delete_tree once listed versions and deleted them (s3:ListBucketVersions, s3:DeleteObjectVersion:
    the Spark role has neither); the job runs' start, wait and cancel once needed tags the runs lack."""
    source = (REPO_ROOT / "eo" / "cloud" / "s3.py").read_text()
    versioned = source.replace(
        'get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):',
        'get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):',
    )
    versioned = versioned.replace(
        '[{"Key": o["Key"]} for o in page.get("Contents", [])]',
        '[{"Key": o["Key"], "VersionId": o["VersionId"]} for o in page.get("Versions", [])]',
    )
    assert versioned.count("list_object_versions") == 1 and versioned.count('o["VersionId"]') == 1
    calls, _, self_calls = scan("eo/cloud/s3.py", versioned)
    needs = call_needs(calls, {f"eo/cloud/s3.py:{q}": m for q, m in self_calls.items()})
    problems = missing(needs, policies())
    for action in ("s3:ListBucketVersions", "s3:DeleteObjectVersion"):
        assert any(p.startswith(f"the spark role may not {action} on ") and "delete_tree" in p for p in problems), (
            action
        )
    # Job runs are reached by the application's ARN, with no tag condition.
    airflow = policies()[AIRFLOW]
    run = resource("emr-serverless:CancelJobRun", SITES["eo.cloud.emr_serverless"].location)
    assert run == "${var.emr_application_arn}/jobruns/RUN"
    assert any(grants(s, "emr-serverless:CancelJobRun", run) for s in airflow)
    text = (REPO_ROOT / IAM_MODULE).read_text()
    assert "aws:ResourceTag" not in text, "job runs carry no tags: a ResourceTag condition denies them"


def test_every_need_is_granted_to_its_role_on_a_matching_resource():
    needs = all_needs()
    assert {n.role for n in needs} == {SPARK, AIRFLOW}
    problems = missing(needs, policies())
    assert not problems, "\n".join(problems)


def test_removing_any_granted_action_that_a_need_uses_fails_the_check():
    """The check cannot pass vacuously: each (statement, action) that grants a need, taken out of
    the parsed policy alone, leaves a need ungranted."""
    needs, granted = all_needs(), policies()
    mutations = 0
    for role, role_statements in granted.items():
        for i, statement in enumerate(role_statements):
            for action in statement.actions:
                used = [
                    n
                    for n in needs
                    if n.role == role
                    and grants(Statement(statement.sid, [action], statement.resources), n.action, n.resource)
                ]
                if not used:
                    continue
                fewer = [a for a in statement.actions if a != action]
                mutated = {
                    **granted,
                    role: [
                        *role_statements[:i],
                        Statement(statement.sid, fewer, statement.resources),
                        *role_statements[i + 1 :],
                    ],
                }
                assert missing(used, mutated), (
                    f"{role} {statement.sid}: without {action} nothing fails (granted twice?)"
                )
                mutations += 1
    assert mutations >= 60, mutations


def test_nothing_is_granted_that_nothing_needs():
    """Least privilege the other way: each action and each resource of a statement is used by a
    need of the map through that statement, or TOLERATED with a reason."""
    needs = all_needs()
    unused = []
    for role, role_statements in policies().items():
        mine = [n for n in needs if n.role == role]
        for s in role_statements:
            for action in s.actions:
                if any((role, action, r) in TOLERATED for r in s.resources):
                    continue
                if not any(grants(Statement(s.sid, [action], s.resources), n.action, n.resource) for n in mine):
                    unused.append(f"{role} {s.sid}: {action}")
            for arn in s.resources:
                if any((role, a, arn) in TOLERATED for a in s.actions):
                    continue
                if not any(grants(Statement(s.sid, s.actions, [arn]), n.action, n.resource) for n in mine):
                    unused.append(f"{role} {s.sid}: {arn}")
    assert not unused, "granted, needed by nothing in eo/cloud/iam_actions.py:\n" + "\n".join(unused)


def test_file_uses_name_real_operations_and_known_roots():
    """Every boto3 call of ObjectStoreFiles is reached from an operation of the Files protocol, and
    the job runs' uses name them all: a new method's calls are attributed, never skipped."""
    from eo.cloud.s3 import ObjectStoreFiles
    from eo.runtime.storage import Files

    protocol = {m for m in vars(Files) if not m.startswith("_")}
    assert iam_actions.EVERY_FILE_OPERATION == protocol
    assert [key for key, site in SITES.items() if site.location is None] == ["eo.cloud.s3:ObjectStoreFiles"]
    calls, _, self_calls = product()
    calling = {c.qualname.split(".")[-1] for c in calls if c.qualname.startswith("ObjectStoreFiles.")}
    reached, frontier = set(), set(protocol)
    while frontier:
        reached |= frontier
        frontier = {
            m for f in frontier for m in self_calls.get(f"eo/cloud/s3.py:ObjectStoreFiles.{f}", set())
        } - reached
    assert calling <= reached, calling - reached
    for role, locations in file_uses().items():
        for location, operations in locations.items():
            assert operations <= protocol and all(hasattr(ObjectStoreFiles, o) for o in operations), role
            assert location.startswith("${var."), location


def test_the_policy_parser_reads_what_main_tf_says():
    spark = {s.sid: s for s in statements(SPARK)}
    assert "s3:GetObject" in spark["TablesAndCheckpoints"].actions
    assert spark["KafkaSourceGroups"].resources == ["${var.kafka_group_arn_prefix}/spark-kafka-source-*"]
    # One ARN per declared source's topic (terraform/platform/main.tf passes them all).
    assert spark["KafkaReadTheTopic"].resources == [
        f"${{var.kafka_topic_arn_prefix}}/{source.topic}" for source in DECLARED.values()
    ]
    airflow = {s.sid: s for s in statements(AIRFLOW)}
    assert airflow["HandTheSparkRoleToJobRuns"].resources == ["${aws_iam_role.spark.arn}"]
    assert matches("kms:GenerateDataKey*", "kms:GenerateDataKey") and not matches("s3:Get*", "s3:PutObject")
    assert matches("${var.lake_bucket_arn}/lake/*/_delta_log/*", "${var.lake_bucket_arn}/lake/gold/x/_delta_log/0.json")


# --- the Spark policy enforced by moto ---------------------------------------------------------

ACCOUNT, REGION = "123456789012", "eu-west-1"
SAMPLE = {
    "var.lake_bucket_arn": "arn:aws:s3:::eo-lake",
    "var.checkpoint_bucket_arn": "arn:aws:s3:::eo-checkpoints",
    "var.artifacts_bucket_arn": "arn:aws:s3:::eo-artifacts",
    "var.dags_bucket_arn": "arn:aws:s3:::eo-dags",
    # moto asks DynamoDB actions of resource "*" (no table ARN): action-level only there.
    "var.log_store_table_arn": "*",
    "var.kms_key_arn": f"arn:aws:kms:{REGION}:{ACCOUNT}:key/eo",
    "var.kafka_cluster_arn": f"arn:aws:kafka:{REGION}:{ACCOUNT}:cluster/eo/u",
    "var.kafka_topic_arn_prefix": f"arn:aws:kafka:{REGION}:{ACCOUNT}:topic/eo/u",
    "var.kafka_group_arn_prefix": f"arn:aws:kafka:{REGION}:{ACCOUNT}:group/eo/u",
    "var.emr_application_arn": f"arn:aws:emr-serverless:{REGION}:{ACCOUNT}:/applications/eo",
    "var.airflow_environment_name": "eo",
    "aws_iam_role.spark.arn": f"arn:aws:iam::{ACCOUNT}:role/eo-spark-runtime",
    "local.region": REGION,
    "local.account": ACCOUNT,
}


def policy_document(role: str, without: str | None = None) -> str:
    """The role's policy as JSON, the Terraform references replaced by SAMPLE's values."""
    import json

    def concrete(text: str) -> str:
        return re.sub(r"\$\{([\w.]+)\}", lambda m: SAMPLE[m[1]], text)

    def resources(s: Statement) -> list[str]:
        found = {concrete(r) for r in s.resources}
        # moto authorises DeleteObjects with s3:DeleteObject on the bucket's ARN, AWS on each
        # object's (which the policy grants): the bucket is added for moto's sake.
        if "s3:DeleteObject" in s.actions:
            found |= {r.removesuffix("/*") for r in found if r.startswith("arn:aws:s3:::") and r.endswith("/*")}
        return sorted(found)

    found = [
        {"Sid": s.sid, "Effect": "Allow", "Action": [a for a in s.actions if a != without], "Resource": resources(s)}
        for s in statements(role)
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": [s for s in found if s["Action"]]})


def test_moto_acting_as_the_spark_role_allows_the_files_and_the_lease_and_denies_the_rest(tmp_path):
    """moto's IAM enforcement (moto.core.enable_iam_authentication) with the Spark role's policy
    as a user's: the jobs' files on the lake (eo/cloud/s3.py) and the lease (eo/cloud/dynamodb_lease.py)
    pass; writing the artifacts, listing versions, deleting a lease item are refused; and without
    s3:DeleteObject the files' deletes are. moto checks S3 by action and object ARN, DynamoDB by
    action only."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws
    from moto.core import enable_iam_authentication

    from eo.cloud.dynamodb_lease import DynamoLease
    from eo.cloud.outputs import LOG_STORE_KEYS
    from eo.cloud.s3 import ObjectStoreFiles

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("<html/>")
    with mock_aws():
        s3, iam = boto3.client("s3", region_name=REGION), boto3.client("iam", region_name=REGION)
        for bucket in ("eo-lake", "eo-checkpoints", "eo-artifacts"):
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        keys = (LOG_STORE_KEYS["hash"], LOG_STORE_KEYS["range"])
        boto3.client("dynamodb", region_name=REGION).create_table(
            TableName="eo-log-store",
            KeySchema=[{"AttributeName": k, "KeyType": t} for k, t in zip(keys, ("HASH", "RANGE"), strict=True)],
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in keys],
            BillingMode="PAY_PER_REQUEST",
        )

        def user(name: str, document: str) -> dict:
            iam.create_user(UserName=name)
            iam.put_user_policy(UserName=name, PolicyName="lake-access", PolicyDocument=document)
            key = iam.create_access_key(UserName=name)["AccessKey"]
            return {
                "aws_access_key_id": key["AccessKeyId"],
                "aws_secret_access_key": key["SecretAccessKey"],
                "region_name": REGION,
            }

        spark = user("spark", policy_document(SPARK))
        no_delete = user("spark-without-delete", policy_document(SPARK, without="s3:DeleteObject"))
        with enable_iam_authentication():
            client = boto3.client("s3", **spark)
            files = ObjectStoreFiles(client)
            root = "s3a://eo-lake/reports"
            files.put_tree(tmp_path / "docs", f"{root}/docs")
            files.write_text(f"{root}/verdict.json", "{}")
            assert files.read_text(f"{root}/verdict.json") == "{}" and files.exists(f"{root}/verdict.json")
            assert files.modified(f"{root}/verdict.json") > 0 and files.names(root) == ["docs", "verdict.json"]
            files.write_text("s3a://eo-checkpoints/checkpoints/stream/offsets/0", "v1")
            files.delete_file(f"{root}/verdict.json")
            files.delete_tree(f"{root}/docs")
            assert files.read_text("s3a://eo-checkpoints/checkpoints/stream/offsets/0") == "v1"

            lease = DynamoLease("eo-log-store", boto3.client("dynamodb", **spark), "s3a://eo-lake/lake")
            epoch = lease.acquire("stream", "job-run-1", ttl=60)
            assert lease.renew("stream", epoch, 60) and lease.held("stream").holder == "job-run-1"
            assert lease.release("stream", epoch) and lease.current("stream") == epoch

            with pytest.raises(ClientError, match="AccessDenied"):
                files.write_text("s3a://eo-artifacts/jars/other.jar", "not a jar")  # read-only to jobs
            with pytest.raises(ClientError, match="AccessDenied"):
                client.list_object_versions(Bucket="eo-lake", Prefix="reports/")  # no s3:ListBucketVersions
            with pytest.raises(ClientError, match="AccessDenied"):
                lease.client.delete_item(TableName="eo-log-store", Key=lease._key("stream"))  # no dynamodb:DeleteItem
            without = ObjectStoreFiles(boto3.client("s3", **no_delete))
            without.write_text(f"{root}/kept.json", "{}")
            with pytest.raises(ClientError, match="AccessDenied"):
                without.delete_file(f"{root}/kept.json")


def test_moto_acting_as_the_airflow_role_reads_progress_and_logs_writes_only_reports():
    """The Airflow role's files (FILE_USES) on moto: the checkpoint, the rebuild coverage and a table's
    Delta log are read, reports written and deleted; a checkpoint or a table's data is not written."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws
    from moto.core import enable_iam_authentication

    from eo.cloud.s3 import ObjectStoreFiles

    with mock_aws():
        admin = boto3.client("s3", region_name=REGION)
        for bucket in ("eo-lake", "eo-checkpoints"):
            admin.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": REGION})
        readable = {
            "eo-checkpoints": "checkpoints/stream/offsets/7",
            "eo-lake": "lake/_rebuild/_rebuilt/20261201T000000000000Z-all.json",
        }
        for bucket, key in readable.items():
            admin.put_object(Bucket=bucket, Key=key, Body=b"{}")
        admin.put_object(
            Bucket="eo-lake", Key="lake/gold/user_sessions/_delta_log/00000000000000000000.json", Body=b"{}"
        )
        iam = boto3.client("iam", region_name=REGION)
        iam.create_user(UserName="airflow")
        iam.put_user_policy(UserName="airflow", PolicyName="orchestrate", PolicyDocument=policy_document(AIRFLOW))
        key = iam.create_access_key(UserName="airflow")["AccessKey"]
        with enable_iam_authentication():
            keys = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
            files = ObjectStoreFiles(boto3.client("s3", region_name=REGION, **keys))
            for bucket, key_name in readable.items():
                assert (
                    files.read_text(f"s3a://{bucket}/{key_name}") == "{}"
                    and files.modified(f"s3a://{bucket}/{key_name}") > 0
                )
            assert files.names("s3a://eo-checkpoints/checkpoints/stream/offsets") == ["7"]
            assert files.read_text("s3a://eo-lake/lake/gold/user_sessions/_delta_log/00000000000000000000.json") == "{}"
            files.write_text("s3a://eo-lake/reports/verify/runs/r.json", "{}")
            files.delete_file("s3a://eo-lake/reports/verify/runs/r.json")
            for uri in (
                "s3a://eo-checkpoints/checkpoints/stream/offsets/8",
                "s3a://eo-lake/lake/gold/user_sessions/part-0.parquet",
            ):
                with pytest.raises(ClientError, match="AccessDenied"):
                    files.write_text(uri, "no")
            with pytest.raises(ClientError, match="AccessDenied"):
                files.read_text("s3a://eo-lake/lake/gold/user_sessions/part-0.parquet")
