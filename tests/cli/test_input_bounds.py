"""Files the CLI reads are bounded: size, YAML alias expansion, nesting (docs/input.md).

A 528-byte alias bomb given to `templates create -f` would expand to a 77 MB stored row: every file input —
`-f/--file`, `--config`, the templates directory — is refused past the limits, before it is built, with a
usage error (exit 2) that names the file. Nesting is refused past `MAX_DEPTH`, the limit of every door,
whatever the interpreter's recursion limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from pluginsdk import ConfigurationError, PluginSDK
from pluginsdk.config import load_settings
from pluginsdk.files import MAX_DEPTH, MAX_INPUT_BYTES, TOO_DEEP, InputTooLargeError, load_json, load_yaml
from tests.support.backends import base_config
from tests.support.cli import ROOT, clean_environment
from tests.support.cli import invoke as cli
from tests.support.remote import admin_key, running_server

RAISED = (
    "import sys; sys.setrecursionlimit(1 << 20); sys.argv[0] = 'pluginsdk'; from pluginsdk._entry import main; main()"
)
"""The CLI's entry point under a recursion limit raised far past the depth of any test file (as mypy raises it)."""


def bomb(levels: int = 9) -> str:
    """The "billion laughs": each level lists the previous one nine times (9**levels scalars)."""
    lines = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def template_bomb() -> str:
    body = "\n".join("  " + line for line in bomb(7).splitlines())  # 9**7 scalars: ~30 MB once written out
    return f"template_id: boom\nimage_id: ami-1\nconfiguration:\n{body}\n"


def nested(levels: int) -> str:
    """A template file nesting `levels` deep: the object, then `configuration`'s objects."""
    inner = '{"a": ' * (levels - 2) + "{}" + "}" * (levels - 2)
    return '{"template_id": "d", "image_id": "ami-1", "configuration": ' + inner + "}"


def invoke(tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    cfg = tmp_path / "plugin.json"
    cfg.write_text(json.dumps(base_config(tmp_path)))
    res = cli({**os.environ, **env}, "--config", str(cfg), *args)
    return res.code, res.out + res.err


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("bomb.yaml", template_bomb(), "once its aliases are expanded"),
        ("self.yaml", "template_id: loop\nimage_id: ami-1\nconfiguration: &c {inner: *c}\n", "recursive"),
        ("deep.yaml", "template_id: d\nimage_id: a\nconfiguration: " + "[" * 200 + "]" * 200 + "\n", "nested"),
        ("deep.json", '{"template_id": "d", "configuration": ' + "[" * 5000 + "]" * 5000 + "}", TOO_DEEP),
        ("big.json", '{"template_id": "b", "image_id": "a", "description": "' + "x" * MAX_INPUT_BYTES + '"}', "MiB"),
    ],
)
def test_a_file_input_past_the_limits_is_a_usage_error_and_nothing_is_stored(
    tmp_path: Path, name: str, content: str, says: str
) -> None:
    assert len(bomb().encode()) < 600  # the size of the attack: small
    path = tmp_path / name
    path.write_text(content)
    code, output = invoke(tmp_path, "templates", "create", "-f", str(path))
    assert code == 2, output
    assert "VALIDATION_ERROR" in output and name in output and says in output
    code, output = invoke(tmp_path, "templates", "list")
    assert code == 0 and json.loads(output)["total_count"] == 0


def test_anchors_and_aliases_within_the_limits_still_work(tmp_path: Path) -> None:
    path = tmp_path / "shared.yaml"
    path.write_text("template_id: web\nimage_id: ami-1\ntags: &t {team: web}\nconfiguration: {tags: *t}\n")
    code, output = invoke(tmp_path, "templates", "create", "-f", str(path))
    assert code == 0, output
    assert json.loads(output)["template_id"] == "web"


def test_a_configuration_file_past_the_limits_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "plugin.yaml"
    cfg.write_text("app:\n" + "\n".join("  " + line for line in bomb().splitlines()) + "\n")
    with pytest.raises(ConfigurationError, match="aliases are expanded") as exc:
        load_settings(config_path=cfg, environ={})
    assert exc.value.key == "config_path"


