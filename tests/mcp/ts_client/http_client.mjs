// Drive the server's /mcp (Streamable HTTP) with the official TypeScript SDK client; print a JSON report.
//
//   node http_client.mjs PLAN.json
//
// PLAN: {"url": "http://127.0.0.1:PORT/mcp",
//        "bearer": "KEY" | null,                         // sent as `Authorization: Bearer KEY`
//        "oauth": {"username": ..., "password": ..., "totp": ...} | null,
//        "calls": [{"name": ..., "arguments": {...}, "progress": true, "abortAfterProgress": 1}]}
// With `oauth`, the SDK's OAuth client runs the whole flow: the first connect answers 401, the SDK reads the
// protected resource metadata and the authorization server metadata, registers a client, and sends the user
// to the authorization URL with a PKCE challenge; `redirectToAuthorization` below plays the user: it opens
// that URL over HTTP, posts the sign-in form and reads the code and state off the redirect to the client's
// redirect URI. The SDK then exchanges the code (with its verifier) for a token and the client reconnects.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const report = { connected: false, thrown: null, tools: [], calls: [], oauth: null, requests: [] };

function thrown(error) {
  return { code: error?.code ?? null, name: error?.name ?? null, message: String(error?.message ?? error) };
}

// Every request the client makes, in order (method, path, status, JSON-RPC method): what the flow went through.
// The SDK sends some messages without waiting for their answer (`notifications/cancelled`): `inFlight` holds
// every request not yet answered, and the script waits for them before it closes and reports.
const realFetch = globalThis.fetch;
const inFlight = new Set();
globalThis.fetch = (input, init) => {
  const answered = record(input, init);
  inFlight.add(answered);
  answered.finally(() => inFlight.delete(answered)).catch(() => {});
  return answered;
};

async function record(input, init) {
  const response = await realFetch(input, init);
  const url = new URL(typeof input === "string" ? input : input.url ?? String(input));
  let rpc = null;
  try {
    rpc = typeof init?.body === "string" ? JSON.parse(init.body).method ?? null : null;
  } catch {
    rpc = null;
  }
  report.requests.push({ method: init?.method ?? "GET", path: url.pathname, status: response.status, rpc });
  return response;
}

class SignInProvider {
  constructor(user) {
    this.user = user;
    this.saved = {};
    this.sentState = `state-${Math.random().toString(36).slice(2)}`;
    this.flow = { registered: null, authorizationUrl: null, redirect: null, state: null, code: null, verifier: null };
  }
  get redirectUrl() {
    return "http://127.0.0.1:9/callback";
  }
  get clientMetadata() {
    return {
      client_name: "pluginsdk TS test agent",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: this.user.authMethod ?? "client_secret_post",
    };
  }
  state() {
    return this.sentState;
  }
  clientInformation() {
    return this.saved.client;
  }
  saveClientInformation(info) {
    this.saved.client = info;
    this.flow.registered = { client_id: info.client_id, has_secret: Boolean(info.client_secret) };
  }
  tokens() {
    return this.saved.tokens;
  }
  saveTokens(tokens) {
    this.saved.tokens = tokens;
  }
  saveCodeVerifier(verifier) {
    this.saved.verifier = verifier;
  }
  codeVerifier() {
    return this.saved.verifier;
  }
  async redirectToAuthorization(url) {
    this.flow.authorizationUrl = Object.fromEntries(url.searchParams);
    // The user's browser: follow /authorize to the sign-in page, then post the form.
    const page = await realFetch(url, { redirect: "follow" });
    const html = await page.text();
    const field = (name) => html.match(new RegExp(`name="${name}" value="([^"]*)"`))?.[1];
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const form = new URLSearchParams({
      csrf: field("csrf") ?? "",
      request: field("request") ?? "",
      username: this.user.username,
      password: this.user.password,
      totp: this.user.totp ?? "",
    });
    const posted = await realFetch(new URL(page.url), {
      method: "POST",
      body: form,
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      redirect: "manual",
    });
    const location = posted.headers.get("location");
    if (posted.status !== 302 || !location) throw new Error(`sign-in answered ${posted.status}`);
    const back = new URL(location);
    this.flow.redirect = `${back.origin}${back.pathname}`;
    this.flow.state = back.searchParams.get("state");
    this.flow.code = back.searchParams.get("code");
  }
}

function transportFor(provider) {
  const headers = plan.bearer ? { Authorization: `Bearer ${plan.bearer}` } : {};
  return new StreamableHTTPClientTransport(new URL(plan.url), { authProvider: provider, requestInit: { headers } });
}

async function connect() {
  const provider = plan.oauth ? new SignInProvider(plan.oauth) : undefined;
  let client = new Client({ name: "pluginsdk-ts-http-test", version: "1.0.0" });
  let transport = transportFor(provider);
  try {
    await client.connect(transport);
  } catch (error) {
    if (!(provider && error instanceof UnauthorizedError)) throw error;
    await transport.finishAuth(provider.flow.code);
    report.oauth = { ...provider.flow, tokenType: provider.saved.tokens?.token_type,
      expiresIn: provider.saved.tokens?.expires_in, refresh: Boolean(provider.saved.tokens?.refresh_token),
      sentState: provider.sentState };
    client = new Client({ name: "pluginsdk-ts-http-test", version: "1.0.0" });
    transport = transportFor(provider);
    await client.connect(transport);
  }
  return client;
}

async function runCall(client, call) {
  const progress = [];
  const controller = new AbortController();
  const options = { signal: controller.signal, timeout: 120000 };
  if (call.progress) {
    options.onprogress = (p) => {
      progress.push(p);
      if (call.abortAfterProgress && progress.length >= call.abortAfterProgress) controller.abort("enough");
    };
    options.resetTimeoutOnProgress = true;
  }
  try {
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, options);
    return { name: call.name, thrown: null, progress, ...result };
  } catch (error) {
    return { name: call.name, thrown: thrown(error), progress };
  }
}

try {
  const client = await connect();
  report.connected = true;
  report.tools = (await client.listTools()).tools.map((t) => t.name);
  for (const call of plan.calls ?? []) report.calls.push(await runCall(client, call));
  await Promise.allSettled([...inFlight]);
  await client.close();
} catch (error) {
  report.thrown = thrown(error);
}
process.stdout.write(JSON.stringify(report) + "\n");
