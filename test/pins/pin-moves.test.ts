// Moving a thread's pin (test/helpers/pin-move-scenarios.ts) on the JSON file store.
import t from 'tap';
import { runPinMoveScenarios } from '../helpers/pin-move-scenarios.js';
import { auditLines } from '../helpers/audit.js';

runPinMoveScenarios(t, 'json', { env: () => Promise.resolve({}), audit: (h) => auditLines(h) });
