// MachineRegistry.activeEnrollment: the enrollment identity canvas tokens and grants are bound to.
import t from 'tap';
import { MachineRegistry } from '../../src/machines/machine-registry.js';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';

t.test('activeEnrollment returns enrolledAt while active, undefined once revoked, a later value after re-enrollment', async (t) => {
  const store = await JsonFileStore.open({ dataDir: await tempDataDir() });
  t.teardown(() => store.close());
  const frozen = new Date('2026-03-01T12:00:00.000Z');
  const machines = new MachineRegistry(store, { now: () => frozen });
  t.equal(await machines.activeEnrollment('agentlet-a'), undefined, 'unknown machine');
  await machines.enroll('agentlet-a', 'owner');
  const first = await machines.activeEnrollment('agentlet-a');
  t.equal(first, frozen.toISOString());
  await machines.revoke('agentlet-a', 'owner');
  t.equal(await machines.activeEnrollment('agentlet-a'), undefined, 'revoked');
  await machines.enroll('agentlet-a', 'owner');
  const second = await machines.activeEnrollment('agentlet-a');
  t.ok(second !== undefined && second > first!, `re-enrollment ${second} is strictly later than ${first}`);
});
