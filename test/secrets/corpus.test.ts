// Recall and false positives of the secret scan on the corpus in test/fixtures/secrets/ (public rule sets'
// documented true positives and invented keys of the formats agent hosts use; public skill documents, MCP
// server READMEs and placeholders as negatives): at least 99 % recall in every family, at most 1 % refused;
// at least 96 % of gitleaks' rule tests and 99.5 % of the agent-host formats found, and at most 0.5 % of
// whole files of real public skill folders refused.
import t from 'tap';
import { measureCorpus } from '../helpers/secret-corpus.js';

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

t.test("gitleaks' rule tests, agent-host formats, and whole real skill files", async (t) => {
  const { bySource, skillFiles, falsePositives } = await measureCorpus();
  t.ok(bySource.gitleaks.found / bySource.gitleaks.total >= 0.96, `gitleaks: ${bySource.gitleaks.found}/${bySource.gitleaks.total}`);
  t.ok(
    bySource.agentFormats.found / bySource.agentFormats.total >= 0.995,
    `agent-host formats: ${bySource.agentFormats.found}/${bySource.agentFormats.total}`,
  );
  t.ok(
    skillFiles.refused / skillFiles.total <= 0.005,
    `skill files refused: ${skillFiles.refused}/${skillFiles.total} (${falsePositives.map((f) => f.source).join(', ')})`,
  );
  t.ok(skillFiles.total >= 200, 'the committed skill files');
});
