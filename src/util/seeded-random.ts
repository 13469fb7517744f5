/**
 * mulberry32: a small, fast, seeded PRNG with uniform output in [0, 1). Randomized tests,
 * corpora and simulations use it so a seed reproduces a run exactly. Not for anything secret.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A randomized test's seed: the environment variable `name` when set (a whole number; anything
 * else throws, as `Number('x')` would have run the test on NaN without a word), else `fallback`.
 */
export function seedFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  return seed;
}
