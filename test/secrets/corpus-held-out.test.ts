// SecretScanner against the held-out secret corpus (test/fixtures/secret-corpus, built apart from the rules): recall on the credential formats of
// AI and developer platforms, per family group and overall, and false positives on real skill documents and
// agent instructions. The same measurement as `npm run secrets:held-out`; each family's figure is printed.
import t from 'tap';
import { SecretScanner } from '../../src/secrets/secret-scanner.js';
import { measure, report } from '../../scripts/secret-corpus/measure.js';

const RECALL_TARGET = 0.99;
const FALSE_POSITIVE_LIMIT = 0.01;

t.test('the scanner finds the credentials of the corpus and leaves skill documents alone', async (t) => {
  const m = await measure(new SecretScanner());
  t.comment(`\n${report(m)}`);
  t.ok(m.overall.total >= 500 && m.negatives >= 600, `corpus loaded (${m.overall.total} positives, ${m.negatives} negatives)`);
  for (const g of m.groups) t.ok(g.recall >= RECALL_TARGET, `recall on ${g.name} ${g.found}/${g.total} >= 99 %`);
  t.ok(m.overall.recall >= RECALL_TARGET, `overall recall ${m.overall.found}/${m.overall.total} >= 99 %`);
  t.ok(m.falsePositiveRate <= FALSE_POSITIVE_LIMIT, `false positives ${m.flagged.length}/${m.negatives} <= 1 %`);
});
