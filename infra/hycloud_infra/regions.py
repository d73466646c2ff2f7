"""Which regions hold instances, and the physical names that let the home controller reach them.

A controller in one region cannot take a CloudFormation reference to a resource of another region
(`crossRegionReferences` needs a Lambda-backed custom resource, which the local cloud lacks), so a
data instance names its bucket and state machines from its stack name and account: both sides
compute the same names at synth time.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import ArnFormat, Stack

DEFAULT_REGION = "us-east-1"


def regions(value: object) -> list[str]:
    """`hycloud:regions` as a list: a JSON list (cdk.json) or a comma-separated string (`-c`)."""
    if value is None:
        return [DEFAULT_REGION]
    items = value if isinstance(value, list) else str(value).split(",")
    found = [str(item).strip() for item in items if str(item).strip()]
    if not found or len(set(found)) != len(found):
        raise ValueError(f"hycloud:regions needs distinct region names, not {value!r}")
    return found


def data_stack_name(home_stack_name: str, region: str) -> str:
    return f"{home_stack_name}-{region}"


def stack_bucket(stack_name: str, account: str) -> str:
    """The content bucket a data instance or standby stack names from its own name and account
    (bucket names are lower case and global; the account may be a token: no slicing)."""
    return f"{stack_name.lower()}-{account}"


def any_data_bucket(home_stack_name: str, account: str) -> str:
    """Every bucket a data instance of this app may name (`DataInstanceNames.bucket`): the rights
    the home functions need on an instance a migration puts on the ring after their deploy."""
    return f"{home_stack_name.lower()}-*-{account}"


def home_bucket(home_stack_name: str) -> str:
    """The home instance's content bucket, whose name CloudFormation makes from the stack's name and
    the bucket's logical id (`Stores/Content`) plus a random suffix: the narrowest pattern for it."""
    return f"{home_stack_name.lower()}-storescontent*"


def home_table(home_stack_name: str) -> str:
    """The home instance's table, named by CloudFormation as `home_bucket` is."""
    return f"{home_stack_name}-StoresTable*"


def in_account(account: str) -> dict[str, dict[str, str]]:
    """The condition on a statement naming buckets by string: S3 bucket ARNs carry no account, so a
    bucket of the same name in another account would match the pattern without it."""
    return {"StringEquals": {"aws:ResourceAccount": account}}


@dataclass(frozen=True)
class DataInstanceNames:
    """Physical names of one data instance's resources that the controller addresses."""

    region: str
    bucket: str
    relay_state_machine: str
    delta_state_machine: str

    @classmethod
    def of(cls, stack_name: str, region: str, account: str) -> DataInstanceNames:
        return cls(
            region=region,
            bucket=stack_bucket(stack_name, account),
            relay_state_machine=f"{stack_name}-Relay",
            delta_state_machine=f"{stack_name}-Delta",
        )

    def state_machine_arn(self, stack: Stack, name: str) -> str:
        return stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=name,
            region=self.region,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def describe(self, stack: Stack) -> dict[str, str]:
        """What the controller is told (env `HYCLOUD_INSTANCES`, one entry per data instance)."""
        return {
            "region": self.region,
            "bucket": self.bucket,
            "relayStateMachineArn": self.state_machine_arn(stack, self.relay_state_machine),
            "deltaStateMachineArn": self.state_machine_arn(stack, self.delta_state_machine),
        }


def instances_env(stack: Stack, instances: list[DataInstanceNames]) -> str:
    return stack.to_json_string([item.describe(stack) for item in instances])
