"""The Slurm strategy's parts without a controller: hostlists, resume files of both Slurm generations, the
node map, the spool, `slurm config`, machines named after nodes (both backends) and the local provider's
startup scripts. The real-controller tests are in test_controller.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings
from pluginsdk.errors import ValidationError
from pluginsdk.schedulers.slurm import programs, spool
from pluginsdk.schedulers.slurm.nodes import NodeMap
from tests.support.backends import base_config, open_sdk
from tests.support.cli import Result, clean_environment, invoke, run
from tests.support.sources import trees_of

ROOT = Path(__file__).resolve().parents[3]


def test_hostlists_expand_with_ranges_lists_and_digit_prefixes() -> None:
    assert programs.expand("cloud-[1-3,7]") == ["cloud-1", "cloud-2", "cloud-3", "cloud-7"]
    assert programs.expand("gpu[01-02],c1-[1-2]-[3-4]") == ["gpu01", "gpu02", "c1-1-3", "c1-1-4", "c1-2-3", "c1-2-4"]
    assert programs.expand("a1,a1") == ["a1"]
    assert programs.collect(["cloud-1", "cloud-2", "cloud-3"]) == "cloud-[1-3]"
    with pytest.raises(ValueError, match="hostlist"):
        programs.expand("cloud-[1-")


@pytest.mark.parametrize(
    "content",
    [
        {"jobs": [{"job_id": 7, "nodes": "cloud[1-2]"}], "all_nodes": "cloud[1-2]"},  # Slurm 22.05
        {  # newer Slurm
            "jobs": [{"job_id": 7, "nodes_resume": "cloud[1-2]", "partition": "burst", "features": "x"}],
            "all_nodes_resume": "cloud[1-2]",
        },
    ],
)
def test_resume_files_of_both_generations(tmp_path: Path, content: dict[str, object]) -> None:
    f = tmp_path / "resume.json"
    f.write_text(json.dumps(content))
    (job,) = programs.resume_jobs(str(f))
    assert job == spool.Job(7, ["cloud1", "cloud2"])
    assert programs.resume_jobs(str(tmp_path / "gone")) == []  # unreadable: the hostlist alone decides
    assert programs.resume_jobs(None) == []


def test_the_node_map_maps_each_node_to_its_set() -> None:
    settings = load_settings(
        config={
            "slurm": {
                "nodesets": [
                    {"nodes": "cloud-cpu-[1-100]", "template": "cpu"},
                    {"nodes": "cloud-cpu-101,gpu[1-2]", "template": "gpu", "partition": "g"},
                ]
            }
        }
    )
    nodes = NodeMap(settings.slurm)
    groups, unknown = nodes.by_template(["cloud-cpu-1", "gpu2", "cloud-cpu-100", "cloud-cpu-101", "other"])
    assert groups == {"cpu": ["cloud-cpu-1", "cloud-cpu-100"], "gpu": ["gpu2", "cloud-cpu-101"]}
    assert unknown == ["other"]
    assert nodes.partition["gpu1"] == "g" and nodes.partition["cloud-cpu-5"] == "cpu"


@pytest.mark.parametrize(
    ("nodesets", "key", "says"),
    [
        ([{"nodes": "c[001-", "template": "t"}], "slurm.nodesets.0.nodes", "hostlist expression"),
        ([{"nodes": "c[3-1]", "template": "t"}], "slurm.nodesets.0.nodes", "hostlist expression"),
        ([{"nodes": "", "template": "t"}], "slurm.nodesets.0.nodes", "at least one node"),
        ([{"nodes": "c 1", "template": "t"}], "slurm.nodesets.0.nodes", "node names of letters"),
        ([{"nodes": "c[1-3],c2", "template": "t"}], "slurm.nodesets.0.nodes", "c2 is listed twice"),
        (
            [{"nodes": "c[001-010]", "template": "t"}, {"nodes": "c[005-006]", "template": "u"}],
            "slurm.nodesets.1.nodes",
            "c005 is also in slurm.nodesets.0.nodes (c[001-010])",
        ),
    ],
)
def test_node_sets_slurmctld_would_refuse_are_refused_when_the_configuration_loads(
    nodesets: list[dict[str, str]], key: str, says: str
) -> None:
    from pluginsdk.errors import ConfigurationError

    with pytest.raises(ConfigurationError) as caught:
        load_settings(config={"slurm": {"nodesets": nodesets}}, environ={})
    assert caught.value.key == key and says in caught.value.message
    assert caught.value.to_envelope()["details"]["field"] == key


def test_a_slurm_typo_is_refused_with_the_closest_key() -> None:
    from pluginsdk.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="all_or_nothing"):
        load_settings(config={"slurm": {"all_or_nothin": True}})


def test_the_spool_keeps_intents_in_order_and_sets_bad_files_aside(tmp_path: Path) -> None:
    first = spool.Intent("resume", ["a1"], [spool.Job(1, ["a1"])], at=1.0)
    second = spool.Intent("suspend", ["a2"], at=2.0)
    spool.write(tmp_path, second)
    spool.write(tmp_path, first)
    (tmp_path / "0.000000-bad.json").write_text("{")
    found = [i for _, i in spool.pending(tmp_path)]
    assert found == [first, second]
    assert list(tmp_path.glob("*.bad")) and oct(tmp_path.stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("backend_kind", ["local", "remote"])
async def test_machines_are_named_after_the_nodes(backend_kind: str, tmp_path: Path) -> None:
    async with open_sdk(backend_kind, tmp_path) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1", instance_type="t3.small")
        created = await sdk.create_request(
            "cpu", 2, machine_names=["cloud1", "cloud2"], request_id="req-slurm-x-0", wait=True
        )
        assert sorted(str(m.name) for m in created.machines) == ["cloud1", "cloud2"]
        again = await sdk.create_request("cpu", 2, machine_names=["cloud1", "cloud2"], request_id="req-slurm-x-0")
        assert again.request_id == created.request_id  # the same intent replayed: no second launch
        for names, count in ((["cloud1"], 2), (["n1", "n1"], 2), (["bad name"], 1), (["-x"], 1)):
            with pytest.raises(ValidationError):
                await sdk.create_request("cpu", count, machine_names=names)
        ret = await sdk.create_return_request(machine_ids=["cloud1"])  # returned by node name
        assert len(ret.processed_machines or []) == 1


async def test_the_local_provider_runs_a_startup_script_and_stops_it(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    pids = tmp_path / "pids"
    config = base_config(
        tmp_path,
        provider={"local": {"boot_delay": 0.05, "terminate_delay": 0.05, "seed": 7, "run_user_data": True}},
    )
    script = f'echo "$PLUGINSDK_MACHINE_NAME $PLUGINSDK_REQUEST_ID" >> {marker}; echo $$ >> {pids}; exec sleep 300'
    async with PluginSDK(config=config) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1", user_data=script)
        req = await sdk.create_request("cpu", 2, machine_names=["n1", "n2"], wait=True)
        for _ in range(50):  # the describe that sees each machine run starts its script, once
            await sdk.get_request_status([str(req.request_id)])
            if pids.exists() and len(pids.read_text().split()) == 2:
                break
            await asyncio.sleep(0.05)
        assert sorted(marker.read_text().splitlines()) == [f"n1 {req.request_id}", f"n2 {req.request_id}"]
        started = pids.read_text().split()
        assert len(started) == 2 and all(_alive(p) for p in started)
        await sdk.create_return_request(machine_ids=["n1", "n2"])
    for _ in range(100):
        if not [p for p in started if _alive(p)]:
            break
        time.sleep(0.05)
    assert not [p for p in started if _alive(p)]


def _alive(pid: str) -> bool:
    """Running (not gone, not a zombie waiting for its parent)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_startup_scripts_are_off_by_default(tmp_path: Path) -> None:
    async def go() -> None:
        async with PluginSDK(config=base_config(tmp_path)) as sdk:
            await sdk.create_template(template_id="cpu", image_id="img-1", user_data=f"touch {tmp_path / 'ran'}")
            await sdk.create_request("cpu", 1, wait=True)

    asyncio.run(go())
    time.sleep(0.2)
    assert not (tmp_path / "ran").exists()


