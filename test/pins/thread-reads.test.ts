// Pinned launches and thread reads (test/helpers/pin-scenarios.ts) on the JSON file store.
import t from 'tap';
import { runPinScenarios } from '../helpers/pin-scenarios.js';

runPinScenarios(t, 'json', () => Promise.resolve({}));
