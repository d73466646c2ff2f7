"""The EFS file system holding namespaces, relay cache and staging, and the VPC it lives in.

The VPC has isolated subnets only (no NAT, which would cost about $33 a month per zone, idle):
functions reach S3 and DynamoDB of their own region through gateway endpoints, which cost
nothing, Lambda through an interface endpoint, and Step Functions and other regions through the
reach function (constructs/reach.py), which they invoke through the Lambda endpoint.
"""

from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_efs as efs
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from .storage_tiers import efs_lifecycle

MOUNT_PATH = "/mnt/efs"


class EfsVolume(Construct):
    def __init__(
        self, scope: Construct, id: str, *, removal_policy: RemovalPolicy, reach: lambda_.IFunction
    ) -> None:
        """`reach`: the function outside the VPC that carries calls to other regions."""
        super().__init__(scope, id)
        self.reach = reach
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
                "DynamoDB": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.DYNAMODB),
            },
        )
        # The one interface endpoint ($7.30 a month per zone): Step Functions and other regions are
        # reached through the reach function, invoked through it (hycloud_core/reach.py).
        self.vpc.add_interface_endpoint("Lambda", service=ec2.InterfaceVpcEndpointAwsService.LAMBDA_)
        self.file_system = efs.FileSystem(
            self,
            "FileSystem",
            vpc=self.vpc,
            encrypted=True,
            performance_mode=efs.PerformanceMode.GENERAL_PURPOSE,
            throughput_mode=efs.ThroughputMode.ELASTIC,
            removal_policy=removal_policy,
            **efs_lifecycle(self),  # files unread go to IA, then Archive (storage_tiers.py)
        )
        self.access_point = self.file_system.add_access_point(
            "AccessPoint",
            path="/hycloud",
            create_acl=efs.Acl(owner_uid="1001", owner_gid="1001", permissions="750"),
            posix_user=efs.PosixUser(uid="1001", gid="1001"),
        )

    def mount(self) -> dict[str, Any]:
        """Function properties that mount the volume at MOUNT_PATH (python_function takes "reach")."""
        return {
            "reach": self.reach,
            "vpc": self.vpc,
            "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            "filesystem": lambda_.FileSystem.from_efs_access_point(self.access_point, MOUNT_PATH),
        }
