/** Small helpers shared by the web index's observers (value codecs). */
export function utf8(v: Uint8Array | null | undefined): string | null {
  return v === null || v === undefined ? null : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
}

export function parseJson<T>(v: Uint8Array | null | undefined, fallback: T): T {
  const s = utf8(v);
  return s === null ? fallback : (JSON.parse(s) as T);
}

export function toInt(v: Uint8Array | null | undefined): number {
  const s = utf8(v);
  return s === null ? 0 : Number(s);
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
