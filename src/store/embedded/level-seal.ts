/**
 * A seal: bytes a clean close leaves beside a LevelDB directory for the next open, trusted only
 * if nothing has been written to the database since (the store keeps its key filter in one, so a
 * large store reopens without scanning every key; engine-store.ts).
 *
 * The mark every writer invalidates is LevelDB's own sequence number: every op of every batch
 * takes the next one, whichever process, build or tool writes, and it survives in the files (write
 * batch headers in the logs, `last_sequence` in the MANIFEST). A seal records the newest sequence
 * its close found in the files (`level-verify.ts` › `lastSequence`, read while the engine still
 * holds the directory lock and has written everything), and the next open accepts it only if the
 * newest sequence after LevelDB opened is that one. So a write by a build that knows nothing of
 * seals, by a crashed session, or by another tool makes the seal worthless, never wrong. The only
 * error the check can make is to refuse a valid seal (a sequence read too low while a background
 * flush moved a log), which costs what having no seal costs.
 *
 * File `PERCOLATOR-SEAL` in the directory: crc32:u32be (of the rest) version:u32be(=1)
 * sequence:u64be payload. Written to a temporary name and renamed, not fsynced: a seal lost or
 * torn by a crash is refused by its CRC or absent, which is again only the cost of a scan.
 * Deleted by the open that reads it (the next write would invalidate it anyway).
 */
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';

export const SEAL_FILE = 'PERCOLATOR-SEAL';
const VERSION = 1;
const HEADER = 16;

/** Writes the seal for a database whose newest sequence is `sequence`. Throws on I/O errors. */
export async function writeSeal(dir: string, sequence: number, payload: Uint8Array): Promise<void> {
  const out = Buffer.alloc(HEADER + payload.byteLength);
  out.writeUInt32BE(VERSION, 4);
  out.writeBigUInt64BE(BigInt(sequence), 8);
  out.set(payload, HEADER);
  out.writeUInt32BE(crc32(out.subarray(4)), 0);
  const tmp = join(dir, `${SEAL_FILE}.tmp`);
  await writeFile(tmp, out);
  await rename(tmp, join(dir, SEAL_FILE));
}

/**
 * The payload of the directory's seal if it was made at sequence `sequence` (the database's
 * newest now), else null; the seal file is removed either way. Never throws: a seal is only ever
 * a shortcut.
 */
export async function takeSeal(dir: string, sequence: number): Promise<Uint8Array | null> {
  const path = join(dir, SEAL_FILE);
  let b: Buffer;
  try {
    b = await readFile(path);
  } catch {
    return null;
  }
  await unlink(path).catch(() => undefined);
  if (b.length < HEADER || b.readUInt32BE(0) !== crc32(b.subarray(4)) || b.readUInt32BE(4) !== VERSION) return null;
  if (b.readBigUInt64BE(8) !== BigInt(sequence)) return null;
  return b.subarray(HEADER);
}
