// One JSON call to a server under test over a real socket: bearer token (the owner's by default), a JSON body
// when given, and the answer's status, ETag, text and parsed body (undefined when empty).
import { CANARY } from './build.js';

export interface CallAnswer<B> {
  status: number;
  etag: string | null;
  text: string;
  body: B;
}

export async function call<B = Record<string, unknown>>(
  origin: string,
  method: string,
  url: string,
  body?: unknown,
  token: string = CANARY.owner,
): Promise<CallAnswer<B>> {
  const res = await fetch(origin + url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, etag: res.headers.get('etag'), text, body: (text === '' ? undefined : JSON.parse(text)) as B };
}
