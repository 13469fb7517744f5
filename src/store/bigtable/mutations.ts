/**
 * Our Mutation / ReadModifyWriteRule → v2 protos, with timestamps mapped (timestamps.ts).
 *
 * - setCell -1 ("server time") is sent as -1 unless `clientTime` is given; then the backend
 *   stamps it itself (milliseconds × 1000 of its clock). That happens when the store was opened
 *   with an injected clock, and always with timestampScale 1000 (the server's clock reading
 *   would otherwise come back ÷1000).
 * - A deleteFromColumn whose time range is empty on the wire deletes nothing and is dropped
 *   (servers reject start ≥ end).
 * - Inputs were validated first (validate.ts), so this never fails.
 */
import type { protos } from '@google-cloud/bigtable';
import { asBuffer } from '../bytes.js';
import type { Mutation, ReadModifyWriteRule } from '../types.js';
import type { TimestampMapping } from './timestamps.js';

export type ProtoMutation = protos.google.bigtable.v2.IMutation;
export type ProtoRule = protos.google.bigtable.v2.IReadModifyWriteRule;

const buf = (b: Uint8Array): Buffer => Buffer.from(asBuffer(b));

/** Translates mutations; the result may be shorter (dropped no-op deletes) or empty. */
export function toProtoMutations(mutations: readonly Mutation[], ts: TimestampMapping, clientTime: (() => number) | null): ProtoMutation[] {
  const out: ProtoMutation[] = [];
  let stamp: number | undefined; // one reading per call, like the server's
  for (const m of mutations) {
    if ('setCell' in m) {
      const s = m.setCell;
      let wire: string;
      if (s.timestampMicros === -1) {
        if (clientTime === null) wire = '-1';
        else {
          stamp ??= clientTime();
          wire = ts.toWire(stamp);
        }
      } else wire = ts.toWire(s.timestampMicros);
      out.push({
        setCell: { familyName: s.familyName, columnQualifier: buf(s.columnQualifier), timestampMicros: wire, value: buf(s.value) },
      });
    } else if ('deleteFromColumn' in m) {
      const d = m.deleteFromColumn;
      const base = { familyName: d.familyName, columnQualifier: buf(d.columnQualifier) };
      if (d.timeRange === undefined) {
        out.push({ deleteFromColumn: base });
        continue;
      }
      const w = ts.rangeToWire(d.timeRange.startTimestampMicros, d.timeRange.endTimestampMicros);
      if (w === null) continue;
      const timeRange: protos.google.bigtable.v2.ITimestampRange = {};
      if (w.start !== 0n) timeRange.startTimestampMicros = w.start.toString();
      if (w.end !== 0n) timeRange.endTimestampMicros = w.end.toString();
      out.push({ deleteFromColumn: { ...base, timeRange } });
    } else if ('deleteFromFamily' in m) {
      out.push({ deleteFromFamily: { familyName: m.deleteFromFamily.familyName } });
    } else {
      out.push({ deleteFromRow: {} });
    }
  }
  return out;
}

export function toProtoRules(rules: readonly ReadModifyWriteRule[]): ProtoRule[] {
  return rules.map((r) =>
    'appendValue' in r
      ? { familyName: r.familyName, columnQualifier: buf(r.columnQualifier), appendValue: buf(r.appendValue) }
      : { familyName: r.familyName, columnQualifier: buf(r.columnQualifier), incrementAmount: r.incrementAmount.toString() },
  );
}

/** Approximate encoded size of a mutation (for request-size batching). */
export function mutationBytes(m: Mutation): number {
  if ('setCell' in m) return m.setCell.familyName.length + m.setCell.columnQualifier.byteLength + m.setCell.value.byteLength + 24;
  if ('deleteFromColumn' in m) return m.deleteFromColumn.familyName.length + m.deleteFromColumn.columnQualifier.byteLength + 24;
  if ('deleteFromFamily' in m) return m.deleteFromFamily.familyName.length + 8;
  return 4;
}
