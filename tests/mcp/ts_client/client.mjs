// Drive an MCP stdio server with the official TypeScript SDK client and print what happened as JSON.
//
//   node client.mjs PLAN.json
//
// PLAN: {"command": ..., "args": [...], "env": {...}, "calls": [{"name": ..., "arguments": {...}}],
//        "readResources": true}
// A string argument "$result:N/json/pointer" is replaced by that value of call N's structured content.
// listTools runs first, so the client compiles every tool's outputSchema (ajv) and checks each structured
// result against it; a check that fails makes callTool throw, reported as `thrown` for that call.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));

function pointer(doc, path) {
  return path
    .split("/")
    .filter((p) => p !== "")
    .reduce((node, key) => (node == null ? undefined : node[key]), doc);
}

function resolve(value, results) {
  if (typeof value === "string" && value.startsWith("$result:")) {
    const [index, ...rest] = value.slice("$result:".length).split("/");
    return pointer(results[Number(index)]?.structuredContent, rest.join("/"));
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, results));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  }
  return value;
}

function thrown(error) {
  return { code: error?.code ?? null, message: String(error?.message ?? error) };
}

const transport = new StdioClientTransport({
  command: plan.command,
  args: plan.args,
  env: plan.env,
  stderr: "inherit",
});
const client = new Client({ name: "pluginsdk-ts-test", version: "1.0.0" });
const report = { server: null, tools: [], listBytes: 0, calls: [], resources: [] };

await client.connect(transport);
report.server = client.getServerVersion();

const listed = await client.listTools();
report.tools = listed.tools.map((t) => t.name);
report.listBytes = Buffer.byteLength(JSON.stringify(listed));

for (const call of plan.calls ?? []) {
  const args = resolve(call.arguments ?? {}, report.calls);
  try {
    const result = await client.callTool({ name: call.name, arguments: args });
    report.calls.push({ name: call.name, arguments: args, thrown: null, ...result });
  } catch (error) {
    report.calls.push({ name: call.name, arguments: args, thrown: thrown(error) });
  }
}

if (plan.readResources) {
  const read = async (uri) => {
    try {
      const result = await client.readResource({ uri });
      report.resources.push({ uri, thrown: null, contents: result.contents });
      return result;
    } catch (error) {
      report.resources.push({ uri, thrown: thrown(error) });
      return null;
    }
  };
  const collections = (await client.listResources()).resources;
  const bodies = {};
  for (const resource of collections) {
    const result = await read(resource.uri);
    if (result) bodies[resource.uri] = JSON.parse(result.contents[0].text);
  }
  // Each resource template `scheme://{field}` is read with the `field` of the collection's first item.
  for (const template of (await client.listResourceTemplates()).resourceTemplates) {
    const [scheme, rest] = template.uriTemplate.split("://");
    const field = rest.replace(/[{}]/g, "");
    const body = bodies[`${scheme}://`] ?? {};
    const items = Object.values(body).find((v) => Array.isArray(v)) ?? [];
    const id = items[0]?.[field];
    await read(id === undefined ? template.uriTemplate : `${scheme}://${encodeURIComponent(id)}`);
  }
  for (const uri of plan.failingResources ?? []) await read(uri);
}

await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
