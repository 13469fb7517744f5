/** Tests of bad input: what a call threw or rejected with, as `Class CODE` (or 'no error'). */

/** Runs `fn` (draining an async iterable it returns, awaiting anything else) and names its failure. */
export async function failure(fn: () => unknown): Promise<string> {
  try {
    const r = fn();
    if (r !== null && typeof r === 'object' && Symbol.asyncIterator in r) for await (const _ of r as AsyncIterable<unknown>);
    else await r;
  } catch (e) {
    return `${(e as Error).constructor.name} ${String((e as { code?: unknown }).code)}`;
  }
  return 'no error';
}
