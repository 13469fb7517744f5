/** The bank check's verdict, field by field: no anomaly, no worker error, no lock left, the total kept. */
import { expect } from 'vitest';
import type { BankResult } from '../../src/check/bank.js';

export function expectCleanBank(r: BankResult): void {
  expect({ anomalies: r.anomalies, errors: r.errors, locksLeft: r.locksLeft, totalAfter: r.totalAfter }).toEqual({
    anomalies: [],
    errors: [],
    locksLeft: 0,
    totalAfter: r.totalBefore,
  });
}
