"""moto's server on 127.0.0.1 (one per session, state wiped per test) behind the counting proxy.

Importable without moto or aiobotocore; each test module skips itself when they are missing.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.aws.proxy import AwsProxy
from tests.support.backends import base_config

AMI = "ami-760aaa0f"  # the one image of amis.json, in every region
REGION = "us-east-1"
FLEET_ROLE = "arn:aws:iam::123456789012:role/aws-ec2-spot-fleet-tagging-role"
FAKE_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",  # never a real credential: moto on loopback only
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    # moto's own catalogue is ~1,300 images a region, each built with a volume and a snapshot whenever a region's
    # EC2 backend is made: on every reset for every region the last test touched (~0.35 s each on a quiet box,
    # past the reset's 10 s timeout on a loaded one), and again at a test's first call to a region.
    "MOTO_AMIS_PATH": str(Path(__file__).with_name("amis.json")),
}


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    saved = {k: os.environ.get(k) for k in FAKE_ENV}
    os.environ.update(FAKE_ENV)
    from moto import settings
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    settings.ENABLE_AMI_VALIDATION = True  # a bad AMI fails as on AWS
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def session_proxy(moto_url: str) -> Iterator[AwsProxy]:
    proxy = AwsProxy(moto_url).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def proxy(session_proxy: AwsProxy, moto_url: str) -> AwsProxy:
    """The proxy, with moto's state and the call counts wiped."""
    req = urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST")
    urllib.request.urlopen(req, timeout=10).close()  # loopback only
    session_proxy.reset()
    return session_proxy


def aws_config(tmp_path: Path, endpoint: str, **aws: Any) -> dict[str, Any]:
    """Fast settings: SQLite in tmp_path, the aws provider on `endpoint` (botocore's standard retries)."""
    config = base_config(tmp_path)
    config["provider"] = {
        "type": "aws",
        "region": REGION,
        "aws": {"endpoint_url": endpoint, "fleet_role": FLEET_ROLE, **aws},
    }
    return config


@pytest.fixture
async def ec2(moto_url: str) -> AsyncIterator[Any]:
    """A client straight to moto (not through the proxy): the test's own view of the cloud."""
    from aiobotocore.session import get_session

    async with get_session().create_client("ec2", region_name=REGION, endpoint_url=moto_url) as client:
        yield client


@pytest.fixture
async def autoscaling(moto_url: str) -> AsyncIterator[Any]:
    from aiobotocore.session import get_session

    async with get_session().create_client("autoscaling", region_name=REGION, endpoint_url=moto_url) as client:
        yield client


async def cloud_instances(ec2: Any, request_id: str | None = None) -> dict[str, str]:
    """Instance id -> state of every instance in moto (or of one request, by its tag)."""
    filters = [{"Name": "tag:pluginsdk:request-id", "Values": [request_id]}] if request_id else []
    out: dict[str, str] = {}
    paginator = ec2.get_paginator("describe_instances")
    async for page in paginator.paginate(Filters=filters):
        for res in page["Reservations"]:
            for inst in res["Instances"]:
                out[inst["InstanceId"]] = inst["State"]["Name"]
    return out


async def subnets(ec2: Any) -> list[str]:
    found = await ec2.describe_subnets()
    return sorted(s["SubnetId"] for s in found["Subnets"])[:3]
