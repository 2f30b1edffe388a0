// Preloaded into the MCP Inspector CLI (node --import): adds `Authorization: Bearer $MCP_BEARER` to every
// request it makes, what newer Inspector releases do with `--header`. Without MCP_BEARER it changes nothing.
const bearer = process.env.MCP_BEARER;
if (bearer) {
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set("authorization", `Bearer ${bearer}`);
    return realFetch(input, { ...init, headers });
  };
}
