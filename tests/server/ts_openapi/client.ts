// A typed client of the auth-service routes, from the server's own OpenAPI document: openapi-typescript
// writes `schema.d.ts` from /openapi.json, openapi-fetch sends the calls. Every body and query is
// spec-shaped (camelCase, the VAMS forms' extra fields included), so `tsc --strict` refuses to compile
// this file if the document names them otherwise. Run: node client.js BASE_URL API_KEY; prints
// {call: HTTP status} as one JSON line.
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const [baseUrl, apiKey] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: apiKey } });

async function main(): Promise<void> {
  const statuses: Record<string, number> = {};
  const role = await client.POST("/roles", {
    body: { roleName: "ts-readers", description: "Made by the typed client", id: "", sourceIdentifier: "" },
  });
  statuses.createRole = role.response.status;
  const assigned = await client.POST("/user-roles", { body: { userId: "ts-user", roleName: ["ts-readers"] } });
  statuses.createUserRoles = assigned.response.status;
  const constraint = await client.POST("/auth/constraints/{constraint_id}", {
    params: { path: { constraint_id: "ts-readers" } },
    body: {
      constraintId: "ts-readers",
      name: "ts readers",
      description: "Readers of database db1",
      objectType: "asset",
      criteriaAnd: [{ id: "row-1", field: "databaseId", operator: "equals", value: "db1" }],
      criteriaOr: [],
      groupPermissions: [{ id: "row-2", groupId: "ts-readers", permission: "GET", permissionType: "allow" }],
      userPermissions: [],
    },
  });
  statuses.createConstraint = constraint.response.status;
  const page = await client.GET("/auth/constraints", { params: { query: { pageSize: 10, maxItems: 20 } } });
  statuses.listConstraints = page.response.status;
  const check = await client.POST("/auth/check", {
    body: { userId: "ts-user", objectType: "asset", attributes: { databaseId: "db1" }, method: "GET" },
  });
  statuses.check = check.response.status;
  const created = await client.POST("/auth/api-keys", {
    body: { apiKeyName: "ts-key", description: "Made by the typed client", userId: "administrator" },
  });
  statuses.createApiKey = created.response.status;
  const keyId: string | undefined = created.data?.apiKeyId;
  if (keyId !== undefined) {
    const updated = await client.PUT("/auth/api-keys/{api_key_id}", {
      params: { path: { api_key_id: keyId } },
      body: { description: "Changed by the typed client", expiresAt: "", isActive: "true" },
    });
    statuses.updateApiKey = updated.response.status;
  }
  const keys = await client.GET("/auth/api-keys", { params: { query: { pageSize: 5 } } });
  statuses.listApiKeys = keys.response.status;
  console.log(JSON.stringify(statuses));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