def _cli(config: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """`pluginsdk --config CONFIG ARGS` in this process."""
    return invoke(clean_environment(**(env or {})), "--config", str(config), *args, fmt=None)


def _process(config: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    """`pluginsdk --config CONFIG ARGS` as its own process, as Slurm runs its programs."""
    return run(clean_environment(**(env or {})), "--config", str(config), *args, fmt=None)


def _config(tmp_path: Path, **slurm: object) -> Path:
    cfg = base_config(tmp_path)
    cfg["slurm"] = {
        "spool_dir": str(tmp_path / "spool"),
        "scontrol": "/bin/true",
        "nodesets": [{"nodes": "cloud[1-4]", "template": "cpu", "partition": "burst"}],
    } | slurm
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _envelope(res: Result) -> dict[str, Any]:
    """The one error envelope a `slurm` subcommand prints on stderr (its last line)."""
    assert "Traceback" not in res.err, res.err
    envelope: dict[str, Any] = json.loads(res.err.strip().splitlines()[-1])
    assert envelope["success"] is False and {"error", "error_code", "details"} <= set(envelope)
    return envelope


def test_slurm_config_prints_nodes_from_the_instance_types(tmp_path: Path) -> None:
    path = _config(tmp_path)
    missing = _cli(path, "slurm", "config")
    assert missing.code == 1 and missing.out == ""  # never a configuration slurmctld would not take
    envelope = _envelope(missing)
    assert (
        envelope["error_code"] == "CONFIGURATION_ERROR" and envelope["details"]["field"] == "slurm.nodesets.0.template"
    )
    assert (
        _cli(path, "templates", "create", "--template-id", "cpu", "--image-id", "i", "--instance-type", "x9.odd").code
        == 0
    )
    unknown = _cli(path, "slurm", "config")
    assert unknown.code == 1 and unknown.out == "" and "x9.odd" in _envelope(unknown)["error"]
    assert _cli(path, "templates", "update", "cpu", "--instance-type", "m5.xlarge").code == 0
    out = _cli(path, "slurm", "config").out
    assert "NodeName=cloud[1-4] CPUs=4 RealMemory=15564 State=CLOUD" in out  # 16 GiB less 5 %
    assert "PartitionName=burst Nodes=cloud[1-4]" in out and "ResumeProgram=" in out and "PrivateData=cloud" in out
    assert "RebootProgram=/etc/slurm/pluginsdk/reboot.sh" in out and "reboot_from_controller" in out
    assert f"#   PLUGIN_CONFIG={path}" in out


def test_slurm_config_names_the_environment_that_made_the_configuration(tmp_path: Path) -> None:
    """Configured by PLUGIN_CONFIG (no --config) and other PLUGIN_* variables: the pluginsdk.env lines name them
    all, a secret one left to copy, so the programs Slurm runs get the same configuration."""
    path = _config(tmp_path)
    env = clean_environment(
        PLUGIN_CONFIG=str(path), PLUGIN_REGION="eu-west-1", PLUGIN_API_KEY="psdk_secret_never_printed"
    )
    create = ("templates", "create", "--template-id", "cpu", "--image-id", "i", "--instance-type", "m5.xlarge")
    assert invoke(env, *create, fmt=None).code == 0
    res = invoke(env, "slurm", "config", fmt=None)
    assert res.code == 0, res.err
    assert f"#   PLUGIN_CONFIG={path}" in res.out and "#   PLUGIN_REGION=eu-west-1" in res.out
    assert "#   PLUGIN_API_KEY=...  # a secret" in res.out and "psdk_secret_never_printed" not in res.out


def test_the_resume_program_spools_and_the_worker_launches(tmp_path: Path) -> None:
    path = _config(tmp_path)
    assert _cli(path, "templates", "create", "--template-id", "cpu", "--image-id", "i").code == 0
    resume_file = tmp_path / "resume.json"
    resume_file.write_text(json.dumps({"jobs": [{"job_id": 3, "nodes": "cloud[1-2]"}], "all_nodes": "cloud[1-2]"}))
    done = _process(path, "slurm", "resume", "cloud[1-2]", env={"SLURM_RESUME_FILE": str(resume_file)})
    assert done.code == 0 and done.out == ""  # Slurm reads nothing; the log says what happened

    async def names() -> list[str]:
        async with PluginSDK(config_path=str(path)) as sdk:
            return sorted([str(m.name) async for m in sdk.iterate("list_machines", active_only=True)])

    deadline = time.monotonic() + 20
    while asyncio.run(names()) != ["cloud1", "cloud2"] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert asyncio.run(names()) == ["cloud1", "cloud2"]
    log = (tmp_path / "spool" / "slurm.log").read_text()
    assert "resume cloud[1-2]: 2 node(s), 1 job(s)" in log
    bad = _process(path, "slurm", "resume", "cloud[1-")  # a usage error: no node can be named
    assert bad.code == 2 and _envelope(bad)["error_code"] == "VALIDATION_ERROR"
    assert _envelope(bad)["details"]["field"] == "hostlist"


def _stand_in(tmp_path: Path, *, show: str = "", fail: str = "") -> tuple[Path, Path]:
    """A stand-in `scontrol`: `-o show node` prints `show`, an update is appended to the log it returns; with
    `fail`, every call prints it on stderr and exits 1 (the controller unreachable)."""
    updates = tmp_path / "updates.log"
    scontrol = tmp_path / "scontrol"
    body = (
        f'echo "{fail}" >&2; exit 1\n'
        if fail
        else (f'if [ "$1" = "-o" ]; then printf "%s\\n" "{show}"; exit 0; fi\necho "$@" >> {updates}\n')
    )
    scontrol.write_text("#!/bin/sh\n" + body)
    scontrol.chmod(0o755)
    return scontrol, updates


def test_a_resume_under_a_configuration_that_does_not_load_puts_its_nodes_down_at_once(tmp_path: Path) -> None:
    """A typo'd node set: the resume program fails (exit 1, the envelope naming the key) and the nodes go down
    with the reason, so Slurm requeues the job instead of waiting out ResumeTimeout; no worker, no spool file."""
    scontrol, updates = _stand_in(tmp_path)
    path = _config(tmp_path, scontrol=str(scontrol), nodesets=[{"nodes": "c[001-", "template": "cpu"}])
    res = _process(path, "slurm", "resume", "c[001-002]")
    assert res.code == 1
    envelope = _envelope(res)
    assert envelope["error_code"] == "CONFIGURATION_ERROR" and envelope["details"]["field"] == "slurm.nodesets.0.nodes"
    down = [line for line in updates.read_text().splitlines() if "state=down" in line]
    assert len(down) == 1 and "nodename=c[001-002]" in down[0] and "slurm.nodesets.0.nodes" in down[0]
    assert not list((tmp_path / "spool").glob("*.json"))
    for command in (("suspend", "c001"), ("resume-fail", "c001"), ("reboot", "c001"), ("config",), ("reconcile",)):
        other = _process(path, "slurm", *command)
        assert other.code == 1 and _envelope(other)["details"]["field"] == "slurm.nodesets.0.nodes", command
    service = _process(path, "worker")  # the service does not start on it either
    assert service.code == 1 and _envelope(service)["details"]["field"] == "slurm.nodesets.0.nodes"


def test_reconcile_with_the_controller_unreachable_prints_the_envelope(tmp_path: Path) -> None:
    """From cron: one JSON envelope on stderr, exit 1, nothing on stdout, no traceback mailed to the admin."""
    scontrol, _ = _stand_in(tmp_path, fail="slurm_load_node error: Unable to contact slurm controller")
    res = _process(_config(tmp_path, scontrol=str(scontrol)), "slurm", "reconcile")
    assert res.code == 1 and res.out == ""
    envelope = _envelope(res)
    assert envelope["error_code"] == "SCHEDULER_UNAVAILABLE" and "Unable to contact" in envelope["error"]


async def test_the_rest_servers_engine_runs_the_slurm_reconcile(tmp_path: Path) -> None:
    """The REST server registers the Slurm reconcile with its engine: a machine whose node Slurm holds powered
    down is returned on its own, every `slurm.reconcile_interval`; `scontrol` is a stand-in."""
    from tests.support.remote import remote_sdk

    scontrol, _ = _stand_in(tmp_path, show="NodeName=cloud1 Arch=x86_64 State=IDLE+CLOUD+POWERED_DOWN Partitions=b")
    config = base_config(tmp_path)
    config["slurm"] = {
        "scontrol": str(scontrol),
        "reconcile_interval": 0.2,
        "nodesets": [{"nodes": "cloud[1-2]", "template": "cpu"}],
    }
    async with remote_sdk(config, tmp_path) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1")
        await sdk.create_request("cpu", 1, machine_names=["cloud1"], wait=True)
        await sdk.create_request("cpu", 1, wait=True)  # not a node's machine: never touched
        for _ in range(100):
            names = [m.name async for m in sdk.iterate("list_machines", active_only=True)]
            if "cloud1" not in names:
                break
            await asyncio.sleep(0.05)
        assert "cloud1" not in names and len(names) == 1


async def test_the_engine_runs_the_periodic_tasks_it_is_given_and_stops_with_it(tmp_path: Path) -> None:
    """The generic hook: each task on its own interval, a failing one retried, one that answers 0 stopped, and
    none left running once the engine closes."""
    from backends.local import LocalBackend
    from pluginsdk.operations import ListTemplatesQuery
    from pluginsdk.periodic import PeriodicTask

    runs: dict[str, int] = {"counts": 0, "fails": 0, "once": 0}

    async def counts(execute: Any) -> None:
        runs["counts"] += 1
        await execute(ListTemplatesQuery())  # as the administrator

    async def fails(_: Any) -> None:
        runs["fails"] += 1
        raise RuntimeError("boom")

    async def once(_: Any) -> float:
        runs["once"] += 1
        return 0.0

    tasks = [PeriodicTask("counts", 0.05, counts), PeriodicTask("fails", 0.05, fails), PeriodicTask("once", 0.05, once)]
    backend = LocalBackend(load_settings(config=base_config(tmp_path), environ={}), background=True, periodic=tasks)
    async with PluginSDK(backend=backend):
        await asyncio.sleep(0.5)
    seen = dict(runs)
    assert seen["counts"] >= 3 and seen["fails"] >= 3 and seen["once"] == 1
    await asyncio.sleep(0.2)
    assert runs == seen  # closed: nothing runs any more


def test_the_engine_imports_nothing_from_the_schedulers() -> None:
    """The periodic tasks come through the hook: no module of the local backend imports an interface's."""
    import ast

    root = ROOT / "backends"
    files = list(root.rglob("*.py"))
    assert len(files) > 10, root  # the walk finds the backend's modules
    upward = []
    for file, tree in zip(files, trees_of(files), strict=True):
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            upward += [f"{file.relative_to(root)}: {n}" for n in names if n.startswith("pluginsdk.schedulers")]
    assert not upward


@pytest.mark.parametrize("backend_kind", ["local", "remote"])
async def test_a_registered_node_marks_its_machine_ready(backend_kind: str, tmp_path: Path) -> None:
    """slurmd's registration is the readiness signal: a template that requires one (`configuration.boot`) has its
    machine counted started once the controller shows the node registered, without `machines ready`."""
    from pluginsdk.schedulers.slurm.reconcile import reconcile

    scontrol, _ = _stand_in(tmp_path, show="NodeName=cloud1 Arch=x86_64 State=IDLE+CLOUD Partitions=b")
    slurm = load_settings(
        config={"slurm": {"scontrol": str(scontrol), "nodesets": [{"nodes": "cloud[1-2]", "template": "cpu"}]}},
        environ={},
    ).slurm
    async with open_sdk(backend_kind, tmp_path, provider={"local": {"boot_delay": 0.05, "ready_rate": 0}}) as sdk:
        boot = {"boot": {"requires_ready": True, "timeout_seconds": 600, "max_failures": 1}}
        await sdk.create_template(template_id="cpu", image_id="img-1", configuration=boot)
        rid = str((await sdk.create_request("cpu", 1, machine_names=["cloud1"])).request_id)
        for _ in range(100):
            machines = (await sdk.get_request_status([rid])).requests[0].machines
            if machines and machines[0].status == "running":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)
        waiting = (await sdk.get_request_status([rid])).requests[0]
        assert waiting.status == "running"  # its machine runs, but is not ready: not started yet
        assert await reconcile(sdk.execute, slurm, 600.0) == []
        for _ in range(100):
            done = (await sdk.get_request_status([rid])).requests[0]
            if done.status == "completed":
                break
            await asyncio.sleep(0.05)
        assert done.status == "completed"


def test_the_worker_command_runs_the_periodic_tasks_until_sigterm(tmp_path: Path) -> None:
    """`pluginsdk worker`: no REST server, the Slurm reconcile runs (a machine of a powered-down node is
    returned) and SIGTERM stops it cleanly (exit 0, no traceback)."""
    import signal
    import subprocess
    import sys

    scontrol, _ = _stand_in(tmp_path, show="NodeName=cloud1 Arch=x86_64 State=IDLE+CLOUD+POWERED_DOWN Partitions=b")
    path = _config(tmp_path, scontrol=str(scontrol), reconcile_interval=0.2)
    assert _cli(path, "templates", "create", "--template-id", "cpu", "--image-id", "i").code == 0
    assert _cli(path, "machines", "request", "cpu", "1", "--machine-names", "cloud1", "--wait").code == 0

    async def names() -> list[str]:
        async with PluginSDK(config_path=str(path)) as sdk:
            return [str(m.name) async for m in sdk.iterate("list_machines", active_only=True)]

    assert asyncio.run(names()) == ["cloud1"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pluginsdk", "--config", str(path), "worker"],
        env=clean_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while asyncio.run(names()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert asyncio.run(names()) == []
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "slurm reconcile every 0.2 s" in err and "worker stopped" in err


async def test_a_node_whose_machine_the_provider_took_back_goes_down_with_the_providers_reason(tmp_path: Path) -> None:
    """The reconcile marks a powered-up node without a machine DOWN; when a spot interruption took its machine,
    the reason Slurm shows is the provider's. `scontrol` is a stand-in that shows the node up and logs updates."""
    from backends.local import LocalBackend
    from pluginsdk.schedulers import periodic_tasks

    updates = tmp_path / "updates.log"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-o" ]; then echo "NodeName=cloud1 Arch=x86_64 State=ALLOCATED+CLOUD Partitions=b"; exit 0; fi\n'
        f'echo "$@" >> {updates}\n'
    )
    scontrol.chmod(0o755)
    config = base_config(tmp_path, provider={"local": {"reclaim_after": 0.1}})
    config["slurm"] = {
        "scontrol": str(scontrol),
        "reconcile_interval": 0.2,
        "nodesets": [{"nodes": "cloud[1-2]", "template": "cpu"}],
    }
    settings = load_settings(config=config)
    backend = LocalBackend(settings, background=True, periodic=periodic_tasks(settings))
    async with PluginSDK(backend=backend) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1")
        await sdk.create_request("cpu", 1, machine_names=["cloud1"], wait=True)
        for _ in range(200):
            if updates.exists() and "state=down" in updates.read_text():
                break
            await asyncio.sleep(0.05)
    down = next(line for line in updates.read_text().splitlines() if "state=down" in line)
    assert "nodename=cloud1" in down and "Reclaimed by the provider" in down and "SpotInstanceTermination" in down


def test_the_documented_unit_file_is_the_shipped_one() -> None:
    """docs/schedulers.md shows scripts/systemd/pluginsdk-worker.service as it is (less its comments), and it
    runs the command that exists."""
    shipped = [
        line
        for line in (ROOT / "scripts" / "systemd" / "pluginsdk-worker.service").read_text().splitlines()
        if not line.startswith("#")
    ]
    docs = (ROOT / "docs" / "schedulers.md").read_text()
    block = docs.split("```ini\n", 1)[1].split("```", 1)[0].splitlines()
    assert block == shipped
    assert any(line.startswith("ExecStart=") and line.endswith("pluginsdk worker") for line in shipped)
    assert invoke(clean_environment(), "worker", "--help", fmt=None).code == 0


@pytest.mark.parametrize("backend_kind", ["local", "remote"])
async def test_a_reboot_replaces_the_machine_once_even_when_replayed(backend_kind: str, tmp_path: Path) -> None:
    """`slurm reboot`'s work: the node's machine is returned and a new one launched under the node's name; a
    worker replaying the same spool file (the first died after its work) changes nothing more."""
    from pluginsdk.schedulers.slurm.worker import Worker

    slurm = {"scontrol": "/bin/true", "reconcile_interval": 0, "nodesets": [{"nodes": "cloud[1-2]", "template": "cpu"}]}
    async with open_sdk(backend_kind, tmp_path, slurm=slurm) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1")
        old = (await sdk.create_request("cpu", 1, machine_names=["cloud1"], wait=True)).machines[0].machine_id
        await asyncio.sleep(0.05)
        intent = spool.Intent("reboot", ["cloud1"])
        for _ in range(2):
            await Worker(sdk, tmp_path / "spool").do(intent)
        mine = [m async for m in sdk.iterate("list_machines", active_only=True) if m.return_request_id is None]
        assert [m.name for m in mine] == ["cloud1"] and mine[0].machine_id != old
        assert (await sdk.get_machine(old)).return_request_id == f"ret-slurm-{intent.id}"


def test_a_hostlist_argument_too_large_to_expand_is_a_usage_error(tmp_path: Path) -> None:
    res = _process(_config(tmp_path), "slurm", "resume", "c[1-999999999]")
    assert res.code == 2 and _envelope(res)["details"]["field"] == "hostlist"
