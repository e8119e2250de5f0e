// Builds a small example registry in a temporary DATA_DIR through the real HTTP API (the host's required
// defaults, a few host and machine resources, two machines, two profiles) and renders its capability graph,
// committed as docs/capabilities-example.svg and docs/capabilities-example.dot (written by
// `npm run generate`, scripts/generate.ts).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildApp } from '../src/app.js';
import { sortDiagnostics } from '../src/capabilities/diagnostics.js';
import { snapshotToDot } from '../src/capabilities/dot.js';
import { SvgRenderer } from '../src/capabilities/svg-renderer.js';
import type { CapabilitySnapshot } from '../src/schemas/capability.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

const token = (kind: string) => `arr_${kind}_${randomBytes(32).toString('base64url')}`;

/** The example registry's capability graph: its DOT and its SVG, as committed. */
export async function generateCapabilitiesExample(): Promise<{ dot: string; svg: string }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'arr-capabilities-'));
  try {
    const ownerToken = token('owner');
    const huabuToken = token('huabu');
    const config = loadConfig({
      DATA_DIR: dataDir,
      OWNER_TOKEN: ownerToken,
      HUABU_PROVIDER_TOKEN: huabuToken,
      CANVAS_TOKEN_SECRET: token('secret'),
      SEED_HUABU_RESOURCES: 'true', // the host's own records: huabu-access, local-resource-management
      RATE_LIMIT_WRITES_PER_MINUTE: '0',
    });
    const app = await buildApp({ config, logger: createLogger('silent') });
    try {
      const call = async (method: 'GET' | 'POST' | 'PUT', url: string, bearer: string, payload?: object) => {
        const res = await app.inject({ method, url, headers: { authorization: `Bearer ${bearer}` }, ...(payload ? { payload } : {}) });
        if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
        return res;
      };
      const machine = async (machineId: string) =>
        (await call('POST', '/api/acp/machines', ownerToken, { machineId })).json().token as string;
      const studio = await machine('mac-studio');
      const buildBox = await machine('build-box');
      const put = (provider: string, bearer: string, id: string, name: string, description: string, instructions: string) =>
        call('PUT', `/api/acp/providers/${provider}/resources/${id}`, bearer, { schemaVersion: 1, name, description, instructions });

      await put(
        'huabu',
        huabuToken,
        'web-search',
        'Web search',
        'Search the web through the host.',
        'POST your query to $HUABU_RFS_URL/search with `Authorization: Bearer $AGENTLET_TOKEN`.',
      );
      await put(
        'mac-studio',
        studio,
        'figma-export',
        'Figma export',
        'Export frames from the local Figma files.',
        'Run the exporter in $AGENT_RESOURCE_DIR/tools/figma-export.',
      );
      await put(
        'mac-studio',
        studio,
        'local-git',
        'Git',
        'Commit and branch in the working directory.',
        'Use git in the working directory; never push without asking.',
      );
      await put(
        'build-box',
        buildBox,
        'ci-runner',
        'CI runner',
        'Run the test suite on the build box.',
        'Run `make test` from $AGENT_RESOURCE_DIR/tools/ci; logs go to $LOG_DIR.',
      );
      // Same name as the host's record, on one machine: agents on build-box would see two of them.
      await put(
        'build-box',
        buildBox,
        'web-search-cache',
        'web search',
        'A local cache of web search results.',
        'Read cached results under $AGENT_RESOURCE_DIR/cache.',
      );

      const profile = (alias: string, agentletId: string, resourceIds: string[]) =>
        call('POST', '/api/acp/profiles', ownerToken, {
          alias,
          agentletId,
          workingDirPath: `/home/me/${alias.toLowerCase()}`,
          launch: { kind: 'acp-command', command: 'claude-code-acp' },
          resourceIds,
        });
      await profile('Designer', 'mac-studio', ['figma-export', 'local-git', 'web-search']);
      await profile('Builder', 'build-box', ['ci-runner']);

      // Profile IDs are random: name them after their alias (and sort again) so the committed files change
      // only when the example or the rendering does. The routes answer the same DOT and SVG for this state.
      const served = (await call('GET', '/api/acp/capabilities', ownerToken)).json<CapabilitySnapshot>();
      const renamed = new Map(served.components.filter((c) => c.kind === 'agent').map((c) => [c.id, `agent:prf-${c.name.toLowerCase()}`]));
      const id = (x: string) => renamed.get(x) ?? x;
      const order = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
      const snapshot: CapabilitySnapshot = {
        ...served,
        components: served.components.map((c) => ({ ...c, id: id(c.id) })).sort((a, b) => order(a.id, b.id)),
        edges: served.edges
          .map((e) => ({ ...e, from: id(e.from), to: id(e.to) }))
          .sort((a, b) => order(a.from, b.from) || order(a.kind, b.kind) || order(a.to, b.to)),
        aliases: served.aliases.map((a) => ({ ...a, component: id(a.component) })),
        diagnostics: sortDiagnostics(served.diagnostics.map((d) => ({ ...d, components: d.components.map(id).sort(order) }))),
      };
      const dot = snapshotToDot(snapshot);
      const renderer = new SvgRenderer();
      const svg = await renderer.render(dot).finally(() => renderer.close());
      return { dot, svg };
    } finally {
      await app.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
