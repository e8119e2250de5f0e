// What an MCP client receives for a capability's output: an image (a `data:image/...;base64,` `src`) as
// image content beside the rest as text; anything else as its JSON text, with `structuredContent` only
// when the output is an object (MCP's structured content is an object, never a list or a scalar).
import t from 'tap';
import { toolResult } from '../../src/routes/mcp.js';

t.test('an image output is image content, the rest of the output text and structured content', (t) => {
  t.same(toolResult({ src: 'data:image/svg+xml;base64,PHN2Zz4=', width: 16 }), {
    content: [
      { type: 'image', mimeType: 'image/svg+xml', data: 'PHN2Zz4=' },
      { type: 'text', text: '{"width":16}' },
    ],
    structuredContent: { width: 16 },
  });
  t.end();
});

t.test('a src that is not exactly an image data URL stays text', (t) => {
  for (const src of [
    'https://example.com/fox.png',
    'data:text/plain;base64,AAA=',
    'see data:image/png;base64,AAA=',
    'data:image/png;base64,AAA= and more',
    'data:image/png;base64,',
    'data:IMAGE/PNG;base64,AAA=',
  ]) {
    t.same(toolResult({ src }), { content: [{ type: 'text', text: JSON.stringify({ src }) }], structuredContent: { src } }, src);
  }
  t.same(
    toolResult({ src: 5 }),
    { content: [{ type: 'text', text: '{"src":5}' }], structuredContent: { src: 5 } },
    'a src that is no string',
  );
  t.end();
});

t.test('a list or a scalar is text only, with no structured content', (t) => {
  for (const output of [['data:image/png;base64,AAA='], 'text', 42, null])
    t.same(toolResult(output), { content: [{ type: 'text', text: JSON.stringify(output) }] }, JSON.stringify(output));
  t.end();
});
