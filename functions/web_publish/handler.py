"""Copy the web app (a zip asset) into the site bucket and write its config.json.

On AWS a custom resource calls it at each deploy. The local cloud runs no custom resources
(LocalStack Pro only), so infra/local/deploy.py invokes it directly after deploying; either way
it takes its settings from the environment. CDK's BucketDeployment is not used because it runs
the AWS CLI from a layer at /opt, which the local cloud's process-based Lambda runtime lacks.
The config names the API the app calls; on the local cloud that is the gateway's
`_user_request_` URL, since `*.execute-api.<host>` names do not resolve there.
"""

from __future__ import annotations

import io
import json
import mimetypes
import os
import re
import urllib.request
import zipfile

import boto3

NO_CACHE = ("index.html", "config.json")


def handler(event: dict, context: object) -> dict:
    if "ResponseURL" not in event:  # invoked directly (the local cloud)
        return publish()
    data, status, reason = {}, "SUCCESS", ""
    try:
        if event["RequestType"] != "Delete":
            data = publish()
        else:
            empty(os.environ["SITE_BUCKET"])
    except Exception as err:  # the stack must hear of any failure, or it waits an hour
        status, reason = "FAILED", f"{type(err).__name__}: {err}"
    _respond(event, status, reason, data)
    return data


def publish() -> dict:
    s3 = boto3.client("s3")
    bucket = os.environ["SITE_BUCKET"]
    archive = s3.get_object(Bucket=os.environ["ASSET_BUCKET"], Key=os.environ["ASSET_KEY"])["Body"].read()
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        for name in zf.namelist():
            if not name.endswith("/"):
                _put(s3, bucket, name, zf.read(name))
    config = {"apiUrl": api_url(os.environ["API_URL"])}
    _put(s3, bucket, "config.json", json.dumps(config).encode())
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    return {**config, "SiteUrl": f"{endpoint}/{bucket}/index.html" if endpoint else ""}


def api_url(deployed: str) -> str:
    """The API's URL as a browser on this machine reaches it."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    match = re.match(r"https?://([^.]+)\.execute-api\.[^/]+/([^/]+)/?$", deployed)
    if endpoint and match:
        return f"{endpoint}/restapis/{match.group(1)}/{match.group(2)}/_user_request_"
    return deployed.rstrip("/")


def empty(bucket: str) -> None:
    s3 = boto3.client("s3")
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})


def _put(s3, bucket: str, key: str, body: bytes) -> None:
    kind = mimetypes.guess_type(key)[0] or "application/octet-stream"
    cache = "no-cache" if key in NO_CACHE else "max-age=300"
    s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=kind, CacheControl=cache)


def _respond(event: dict, status: str, reason: str, data: dict) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason or "see the function's log",
            "PhysicalResourceId": event.get("PhysicalResourceId") or f"web-{event['LogicalResourceId']}",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data,
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=30):
        pass