def test_a_json_configuration_file_nested_past_the_limit_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "plugin.json"
    cfg.write_text('{"app": {"x": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}}")
    with pytest.raises(ConfigurationError, match=TOO_DEEP) as exc:
        load_settings(config_path=cfg, environ={})
    assert exc.value.key == "config_path"


async def test_a_template_file_past_the_limits_is_skipped(tmp_path: Path) -> None:
    tdir = tmp_path / "templates"
    tdir.mkdir()
    (tdir / "bomb.yaml").write_text(template_bomb())
    (tdir / "deep.json").write_text(nested(MAX_DEPTH + 1))
    (tdir / "ok.yaml").write_text("template_id: fine\nimage_id: ami-1\n")
    async with PluginSDK(config=base_config(tmp_path, templates={"dir": str(tdir)})) as sdk:
        assert [t.template_id for t in (await sdk.list_templates()).templates] == ["fine"]


def test_the_expansion_check_is_linear_and_exact_at_the_edges() -> None:
    with pytest.raises(InputTooLargeError):
        load_yaml(bomb(12), "x")  # 9**12 scalars: refused at once, never built
    assert load_yaml(bomb(3), "x")["l2"][0][0] == ["lol"] * 9
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert load_yaml(deep, "x") is not None
    with pytest.raises(InputTooLargeError, match=TOO_DEEP):
        load_yaml("[" + deep + "]", "x")


def test_json_nesting_is_refused_past_the_one_limit_and_brackets_in_strings_do_not_count() -> None:
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    for levels in (MAX_DEPTH + 1, 250, 100_000):
        with pytest.raises(InputTooLargeError, match=TOO_DEEP):
            load_json("[" * levels + "]" * levels)
    brackets = json.dumps(["[" * 100, '"{' * 100])
    assert load_json(brackets) == ["[" * 100, '"{' * 100]


@pytest.fixture(params=["local", "remote"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, ...]]:
    """The CLI's global arguments for the local engine, or for a real server on loopback (its environment set)."""
    if request.param == "local":
        yield ()
        return
    config = base_config(tmp_path)
    key = anyio.run(admin_key, config)
    with running_server(config) as url, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PLUGIN_API_URL", url)
        mp.setenv("PLUGIN_API_KEY", key)
        yield ("--backend", "remote")


def test_a_file_exactly_at_the_depth_limit_is_stored_and_one_deeper_is_refused(
    tmp_path: Path, backend: tuple[str, ...]
) -> None:
    (tmp_path / "at.json").write_text(nested(MAX_DEPTH))
    code, output = invoke(tmp_path, *backend, "templates", "create", "-f", str(tmp_path / "at.json"))
    assert code == 0, output
    code, output = invoke(tmp_path, *backend, "templates", "show", "d")
    levels, value = 1, json.loads(output)["template"]["configuration"]
    while value:
        levels, value = levels + 1, value["a"]
    assert code == 0 and levels == MAX_DEPTH - 1  # the file's object is the first level
    (tmp_path / "over.json").write_text(nested(MAX_DEPTH + 1).replace('"d"', '"e"'))
    code, output = invoke(tmp_path, *backend, "templates", "create", "-f", str(tmp_path / "over.json"))
    assert code == 2 and TOO_DEEP in output and "over.json" in output, output
    code, output = invoke(tmp_path, *backend, "templates", "create", "--data", nested(MAX_DEPTH + 1))
    assert code == 2 and TOO_DEEP in output, output
    code, output = invoke(tmp_path, *backend, "templates", "list")
    assert [t["template_id"] for t in json.loads(output)["templates"]] == ["d"]


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5000])
def test_a_deep_file_is_refused_with_the_recursion_limit_raised(tmp_path: Path, levels: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text(nested(levels))
    cfg = tmp_path / "plugin.json"
    cfg.write_text(json.dumps(base_config(tmp_path)))
    args = ["--config", str(cfg), "--format", "json", "templates", "create", "-f", str(path)]
    res = subprocess.run(
        [sys.executable, "-c", RAISED, *args], capture_output=True, text=True, env=clean_environment(),
        cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 2, res.stdout + res.stderr
    assert json.loads(res.stdout)["details"]["field"] == "file" and TOO_DEEP in res.stdout
