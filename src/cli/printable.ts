/** Printable form of bytes for the command line: UTF-8 when it is clean text, else `0x` and hex. */
export function printable(b: Uint8Array): string {
  const s = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  return /^[\x20-\x7e\u00a0-\uffff]*$/.test(s) && !s.includes('\ufffd')
    ? s
    : `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}
