"""Where the standby controller is (`hycloud:standby`, a region; unset or "" for none) and the
physical names by which the primary's replication job reaches its table, bucket and apply
function across regions (the same reason as regions.py: no cross-region references here)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Stack

from .regions import stack_bucket


def standby_region(value: object, home: str) -> str | None:
    region = str(value or "").strip()
    if region.lower() in ("", "none", "false", "off"):
        return None
    if region == home:
        raise ValueError(f"hycloud:standby must be another region than the home region {home}")
    return region


def standby_stack_name(home_stack_name: str) -> str:
    return f"{home_stack_name}-Standby"


@dataclass(frozen=True)
class StandbyNames:
    region: str
    table: str
    bucket: str
    apply_function: str

    @classmethod
    def of(cls, stack_name: str, region: str, account: str) -> StandbyNames:
        return cls(
            region=region,
            table=f"{stack_name}-Table",
            bucket=stack_bucket(stack_name, account),
            apply_function=f"{stack_name}-Apply",
        )

    def describe(self, stack: Stack) -> str:
        """What the replication job is told (env HYCLOUD_STANDBY)."""
        return stack.to_json_string(
            {
                "region": self.region,
                "table": self.table,
                "bucket": self.bucket,
                "applyFunction": self.apply_function,
            }
        )

    def arns(self, stack: Stack) -> dict[str, str]:
        def arn(service: str, resource: str, name: str, sep: str = "/") -> str:
            return f"arn:{stack.partition}:{service}:{self.region}:{stack.account}:{resource}{sep}{name}"

        return {
            "table": arn("dynamodb", "table", self.table),
            "function": arn("lambda", "function", self.apply_function, ":"),
            "bucket": f"arn:{stack.partition}:s3:::{self.bucket}",
        }
