// Recall and false positives of the secret scan on the corpus in test/fixtures/secrets/ (public rule sets'
// documented true positives and invented keys of the formats agent hosts use; public skill documents, MCP
// server READMEs and placeholders as negatives): at least 99 % recall in every family, at most 1 % refused.
import t from 'tap';
import { measureCorpus } from './helpers/secret-corpus.js';

t.test('the scan finds at least 99 % of every credential family and refuses at most 1 % of ordinary text', async (t) => {
  const figures = await measureCorpus();
  for (const { family, found, total } of figures.recall) {
    t.ok(found / total >= 0.99, `${family}: ${found}/${total}`);
  }
  t.comment(`missed: ${figures.missed.length ? figures.missed.join(' | ') : 'none'}`);
  const { refused, total } = figures.negatives;
  t.ok(refused / total <= 0.01, `false positives: ${refused}/${total} (${JSON.stringify(figures.negatives.rules)})`);
  t.ok(figures.positives.total >= 600 && total >= 800, 'the corpus is the committed one');
});
