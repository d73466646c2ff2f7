"""The manifest-only DynamoDBLocal.jar: long Class-Path values must survive the 72-byte line limit."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "infra/local"))

import localcloud  # noqa: E402


def parse_manifest(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = ""
    for line in text.split("\r\n"):
        if line.startswith(" "):
            fields[key] += line[1:]
        elif line:
            key, value = line.split(": ", 1)
            fields[key] = value
    return fields


def test_long_class_path_round_trips(tmp_path):
    classes = tmp_path / "classes" / "hycloud" / "local"
    classes.mkdir(parents=True)
    (classes / "Main.class").write_bytes(b"\xca\xfe")
    (classes / "NoopAgent.class").write_bytes(b"\xca\xfe")
    class_path = " ".join(f"DynamoDBLocal_lib/dependency-number-{i}-2.25.50.jar" for i in range(40))
    jar = tmp_path / "x.jar"
    localcloud.write_jar(
        jar,
        {"Main-Class": "hycloud.local.Main", "Class-Path": class_path},
        tmp_path / "classes",
        exclude="NoopAgent",
    )
    with zipfile.ZipFile(jar) as zf:
        manifest = zf.read("META-INF/MANIFEST.MF").decode()
        names = zf.namelist()
    assert all(len(line.encode()) <= 72 for line in manifest.split("\r\n"))
    assert parse_manifest(manifest) == {
        "Manifest-Version": "1.0",
        "Main-Class": "hycloud.local.Main",
        "Class-Path": class_path,
    }
    assert names == ["META-INF/MANIFEST.MF", "hycloud/local/Main.class"]
