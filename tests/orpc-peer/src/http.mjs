// Plain-JSON HTTP helpers for the peer's non-oRPC endpoints (the decision
// endpoint and the test hooks).

/** Largest plain-JSON request body the peer reads, in bytes. */
export const MAX_JSON_BODY = 16 * 1024;

/**
 * Reads the request body as JSON; resolves to the value, or `undefined`
 * when it is not JSON or is over MAX_JSON_BODY bytes.
 */
export async function readJsonBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_JSON_BODY) return undefined;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Answers `status` with `value` as `application/json`. */
export function sendJson(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}
