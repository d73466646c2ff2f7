"""Checks every AWS call a function makes locally the way AWS would, before it reaches LocalStack.

LocalStack (community) enforces neither IAM nor VPC networking, so a function that works
locally may be refused or hang once deployed. Installed by ``bootstrap.py`` before the
handler is imported, this module patches ``botocore.client.BaseClient._make_api_call`` (every
client of every session) and, per call:

- IAM: maps the operation to the IAM action(s) and resource ARN(s) AWS checks and evaluates
  the function's role policies as deployed (inline and customer-managed; an AWS-managed
  policy LocalStack does not know grants nothing), plus the bucket policy for S3 calls.
  A refusal raises the ``ClientError`` AWS raises (S3 ``AccessDenied`` 403, others
  ``AccessDeniedException``).
- Network: a function with a ``VpcConfig`` reaches a service in a region only through an
  endpoint of its VPC for that service in that region (gateway endpoints only from subnets
  whose route tables they serve), or a ``0.0.0.0/0`` route to a NAT gateway. Anything else
  fails fast with ``VpcUnreachable`` (a ``ConnectTimeoutError``; on AWS it hangs until the
  timeout).
- Limits: Step Functions input over 256 KiB, Lambda request payloads over 6 MB.

Modes per kind (``iam``, ``network``, ``limits``): ``on`` refuses, ``report`` only records,
``off`` skips. ``HYCLOUD_LOCAL_ENFORCE`` (``on``/``report``/``off`` or
``iam=on,network=report``) in the function's environment wins, then
``<state>/guard/settings.json`` written by ``localcloud.py``, then ``DEFAULT``.
Every refusal is one line of ``<state>/guard/refused.jsonl``; per-process counts go to
``<state>/guard/counts-<function>-<pid>.json`` at the end of each invocation.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

try:
    from . import iam_policy
except ImportError:  # loaded by bootstrap.py from its file, under a private name
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "_hycloud_local_iam_policy", Path(__file__).with_name("iam_policy.py")
    )
    iam_policy = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
    sys.modules["_hycloud_local_iam_policy"] = iam_policy
    _spec.loader.exec_module(iam_policy)  # type: ignore[union-attr]

KINDS = ("iam", "network", "limits")
DEFAULT = "iam=on,network=on,limits=on"
REACH_MARKER = "_hycloud_reach"  # hycloud_core.reach.MARKER: a client the reach function carries
SFN_INPUT_LIMIT = 256 * 1024
LAMBDA_SYNC_PAYLOAD_LIMIT = 6 * 1024 * 1024
FREE = {("sts", "GetCallerIdentity")}
_local = threading.local()


def parse_modes(text: str) -> dict[str, str]:
    """``on`` / ``iam=on,network=report`` -> a mode per kind; unknown words read as ``on``."""
    modes = dict.fromkeys(KINDS, "on")
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        kind, _, mode = part.rpartition("=")
        mode = mode.lower() if mode.lower() in ("on", "off", "report") else "on"
        for k in [kind] if kind in KINDS else KINDS if not kind else []:
            modes[k] = mode
    return modes


def settings_text(state_dir: str | None) -> str:
    if os.environ.get("HYCLOUD_LOCAL_ENFORCE"):
        return os.environ["HYCLOUD_LOCAL_ENFORCE"]
    if state_dir:
        try:
            return json.loads((Path(state_dir) / "guard" / "settings.json").read_text())["enforce"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return DEFAULT


# ---------------------------------------------------------------- facts


class Facts:
    """What AWS would know about the function: its role's policies and its VPC's ways out."""

    def __init__(self, function: str, region: str, role_arn: str, policies: list[dict], notes: list[str]):
        self.function = function
        self.region = region
        self.role_arn = role_arn
        self.account = role_arn.split(":")[4] if role_arn.count(":") >= 5 else "000000000000"
        self.role_name = role_arn.rsplit("/", 1)[-1]
        self.policies = policies
        self.notes = notes
        self.vpc_id = ""
        self.vpc_region = region
        self.endpoints: set[str] = set()  # "<region>.<service>" reachable through an endpoint
        self.nat = False

    def to_dict(self) -> dict:
        return {
            **{k: v for k, v in vars(self).items() if k != "endpoints"},
            "endpoints": sorted(self.endpoints),
        }

    @classmethod
    def from_dict(cls, data: dict) -> Facts:
        facts = cls(data["function"], data["region"], data["role_arn"], data["policies"], data["notes"])
        facts.vpc_id, facts.vpc_region, facts.nat = data["vpc_id"], data["vpc_region"], data["nat"]
        facts.endpoints = set(data["endpoints"])
        return facts

    @property
    def caller(self) -> str:
        return f"arn:aws:sts::{self.account}:assumed-role/{self.role_name}/{self.function}"

    def reaches(self, service: str, region: str) -> bool:
        return not self.vpc_id or self.nat or f"{region}.{service}" in self.endpoints


def _policy_document(value: Any) -> dict:
    if isinstance(value, str):
        from urllib.parse import unquote

        value = json.loads(unquote(value))
    return value if isinstance(value, dict) else {}


def load_facts(session, function: str, region: str) -> Facts:
    """From the local cloud, as deployed: function configuration, role policies, VPC routes."""
    lam = session.create_client("lambda", region_name=region)
    config = lam.get_function_configuration(FunctionName=function)
    iam = session.create_client("iam", region_name=region)
    role = config["Role"].rsplit("/", 1)[-1]
    policies, notes = [], []
    for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        policies.append(
            _policy_document(iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"])
        )
    for attached in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]:
        arn = attached["PolicyArn"]
        try:
            version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
            doc = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
            policies.append(_policy_document(doc))
        except Exception:  # an AWS-managed policy LocalStack does not hold: it grants nothing here
            notes.append(f"managed policy {arn} unknown to the local cloud: taken as granting nothing")
    facts = Facts(function, region, config["Role"], policies, notes)
    vpc = config.get("VpcConfig") or {}
    if vpc.get("VpcId") and vpc.get("SubnetIds"):
        _load_network(session.create_client("ec2", region_name=region), facts, vpc)
    return facts


def _load_network(ec2, facts: Facts, vpc: dict) -> None:
    facts.vpc_id = vpc["VpcId"]
    subnets = set(vpc["SubnetIds"])
    tables = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": sorted(subnets)}])
    table_ids = {t["RouteTableId"] for t in tables["RouteTables"]}
    facts.nat = any(
        r.get("DestinationCidrBlock") == "0.0.0.0/0" and r.get("NatGatewayId")
        for t in tables["RouteTables"]
        for r in t.get("Routes", [])
    )
    found = ec2.describe_vpc_endpoints(Filters=[{"Name": "vpc-id", "Values": [facts.vpc_id]}])
    for endpoint in found["VpcEndpoints"]:
        if endpoint.get("State", "available").lower() not in ("available", "pending"):
            continue
        parts = endpoint["ServiceName"].split(".")  # com.amazonaws.<region>.<service>
        if len(parts) < 4:
            continue
        if endpoint.get("VpcEndpointType") == "Gateway" and not table_ids & set(
            endpoint.get("RouteTableIds", [])
        ):
            continue  # a gateway endpoint serves only the route tables it is attached to
        facts.endpoints.add(f"{parts[2]}.{'.'.join(parts[3:])}")


# ---------------------------------------------------------------- operations -> IAM


def s3_object(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def s3_bucket(bucket: str) -> str:
    return f"arn:aws:s3:::{bucket}"


def _copy_source(value: Any) -> tuple[str, str]:
    if isinstance(value, dict):
        return value.get("Bucket", ""), value.get("Key", "")
    from urllib.parse import unquote

    bucket, _, key = unquote(str(value)).lstrip("/").partition("/")
    return bucket, key.split("?versionId=")[0]


S3_OBJECT = {
    "GetObject": "s3:GetObject",
    "HeadObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "CreateMultipartUpload": "s3:PutObject",
    "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject",
    "AbortMultipartUpload": "s3:AbortMultipartUpload",
    "ListParts": "s3:ListMultipartUploadParts",
    "DeleteObject": "s3:DeleteObject",
    "GetObjectTagging": "s3:GetObjectTagging",
    "PutObjectTagging": "s3:PutObjectTagging",
    "GetObjectAttributes": "s3:GetObjectAttributes",
    "RestoreObject": "s3:RestoreObject",
}
S3_BUCKET = {
    "ListObjects": "s3:ListBucket",
    "ListObjectsV2": "s3:ListBucket",
    "HeadBucket": "s3:ListBucket",
    "ListObjectVersions": "s3:ListBucketVersions",
    "ListMultipartUploads": "s3:ListBucketMultipartUploads",
}
DDB_TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
MAPPED = {"s3", "dynamodb", "states", "lambda", "sts"}


def _s3(op: str, p: dict) -> list[tuple[str, str]]:
    bucket = p.get("Bucket", "")
    if op in ("CopyObject", "UploadPartCopy"):
        src_bucket, src_key = _copy_source(p.get("CopySource"))
        return [
            ("s3:PutObject", s3_object(bucket, p.get("Key", ""))),
            ("s3:GetObject", s3_object(src_bucket, src_key)),
        ]
    if op == "DeleteObjects":
        keys = [o.get("Key", "") for o in (p.get("Delete") or {}).get("Objects", [])]
        return [("s3:DeleteObject", s3_object(bucket, k)) for k in keys]
    if op in S3_OBJECT:
        return [(S3_OBJECT[op], s3_object(bucket, p.get("Key", "")))]
    if op in S3_BUCKET:
        return [(S3_BUCKET[op], s3_bucket(bucket))]
    if op == "ListBuckets":
        return [("s3:ListAllMyBuckets", "*")]
    if "Key" in p:
        return [(f"s3:{op}", s3_object(bucket, p["Key"]))]
    return [(f"s3:{op}", s3_bucket(bucket) if bucket else "*")]


def _table(name: str, region: str, account: str) -> str:
    return name if name.startswith("arn:") else f"arn:aws:dynamodb:{region}:{account}:table/{name}"


def _dynamodb(op: str, p: dict, region: str, account: str) -> list[tuple[str, str]]:
    if op == "TransactWriteItems":
        out = []
        for item in p.get("TransactItems", []):
            for kind, body in item.items():
                out.append(
                    (
                        f"dynamodb:{DDB_TRANSACT.get(kind, kind)}",
                        _table(body.get("TableName", ""), region, account),
                    )
                )
        return out
    if op == "TransactGetItems":
        return [
            ("dynamodb:GetItem", _table(i["Get"].get("TableName", ""), region, account))
            for i in p.get("TransactItems", [])
            if "Get" in i
        ]
    if op in ("BatchWriteItem", "BatchGetItem"):
        return [(f"dynamodb:{op}", _table(t, region, account)) for t in (p.get("RequestItems") or {})]
    if "TableName" in p:
        arn = _table(p["TableName"], region, account)
        if op in ("Query", "Scan") and p.get("IndexName"):
            arn += f"/index/{p['IndexName']}"
        return [(f"dynamodb:{op}", arn)]
    return [(f"dynamodb:{op}", "*")]


def lambda_function_arn(name: str, qualifier: str | None, region: str, account: str) -> str:
    """A bare name, ``name:qualifier``, ``account:function:name`` or a full ARN, as Lambda resolves it."""
    if name.startswith("arn:"):
        arn = name
    elif ":function:" in name:
        arn = f"arn:aws:lambda:{region}:{name}"
    elif ":" in name:
        base, _, qual = name.partition(":")
        arn = f"arn:aws:lambda:{region}:{account}:function:{base}:{qual}"
    else:
        arn = f"arn:aws:lambda:{region}:{account}:function:{name}"
    return f"{arn}:{qualifier}" if qualifier and arn.count(":") == 6 else arn


def iam_checks(
    service: str, op: str, params: dict, region: str, account: str
) -> tuple[list[tuple[str, str]], bool]:
    """(action, resource ARN) pairs AWS checks for this call, and whether the call is mapped."""
    if (service, op) in FREE:
        return [], True
    if service == "s3":
        return _s3(op, params), op in S3_OBJECT or op in S3_BUCKET or op in (
            "CopyObject",
            "UploadPartCopy",
            "DeleteObjects",
            "ListBuckets",
        )
    if service == "dynamodb":
        return _dynamodb(op, params, region, account), True
    if service == "states":
        arn = params.get("executionArn") or params.get("stateMachineArn") or "*"
        return [(f"states:{op}", arn)], True
    if service == "lambda":
        action = (
            "lambda:InvokeFunction"
            if op in ("Invoke", "InvokeAsync", "InvokeWithResponseStream")
            else f"lambda:{op}"
        )
        if "FunctionName" in params:
            return [
                (
                    action,
                    lambda_function_arn(params["FunctionName"], params.get("Qualifier"), region, account),
                )
            ], True
        return [(action, "*")], True
    return [(f"{service}:{op}", "*")], False


# ---------------------------------------------------------------- the guard


class VpcUnreachableMixin:
    fmt = 'Connect timeout on endpoint URL: "{endpoint_url}" ({reason})'


class Guard:
    def __init__(self, facts: Facts | None, modes: dict[str, str], state_dir: str, session, load_ms: float):
        self.facts = facts
        self.modes = modes
        self.session = session
        self.dir = Path(state_dir) / "guard"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.counts: dict[str, Any] = {
            "checked": 0,
            "refused": 0,
            "reported": 0,
            "load_ms": round(load_ms, 1),
        }
        self.unmapped: set[tuple[str, str]] = set()
        self.bucket_policies: dict[str, dict | None] = {}
        self.bucket_regions: dict[str, str] = {}
        self.clients: dict[tuple[str, str], Any] = {}
        self.function = facts.function if facts else os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")

    # side lookups (unguarded)

    def _client(self, service: str, region: str):
        key = (service, region)
        if key not in self.clients:
            self.clients[key] = self.session.create_client(service, region_name=region)
        return self.clients[key]

    def _bucket_policy(self, bucket: str, region: str) -> dict | None:
        if bucket not in self.bucket_policies:
            policy = None
            try:
                got = self._client("s3", region).get_bucket_policy(Bucket=bucket)
                policy = _policy_document(got["Policy"])
            except Exception:  # NoSuchBucketPolicy, NoSuchBucket: nothing to add
                policy = None
            self.bucket_policies[bucket] = policy
        return self.bucket_policies[bucket]

    def _bucket_region(self, bucket: str, region: str) -> str:
        if bucket not in self.bucket_regions:
            try:
                got = self._client("s3", region).get_bucket_location(Bucket=bucket)
                self.bucket_regions[bucket] = got.get("LocationConstraint") or "us-east-1"
            except Exception:
                self.bucket_regions[bucket] = region
        return self.bucket_regions[bucket]

    # checks

    def check(self, client, op: str, params: dict) -> None:
        facts = self.facts
        model = client.meta.service_model
        service = model.endpoint_prefix
        region = client.meta.region_name or (facts.region if facts else "")
        with self.lock:
            self.counts["checked"] += 1
        if facts is None:
            return
        _local.inside = True
        try:
            if self.modes["limits"] != "off":
                self._limits(client, service, op, params, region)
            if self.modes["network"] != "off" and facts.vpc_id:
                self._network(client, service, op, params, region)
            if self.modes["iam"] != "off":
                self._iam(service, op, params, region)
        finally:
            _local.inside = False

    def _limits(self, client, service: str, op: str, params: dict, region: str) -> None:
        from botocore.exceptions import ClientError

        if service == "states" and op in ("StartExecution", "StartSyncExecution"):
            size = len(str(params.get("input") or "").encode())
            if size > SFN_INPUT_LIMIT:
                message = (
                    f"The provided input is too large: {size} bytes, the limit is {SFN_INPUT_LIMIT} bytes"
                )
                self._refuse("limits", service, op, region, {"bytes": size}, ClientError(
                    {"Error": {"Code": "InvalidExecutionInput", "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 400}}, op))  # fmt: skip
        if (
            service == "lambda"
            and op == "Invoke"
            and params.get("InvocationType", "RequestResponse") != "Event"
        ):
            payload = params.get("Payload") or b""
            size = len(
                payload.encode()
                if isinstance(payload, str)
                else payload
                if isinstance(payload, (bytes, bytearray))
                else b""
            )
            if size > LAMBDA_SYNC_PAYLOAD_LIMIT:
                message = f"{size} byte payload is too large for the RequestResponse invocation type (limit {LAMBDA_SYNC_PAYLOAD_LIMIT} bytes)"
                self._refuse("limits", service, op, region, {"bytes": size}, ClientError(
                    {"Error": {"Code": "RequestEntityTooLargeException", "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 413}}, op))  # fmt: skip

    def _network(self, client, service: str, op: str, params: dict, region: str) -> None:
        facts = self.facts
        if getattr(client, REACH_MARKER, None):
            return  # carried by the reach function: it leaves the VPC as a Lambda Invoke, checked as one
        target = region
        if service == "s3" and params.get("Bucket") and (service, op) not in (("s3", "ListBuckets"),):
            target = self._bucket_region(params["Bucket"], region)
        if service == "s3" and op in ("CopyObject", "UploadPartCopy") and facts.reaches(service, target):
            # VPC endpoints do not carry cross-region requests, copies included (S3 CopyObject docs)
            source = self._bucket_region(_copy_source(params.get("CopySource"))[0], region)
            target = target if source == target else source
        if facts.reaches(service, target):
            return
        reason = (
            f"local cloud: function {facts.function} runs in {facts.vpc_id} ({facts.vpc_region}), which has no "
            f"endpoint for {service} in {target} and no NAT route; on AWS this call hangs until it times out"
        )
        error = make_unreachable(client.meta.endpoint_url, reason)
        self._refuse("network", service, op, target, {"endpoint": f"com.amazonaws.{target}.{service}"}, error)

    def missing_object(self, client, op: str, params: dict, error: Exception) -> None:
        """AWS answers a missing key with 403, not 404, to a caller without ``s3:ListBucket``."""
        facts = self.facts
        status = getattr(error, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
        if (
            facts is None
            or self.modes["iam"] == "off"
            or op not in ("GetObject", "HeadObject")
            or status != 404
        ):
            return
        if client.meta.service_model.endpoint_prefix != "s3":
            return
        region = client.meta.region_name or facts.region
        _local.inside = True
        try:
            self._iam("s3", "ListObjectsV2", {"Bucket": params.get("Bucket", "")}, region, op)
        finally:
            _local.inside = False

    def _iam(self, service: str, op: str, params: dict, region: str, reported_op: str = "") -> None:
        facts = self.facts
        checks, mapped = iam_checks(service, op, params, region, facts.account)
        if not mapped and (service, op) not in self.unmapped:
            self.unmapped.add((service, op))
            self._log("unmapped.jsonl", {"function": facts.function, "service": service, "operation": op})
        context = {
            "aws:SecureTransport": True,
            "aws:ResourceAccount": facts.account,
            "aws:PrincipalAccount": facts.account,
            "aws:PrincipalArn": facts.role_arn,
            "aws:RequestedRegion": region,
        }
        for action, resource in checks:
            resource_policies = []
            if service == "s3" and resource.startswith("arn:aws:s3:::"):
                bucket = resource[len("arn:aws:s3:::") :].split("/", 1)[0]
                policy = self._bucket_policy(bucket, region)
                resource_policies = [policy] if policy else []
            request = iam_policy.Request(action, resource, context, principal=facts.role_arn)
            decision = iam_policy.evaluate(request, facts.policies, resource_policies)
            if decision.allowed:
                continue
            why = (
                "with an explicit deny in a "
                + ("resource-based" if decision.statement in _all(resource_policies) else "identity-based")
                + " policy"
                if decision.result == iam_policy.DENY
                else f"because no identity-based policy allows the {action} action"
            )
            message = (
                f"User: {facts.caller} is not authorized to perform: {action} on resource: {resource} {why}"
            )
            self._refuse(
                "iam",
                service,
                reported_op or op,
                region,
                {"action": action, "resource": resource},
                access_denied(service, reported_op or op, message),
            )

    def _refuse(self, kind: str, service: str, op: str, region: str, detail: dict, error: Exception) -> None:
        enforced = self.modes[kind] == "on"
        with self.lock:
            self.counts["refused" if enforced else "reported"] += 1
            key = f"{kind}:{service}"
            self.counts.setdefault("by_kind", {}).setdefault(key, 0)
            self.counts["by_kind"][key] += 1
        self._log("refused.jsonl", {
            "time": round(time.time(), 3), "function": self.function, "pid": os.getpid(), "kind": kind,
            "enforced": enforced, "service": service, "operation": op, "region": region, **detail,
            "error": str(error),
        })  # fmt: skip
        if enforced:
            raise error

    def _log(self, name: str, record: dict) -> None:
        line = (json.dumps(record) + "\n").encode()
        try:
            fd = os.open(self.dir / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError:
            pass

    def flush(self) -> None:
        """Counts of this process, rewritten whole (small) at each invocation's end."""
        with self.lock:
            record = {"function": self.function, "pid": os.getpid(), "modes": self.modes, **self.counts}
            record["notes"] = (
                self.facts.notes if self.facts else ["function facts not loaded: nothing checked"]
            )
        path = self.dir / f"counts-{self.function}-{os.getpid()}.json"
        try:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(record))
            tmp.replace(path)
        except OSError:
            pass


