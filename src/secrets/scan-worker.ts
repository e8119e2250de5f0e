// One worker thread of the secret scan pool (src/secrets/scan-pool.ts): runs `SecretScanner.scan` exactly as
// the service would on its own thread, for the texts the pool sends it, and parses the front matter of the
// record texts that open with one, as every later read would. The scanner's rules and allowlist matching are
// src/secrets/secret-scanner.ts's, the parse src/text/front-matter.ts's; this file only carries texts in and
// findings and parses out.
import { parentPort, workerData } from 'node:worker_threads';
import { frontMatterYaml, isFrontMatterField, parseFrontMatter, type ParsedFrontMatter } from '../text/front-matter.js';
import { SecretScanner } from './secret-scanner.js';
import type { ScanReply, ScanRequest } from './scan-pool.js';

const { knownSecrets } = workerData as { knownSecrets: string[] };

parentPort!.on('message', (request: ScanRequest) => {
  // `touched`: the scan met a candidate and would have read the owner's allowlist (the pool reads it on the
  // main thread and, when it holds entries, asks again with them).
  let touched = false;
  const scanner = new SecretScanner(knownSecrets, {
    allowlist: () => {
      touched = true;
      return Promise.resolve([]);
    },
  });
  scanner.scan(request.fields, request.scope).then(
    (findings) => {
      const frontMatters: [number, ParsedFrontMatter][] = [];
      for (const [i, [field, text]] of request.fields.entries()) {
        const yaml = isFrontMatterField(field) ? frontMatterYaml(text) : undefined;
        if (yaml !== undefined) frontMatters.push([i, parseFrontMatter(yaml)]);
      }
      parentPort!.postMessage({ id: request.id, findings, touched, frontMatters } satisfies ScanReply);
    },
    (err: unknown) => parentPort!.postMessage({ id: request.id, error: String((err as Error)?.message ?? err) } satisfies ScanReply),
  );
});
