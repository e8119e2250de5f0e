// The storage contract (test/storage-contract/contract.ts) against the JSON file store.
import t from 'tap';
import { JsonFileStore } from '../src/storage/json-file-store.js';
import { tempDataDir } from './helpers/build.js';
import { runContract } from './storage-contract/contract.js';

runContract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: await tempDataDir() }),
});
