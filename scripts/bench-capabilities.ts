// Times building the capability snapshot (components, edges, diagnostics, digest) of a large registry:
// RESOURCES resources (default 10000) over MACHINES machines and the host, PROFILES profiles (default
// 10000) selecting up to 8 resources each. Prints the median of RUNS runs (default 7).
//   npm run build && node dist/scripts/bench-capabilities.js [resources] [profiles] [runs]
import { buildSnapshot } from '../src/capabilities/snapshot.js';
import type { AgentProfile } from '../src/schemas/profile.js';
import type { AgentResource } from '../src/schemas/resource.js';

const [resourceCount = 10_000, profileCount = 10_000, runs = 7] = process.argv.slice(2).map(Number);
const MACHINES = 50;

let seed = 42;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const machineOf = (i: number) => `machine-${i % MACHINES}`;

const resources: AgentResource[] = Array.from({ length: resourceCount }, (_, i) => ({
  schemaVersion: 1,
  id: `resource-${i}`,
  name: `Resource ${i}`,
  provider: i % 5 === 0 ? 'huabu' : machineOf(i),
  description: `What resource ${i} is for.`,
  instructions:
    `Read $HUABU_RFS_URL/resources/resource-${i} with Authorization: Bearer $AGENTLET_TOKEN, then look under $AGENT_RESOURCE_DIR. `.repeat(
      4,
    ),
}));
const profiles: AgentProfile[] = Array.from({ length: profileCount }, (_, i) => {
  const machine = machineOf(i);
  const eligible = () => {
    const j = Math.floor(random() * resourceCount);
    return resources[j]!.provider === 'huabu' || resources[j]!.provider === machine ? resources[j]!.id : undefined;
  };
  const picked = [...new Set(Array.from({ length: 24 }, eligible).filter((x): x is string => x !== undefined))].slice(0, 8);
  return {
    schemaVersion: 2,
    id: `prf-${i.toString(32).padStart(16, 'a')}`,
    alias: `Agent ${i}`,
    agentletId: machine,
    workingDirPath: `/home/me/project-${i}`,
    resourceIds: picked,
    launch: { kind: 'acp-command', command: 'claude-code-acp' },
  };
});
const machines = Array.from({ length: MACHINES }, (_, i) => ({ machineId: `machine-${i}` }));
const input = { resources, profiles, machines, requiredResourceIds: ['resource-0', 'resource-5'] };

buildSnapshot(input); // warm-up
const times: number[] = [];
let snapshot = buildSnapshot(input);
for (let i = 0; i < runs; i++) {
  const start = process.hrtime.bigint();
  snapshot = buildSnapshot(input);
  times.push(Number(process.hrtime.bigint() - start) / 1e6);
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)]!;
console.log(
  `snapshot of ${resourceCount} resources and ${profileCount} profiles (${snapshot.components.length} components, ${snapshot.edges.length} edges, ${snapshot.diagnostics.length} diagnostics): median ${median.toFixed(1)} ms over ${runs} runs (min ${times[0]!.toFixed(1)}, max ${times.at(-1)!.toFixed(1)}); Node ${process.version}`,
);
