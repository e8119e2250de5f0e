// Drift of pinned launches (test/helpers/drift-scenarios.ts) on the JSON file store.
import t from 'tap';
import { runDriftScenarios } from '../helpers/drift-scenarios.js';

runDriftScenarios(t, 'json', () => Promise.resolve({}));
