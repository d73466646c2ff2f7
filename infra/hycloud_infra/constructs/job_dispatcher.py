"""The job dispatcher: a function run when a queued job's execution (relay, delta, tree, coded repair) ends, and every two minutes.

Scheduling settings come from context and reach the controller too (`environment`):
`hycloud:jobCapacity` (relay workers kept, default 16), `hycloud:maxRelayWorkers` (the cap
adoption grows to, 32), `hycloud:fopMaxWaitS` (starvation bound, 300), `hycloud:thetaC` /
`hycloud:thetaL` (eq. 7/8, 0.2 / 0.6) and `hycloud:relayThrottleBps` (per-worker limit, 0 = none).
Workers not given fit `hycloud:accountConcurrency` (concurrency.py).
"""

from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..concurrency import job_budget
from .python_function import python_function

CONTEXT_ENV = {
    "hycloud:jobCapacity": "HYCLOUD_JOB_CAPACITY",
    "hycloud:maxRelayWorkers": "HYCLOUD_MAX_RELAY_WORKERS",
    "hycloud:fopMaxWaitS": "HYCLOUD_FOP_MAX_WAIT_S",
    "hycloud:thetaC": "HYCLOUD_THETA_C",
    "hycloud:thetaL": "HYCLOUD_THETA_L",
    "hycloud:relayThrottleBps": "HYCLOUD_RELAY_THROTTLE_BPS",
}
ENDED = ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]


def scheduling_env(scope: Construct) -> dict[str, str]:
    """The scheduling settings given in context, as environment variables."""
    ctx = scope.node.try_get_context
    budget = job_budget(scope)  # what fits the account's Lambda concurrency (concurrency.py)
    fitted = {"hycloud:jobCapacity": budget.capacity, "hycloud:maxRelayWorkers": budget.max_workers}
    values = {key: ctx(key) if ctx(key) is not None else fitted.get(key) for key in CONTEXT_ENV}
    return {CONTEXT_ENV[key]: str(value) for key, value in values.items() if value is not None}


class JobDispatcher(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        code_dir: Path,
        layer: lambda_.ILayerVersion,
        environment: dict[str, str],
        table: dynamodb.ITable,
        machines: list[sfn.IStateMachine],
        machine_arns: tuple[str, ...] = (),
    ) -> None:
        """`machine_arns`: more machines whose ends free a worker, named by a fixed ARN (their
        rights are granted by their own construct)."""
        super().__init__(scope, id)
        self.function = python_function(
            self, "Function", code_dir=code_dir, layer=layer, environment=environment, memory_mb=512
        )
        table.grant_read_write_data(self.function)
        for machine in machines:
            machine.grant_start_execution(self.function)
            machine.grant_read(self.function)
        events.Rule(
            self,
            "JobEnded",
            event_pattern=events.EventPattern(
                source=["aws.states"],
                detail_type=["Step Functions Execution Status Change"],
                detail={
                    "status": ENDED,
                    "stateMachineArn": [*(m.state_machine_arn for m in machines), *machine_arns],
                },
            ),
            targets=[targets.LambdaFunction(self.function)],
        )
        events.Rule(
            self,
            "Backstop",
            schedule=events.Schedule.rate(Duration.minutes(2)),
            targets=[targets.LambdaFunction(self.function)],
        )
