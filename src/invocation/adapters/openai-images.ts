// openai-images: image generation through OpenAI Images. Input: Huabu's
// imageGenerationInvocationInputSchema. Request: OpenAI's POST /v1/images/generations with one image
// (`n: 1`), Huabu's defaults for size (1024x1024) and quality (low). Result: Huabu's `{src, width, height,
// revisedPrompt?}`; `src` is the image itself as a `data:image/png;base64,` URL (or the vendor's URL when it
// answers with one), because this service keeps no artifact store. Reference artifacts name canvas
// artifacts this service cannot read: refused, never sent.
import type { InputIssue } from '../input-issue.js';
import { defineAdapter, isRecord, TEXT_4000 } from './adapter.js';

/** Size rules per model family, after Huabu's shared image capability registry. */
const FIXED_SIZES = ['1024x1024', '1024x1536', '1536x1024'];
const FREE_SIZE = { edgeMultiple: 16, longEdgeMax: 3840, aspectRatioMax: 3, pixelsMin: 655_360, pixelsMax: 8_294_400 };
const IMAGE_DEFAULTS = { size: '1024x1024', quality: 'low' };

/** Why `size` does not suit `model`, or undefined when it does (unknown families: any WIDTHxHEIGHT). */
export function imageSizeProblem(model: string, size: string): string | undefined {
  if (size === 'auto') return undefined;
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(size);
  if (model === 'gpt-image-1' || model === 'gpt-image-1-mini') {
    return FIXED_SIZES.includes(size) ? undefined : `${model} takes the sizes ${[...FIXED_SIZES, 'auto'].join(', ')}`;
  }
  if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) return 'must be WIDTHxHEIGHT (e.g. 1024x1024) or auto';
  if (model !== 'gpt-image-2') return undefined;
  const [w, h] = [Number(m[1]), Number(m[2])];
  const c = FREE_SIZE;
  if (w % c.edgeMultiple !== 0 || h % c.edgeMultiple !== 0) return `both edges must be multiples of ${c.edgeMultiple}`;
  if (Math.max(w, h) > c.longEdgeMax) return `the long edge must be at most ${c.longEdgeMax} px`;
  if (Math.max(w, h) / Math.min(w, h) > c.aspectRatioMax) return `the aspect ratio must be at most ${c.aspectRatioMax}:1`;
  if (w * h < c.pixelsMin || w * h > c.pixelsMax) return `the image must have ${c.pixelsMin} to ${c.pixelsMax} pixels`;
  return undefined;
}

export const openaiImages = defineAdapter({
  name: 'openai-images',
  capability: 'image generation',
  vendor: 'OpenAI Images',
  reference: 'https://platform.openai.com/docs/api-reference/images/create',
  method: 'POST',
  auth: { header: 'authorization', scheme: 'Bearer' },
  defaults: {
    endpoint: 'https://api.openai.com/v1/images/generations',
    timeoutMs: 120_000,
    maxInputBytes: 32 * 1024,
    maxOutputBytes: 8 * 1024 * 1024,
    perGrant: { concurrency: 1, perMinute: 10 },
  },
  defaultModel: 'gpt-image-2',
  inputSchema: {
    type: 'object',
    properties: {
      prompt: TEXT_4000,
      referenceArtifactSrcs: { type: 'array', maxItems: 16, items: { type: 'string', minLength: 1, maxLength: 4096 } },
      size: { type: 'string', minLength: 1, maxLength: 32 },
      quality: { type: 'string', enum: ['low', 'medium', 'high', 'auto'], maxLength: 8 },
    },
    required: ['prompt'],
    additionalProperties: false,
  },
  moreInputIssues(input, model) {
    const issues: InputIssue[] = [];
    if (Array.isArray(input.referenceArtifactSrcs) && input.referenceArtifactSrcs.length > 0) {
      issues.push({
        field: 'body/input/referenceArtifactSrcs',
        message:
          'reference artifacts are not supported here: this service cannot read the canvas artifacts they name; generate from the prompt alone',
      });
    }
    if (typeof input.size === 'string') {
      const problem = imageSizeProblem(model!, input.size.trim());
      if (problem) issues.push({ field: 'body/input/size', message: problem });
    }
    return issues;
  },
  request(input, model) {
    return {
      body: {
        model,
        prompt: (input.prompt as string).trim(),
        n: 1,
        size: (input.size as string | undefined)?.trim() ?? IMAGE_DEFAULTS.size,
        quality: (input.quality as string | undefined) ?? IMAGE_DEFAULTS.quality,
      },
    };
  },
  result(answer, input) {
    const first = isRecord(answer) && Array.isArray(answer.data) && isRecord(answer.data[0]) ? answer.data[0] : undefined;
    if (!first) return { ok: false };
    let src: string;
    if (typeof first.b64_json === 'string' && /^[A-Za-z0-9+/]+={0,2}$/.test(first.b64_json))
      src = `data:image/png;base64,${first.b64_json}`;
    else if (typeof first.url === 'string' && /^https:\/\//.test(first.url)) src = first.url;
    else return { ok: false };
    const size = (input.size as string | undefined)?.trim() ?? IMAGE_DEFAULTS.size;
    const m = /^(\d+)x(\d+)$/.exec(size);
    return {
      ok: true,
      result: {
        src,
        width: m ? Number(m[1]) : 0,
        height: m ? Number(m[2]) : 0,
        ...(typeof first.revised_prompt === 'string' && first.revised_prompt !== '' ? { revisedPrompt: first.revised_prompt } : {}),
      },
    };
  },
});
