// Digests and revisions in the storage contract (test/helpers/storage-contract-revisions.ts) against the JSON file store.
import t from 'tap';
import { JsonFileStore } from '../../src/storage/json-file-store.js';
import { tempDataDir } from '../helpers/build.js';
import { runRevisionContract } from '../helpers/storage-contract-revisions.js';

let dataDir = '';
runRevisionContract(t, 'json', {
  fresh: async () => JsonFileStore.open({ dataDir: (dataDir = await tempDataDir()) }),
  reopen: async () => JsonFileStore.open({ dataDir }),
});
