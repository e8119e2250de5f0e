// The Node versions are honest: every package npm installs from the lockfile declares that it runs on the
// lowest Node version package.json's `engines` admits and on the Node 24 CI runs (so `npm ci` on either warns
// about none), and the README, CI and the Docker image agree with `engines`.
import t from 'tap';
import { readFileSync } from 'node:fs';
import semver from 'semver';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};
const floor = semver.minVersion(pkg.engines.node)!.version;
const ci = readFileSync('.ci/run', 'utf8');
const ciNode24 = /^NODE24_VERSION=(\S+)$/m.exec(ci)?.[1];

t.test(`every locked package runs on Node ${floor} (the floor) and on CI's Node 24`, (t) => {
  t.ok(ciNode24 && semver.valid(ciNode24), `.ci/run names its Node 24 (${ciNode24})`);
  for (const node of [floor, ciNode24!]) {
    const refusing = Object.entries(lock.packages)
      .filter(([where]) => where !== '')
      .flatMap(([where, entry]) => {
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return range !== undefined && !semver.satisfies(node, range) ? [`${where}@${entry.version} needs node ${range}`] : [];
      });
    t.same(refusing, [], `none needs another Node than ${node}`);
  }
  t.end();
});

t.test('the README, CI and the Docker image agree with engines', (t) => {
  t.match(
    readFileSync('README.md', 'utf8'),
    new RegExp(`Node\\.js ${semver.major(floor)}\\.${semver.minor(floor)} or newer`),
    'the README names the floor',
  );
  t.ok(semver.satisfies(ciNode24!, pkg.engines.node), "CI's Node 24 is within engines");
  const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(readFileSync('Dockerfile', 'utf8'))?.[1];
  t.ok(image && semver.satisfies(`${image}.0.0`, pkg.engines.node), `the Docker image's Node ${image} is within engines`);
  t.end();
});
