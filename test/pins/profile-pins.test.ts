// A profile's approved content (test/helpers/profile-pin-scenarios.ts) on the JSON file store.
import t from 'tap';
import { runProfilePinScenarios } from '../helpers/profile-pin-scenarios.js';

runProfilePinScenarios(t, 'json', () => Promise.resolve({}));
