// A realized workload record as the store keeps it, for the storage tests of workload files and journals.
import type { WorkloadRecord } from '../../src/schemas/workload.js';

export function workloadRecord(canvasId: string, threadId: string, cwd = '/home/me/site'): WorkloadRecord {
  return {
    driverSchemaVersion: 1,
    canvasId,
    threadId,
    realizedAt: '2026-06-01T09:30:00.000Z',
    spec: {
      binding: { profileId: 'reviewer', alias: 'Reviewer' },
      agentletId: 'mac-a',
      cwd,
      resourceIds: ['web-search'],
      resourceScope: { canvasId, threadId },
      initialPreamble: ['boot'],
      env: { HUABU_RFS_URL: `http://huabu.local/api/rfs/${canvasId}`, HUABU_THREAD_ID: threadId },
    },
  };
}
