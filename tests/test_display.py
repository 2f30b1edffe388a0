"""Results shown to people: a compact `str()`, and in Jupyter a table for lists, key/value for one object
(`pluginsdk/models/_display.py`). Results come from the SDK on both backends; the notebook test runs a
real kernel through nbclient."""

from __future__ import annotations

from pathlib import Path

from pluginsdk import PluginSDK
from tests.support.notebook import jupyter


def pretty(obj: object) -> str:
    from IPython.lib.pretty import pretty as ipython_pretty

    return str(ipython_pretty(obj))


async def test_a_list_is_a_table_one_object_key_value(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1", instance_type="t3.small")
    await sdk.create_template(template_id="db", image_id="ami-2", description="<script>alert(1)</script>")
    listed = await sdk.list_templates()
    page = listed._repr_html_()
    assert page.count("<table>") == 2  # the list's own fields (total_count), then the templates' table
    assert "<summary>templates (2)</summary>" in page and '<th style="text-align:left">template_id</th>' in page
    assert page.index(">db<") < page.index(">web<")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    text = pretty(listed).splitlines()
    assert text[0] == "TemplateList" and text[1] == "  templates (2):"
    assert text[2].split()[:3] == ["template_id", "name", "description"] or text[2].split()[0] == "template_id"
    assert text[3].split()[0] == "db" and text[4].split()[0] == "web"
    one = await sdk.get_template("web")
    kv = pretty(one)
    assert kv.splitlines()[:3] == ["TemplateResult", "  template:", "    template_id: web"]
    assert "    instance_type: t3.small" in kv.splitlines()
    assert '<th style="text-align:left">image_id</th><td style="text-align:left">ami-1</td>' in one._repr_html_()


async def test_str_is_one_compact_line(sdk: PluginSDK) -> None:
    await sdk.create_template(template_id="web", image_id="ami-1")
    created = await sdk.create_request("web", 2, wait=True, timeout=60)
    line = str(created)
    assert "\n" not in line and line.startswith(f"RequestCreated(request_id='{created.id}', status='completed'")
    assert "machines=[2 Machine]" in line
    assert "timestamp" not in line and "success" not in line and "created_at" not in line
    request = await sdk.get_request(created.id, long=True)
    assert len(str(request)) < 400 and "request_type" not in str(request) and "machines=[2 Machine]" in str(request)
    assert str(await sdk.list_templates()).startswith("TemplateList(templates=[1 Template], total_count=1, message=")


async def test_long_lists_are_cut_and_secrets_never_shown(local_sdk: PluginSDK) -> None:
    for i in range(25):
        await local_sdk.create_template(template_id=f"t{i:02d}", image_id="ami-1")
    listed = await local_sdk.list_templates(limit=100)
    assert "… and 5 more" in listed._repr_html_() and "… and 5 more" in pretty(listed)
    assert listed._repr_html_().count("<tr>") == 2 + 1 + 20  # total_count and message, header, 20 rows
    key = await local_sdk.create_api_key(api_key_name="k1", description="notebook key", user_id="administrator")
    for shown in (str(key), repr(key), pretty(key), key._repr_html_()):
        assert key.api_key not in shown
    assert '<th style="text-align:left">api_key</th><td style="text-align:left">***</td>' in key._repr_html_()


def test_results_display_in_a_jupyter_notebook(tmp_path: Path) -> None:
    nbformat, nbclient = jupyter()
    cells = [
        "from pluginsdk import PluginSDK\n"
        f"sdk = PluginSDK(config={{'storage': {{'path': {str(tmp_path / 'nb.db')!r}}}}})\n"
        "await sdk.start()\n"
        "await sdk.create_template(template_id='web', image_id='ami-1', instance_type='t3.small')\n"
        "await sdk.create_template(template_id='db', image_id='ami-2')",
        "await sdk.list_templates()",
        "await sdk.get_template('web')",
        "print(await sdk.list_templates())\nawait sdk.aclose()",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # the kernel inherits this environment, without PLUGIN_* (tests/conftest.py)  # fmt: skip
    listed, one, printed = (nb.cells[i].outputs for i in (1, 2, 3))
    assert "<table>" in listed[0].data["text/html"] and ">db<" in listed[0].data["text/html"]
    assert listed[0].data["text/plain"].startswith("TemplateList\n  templates (2):")
    assert "template_id: web" in one[0].data["text/plain"] and "ami-1" in one[0].data["text/html"]
    assert printed[0].text.startswith("TemplateList(templates=[2 Template], total_count=2, message=")


async def test_tables_keep_the_key_columns(backend_kind: str, tmp_path: Path) -> None:
    """A failed machine's reason, a constraint's permissions and an audit record's change are in the tables."""
    from tests.support.backends import open_sdk

    async with open_sdk(backend_kind, tmp_path, provider={"local": {"failure_rate": 1.0, "boot_delay": 0.05}}) as sdk:
        await sdk.create_template(template_id="web", image_id="ami-1", instance_type="t3.small")
        await sdk.create_request("web", 1, wait=True)
        machines = pretty(await sdk.list_machines())
        assert "status_reason" in machines.splitlines()[2] and "failed" in machines
        constraints = await sdk.list_constraints()
        assert "role:admin allow GET, PUT, POST, DELETE" in pretty(constraints)
        assert ">permissions<" in constraints._repr_html_()
        await sdk.create_role(role_name="viewer", description="reads things")
        audit = pretty(await sdk.list_audit_records())
        assert "change" in audit and "created" in audit
