// The storage contract of pages and search (test/helpers/storage-contract-search.ts) against the JSON file store.
import t from 'tap';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';
import { runSearchContract } from '../helpers/storage-contract-search.js';

runSearchContract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: await tempDataDir() }),
  runs: 60,
  shrink: true,
});
