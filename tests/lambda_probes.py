"""Throwaway functions and REST APIs the local cloud's own tests create (not the app's)."""

from __future__ import annotations

import io
import zipfile
from typing import Any


def zip_bytes(files: dict[str, str]) -> bytes:
    """A deployment package of `files` ({path: source})."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return buf.getvalue()


def proxy_api(apigw: Any, function_arn: str, stage: str, **api: Any) -> str:
    """A REST API whose every path and method go to `function_arn` (Lambda proxy); its id."""
    api_id = apigw.create_rest_api(**api)["id"]
    root = next(r["id"] for r in apigw.get_resources(restApiId=api_id)["items"] if r["path"] == "/")
    resource = apigw.create_resource(restApiId=api_id, parentId=root, pathPart="{proxy+}")["id"]
    apigw.put_method(restApiId=api_id, resourceId=resource, httpMethod="ANY", authorizationType="NONE")
    apigw.put_integration(
        restApiId=api_id,
        resourceId=resource,
        httpMethod="ANY",
        type="AWS_PROXY",
        integrationHttpMethod="POST",
        uri=f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{function_arn}/invocations",
    )
    apigw.create_deployment(restApiId=api_id, stageName=stage)
    return api_id


def delete_role(iam: Any, role: str, policy: str) -> None:
    """Delete a probe's role and its one inline `policy`."""
    iam.delete_role_policy(RoleName=role, PolicyName=policy)
    iam.delete_role(RoleName=role)


def delete_bucket(s3: Any, bucket: str) -> None:
    """Delete a probe's bucket, emptied first (S3 keeps a bucket that holds objects)."""
    for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=obj["Key"])
    s3.delete_bucket(Bucket=bucket)
