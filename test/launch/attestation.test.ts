// Launch attestations (test/helpers/attestation-scenarios.ts) on the JSON store.
import t from 'tap';
import { runAttestationScenarios } from '../helpers/attestation-scenarios.js';

runAttestationScenarios(t, 'json', () => Promise.resolve({}));
