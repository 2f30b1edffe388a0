"""The Slurm strategy's parts without a controller: hostlists, resume files of both Slurm generations, the
node map, the spool, `slurm config`, machines named after nodes (both backends) and the local provider's
startup scripts. The real-controller tests are in test_slurm_controller.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
import yaml

from pluginsdk import PluginSDK
from pluginsdk.config import load_settings
from pluginsdk.errors import ValidationError
from pluginsdk.schedulers.slurm import programs, spool
from pluginsdk.schedulers.slurm.nodes import NodeMap
from tests.support.backends import base_config, open_sdk
from tests.support.cli import Result, clean_environment, invoke, run


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


def test_the_node_map_takes_the_first_set_naming_a_node() -> None:
    settings = load_settings(
        config={
            "slurm": {
                "nodesets": [
                    {"nodes": "cloud-cpu-[1-100]", "template": "cpu"},
                    {"nodes": "cloud-cpu-1,gpu[1-2]", "template": "gpu", "partition": "g"},
                ]
            }
        }
    )
    nodes = NodeMap(settings.slurm)
    groups, unknown = nodes.by_template(["cloud-cpu-1", "gpu2", "cloud-cpu-100", "other"])
    assert groups == {"cpu": ["cloud-cpu-1", "cloud-cpu-100"], "gpu": ["gpu2"]} and unknown == ["other"]
    assert nodes.partition["gpu1"] == "g" and nodes.partition["cloud-cpu-5"] == "cpu"


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
        assert sorted(m.name for m in created.machines) == ["cloud1", "cloud2"]
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
            await sdk.get_request_status([req.request_id])
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


def test_slurm_config_prints_nodes_from_the_instance_types(tmp_path: Path) -> None:
    path = _config(tmp_path)
    assert "template 'cpu' not found" in _cli(path, "slurm", "config").out
    assert (
        _cli(
            path, "templates", "create", "--template-id", "cpu", "--image-id", "i", "--instance-type", "m5.xlarge"
        ).code
        == 0
    )
    out = _cli(path, "slurm", "config").out
    assert "NodeName=cloud[1-4] CPUs=4 RealMemory=15564 State=CLOUD" in out  # 16 GiB less 5 %
    assert "PartitionName=burst Nodes=cloud[1-4]" in out and "ResumeProgram=" in out and "PrivateData=cloud" in out


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
    bad = _process(path, "slurm", "resume", "cloud[1-")
    assert bad.code == 1 and "hostlist" in (tmp_path / "spool" / "slurm.log").read_text()


async def test_the_engine_loop_runs_the_slurm_reconcile(tmp_path: Path) -> None:
    """A long-lived engine (the REST server's) returns a machine whose node Slurm holds powered down, on its
    own, every `slurm.reconcile_interval`; `scontrol` here is a stand-in printing what the controller would."""
    from backends.local import LocalBackend

    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\necho 'NodeName=cloud1 Arch=x86_64 State=IDLE+CLOUD+POWERED_DOWN Partitions=b'\n")
    scontrol.chmod(0o755)
    config = base_config(tmp_path)
    config["slurm"] = {
        "scontrol": str(scontrol),
        "reconcile_interval": 0.2,
        "nodesets": [{"nodes": "cloud[1-2]", "template": "cpu"}],
    }
    backend = LocalBackend(load_settings(config=config), background=True)
    async with PluginSDK(backend=backend) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1")
        await sdk.create_request("cpu", 1, machine_names=["cloud1"], wait=True)
        await sdk.create_request("cpu", 1, wait=True)  # not a node's machine: never touched
        for _ in range(100):
            names = [m.name async for m in sdk.iterate("list_machines", active_only=True)]
            if "cloud1" not in names:
                break
            await asyncio.sleep(0.05)
        assert "cloud1" not in names and len(names) == 1


async def test_a_node_whose_machine_the_provider_took_back_goes_down_with_the_providers_reason(tmp_path: Path) -> None:
    """The reconcile marks a powered-up node without a machine DOWN; when a spot interruption took its machine,
    the reason Slurm shows is the provider's. `scontrol` is a stand-in that shows the node up and logs updates."""
    from backends.local import LocalBackend

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
    backend = LocalBackend(load_settings(config=config), background=True)
    async with PluginSDK(backend=backend) as sdk:
        await sdk.create_template(template_id="cpu", image_id="img-1")
        await sdk.create_request("cpu", 1, machine_names=["cloud1"], wait=True)
        for _ in range(200):
            if updates.exists() and "state=down" in updates.read_text():
                break
            await asyncio.sleep(0.05)
    down = next(line for line in updates.read_text().splitlines() if "state=down" in line)
    assert "nodename=cloud1" in down and "Reclaimed by the provider" in down and "SpotInstanceTermination" in down
