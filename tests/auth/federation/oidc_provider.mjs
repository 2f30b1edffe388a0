// A real OpenID provider on loopback for the federation tests: panva's oidc-provider (tests/clients).
// Usage: node oidc_provider.mjs CONFIG.json  (CONFIG: {module, client, jwks, accounts}); prints the issuer URL
// on its first line once it listens on 127.0.0.1 at a free port. Sign-in is the provider's own development
// login and consent pages: any password, the account is the login name (its claims from `accounts`).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { default: Provider } = await import(pathToFileURL(config.module).href);

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [config.client],
  jwks: config.jwks,
  scopes: ['openid', 'email', 'groups', 'offline_access'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], groups: ['groups'] },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  ttl: { IdToken: config.idTokenSeconds ?? 3600 },
  async findAccount(ctx, sub) {
    const known = config.accounts[sub] ?? {};
    return { accountId: sub, async claims() { return { sub, ...known }; } };
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));
server.on('request', provider.callback());
console.log(issuer);