def _all(docs: list) -> list:
    return [s for d in docs for s in iam_policy.statements(d)]


def access_denied(service: str, op: str, message: str) -> Exception:
    from botocore.exceptions import ClientError

    if service == "s3" and op == "HeadObject":  # a HEAD response has no body: botocore sees the status only
        error = {
            "Error": {"Code": "403", "Message": "Forbidden"},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }
    elif service == "s3":
        error = {
            "Error": {"Code": "AccessDenied", "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 403},
        }
    else:
        error = {
            "Error": {"Code": "AccessDeniedException", "Message": message},
            "ResponseMetadata": {"HTTPStatusCode": 400},
        }
    return ClientError(error, op)


def make_unreachable(endpoint_url: str, reason: str) -> Exception:
    from botocore.exceptions import ConnectTimeoutError, EndpointConnectionError

    class VpcUnreachable(VpcUnreachableMixin, ConnectTimeoutError, EndpointConnectionError):
        """A call the function's VPC has no route for (no endpoint in that region, no NAT)."""

    return VpcUnreachable(endpoint_url=endpoint_url, reason=reason)


GUARD: Guard | None = None


def facts_key(state_dir: str, function: str) -> str:
    """Changes with the function's code or layers (new folders) and with every deploy (outputs.json)."""
    import hashlib

    try:
        deployed = str((Path(state_dir) / "outputs.json").stat().st_mtime_ns)
    except OSError:
        deployed = ""
    parts = [
        function,
        os.environ.get("LAMBDA_TASK_ROOT", ""),
        os.environ.get("HYCLOUD_LAMBDA_LAYERS", ""),
        deployed,
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cached_facts(session, state_dir: str, function: str, region: str) -> Facts:
    """Loading the facts takes one to two seconds of API calls; a cold start reads them from a file."""
    path = Path(state_dir) / "guard" / "facts" / f"{function}.json"
    key = facts_key(state_dir, function)
    try:
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return Facts.from_dict(saved["facts"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    facts = load_facts(session, function, region)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "facts": facts.to_dict()}))
        tmp.replace(path)
    except OSError:
        pass
    return facts


def install() -> Guard | None:
    """Load the function's facts, then patch botocore; a no-op outside the local cloud or without botocore."""
    global GUARD
    state_dir = os.environ.get("HYCLOUD_LOCALCLOUD")
    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    if not state_dir or not function:
        return None
    modes = parse_modes(settings_text(state_dir))
    if all(m == "off" for m in modes.values()):
        return None
    try:
        import botocore.client
        import botocore.exceptions
        import botocore.session
    except ImportError:  # a function without botocore makes no AWS calls to guard
        return None
    started = time.perf_counter()
    session = botocore.session.get_session()
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    try:
        facts = cached_facts(session, state_dir, function, region)
    except Exception as e:  # without facts nothing can be judged: say so, check nothing
        print(f"[local cloud] AWS rules not checked for {function}: {e}", file=sys.stderr)
        facts = None
    GUARD = Guard(facts, modes, state_dir, session, (time.perf_counter() - started) * 1000)
    original = botocore.client.BaseClient._make_api_call

    def _make_api_call(self, operation_name, api_params):
        if GUARD is None or getattr(_local, "inside", False):
            return original(self, operation_name, api_params)
        GUARD.check(self, operation_name, api_params)
        try:
            return original(self, operation_name, api_params)
        except botocore.exceptions.ClientError as e:
            GUARD.missing_object(self, operation_name, api_params, e)
            raise

    botocore.client.BaseClient._make_api_call = _make_api_call
    GUARD.flush()
    return GUARD


def flush() -> None:
    if GUARD is not None:
        GUARD.flush()
