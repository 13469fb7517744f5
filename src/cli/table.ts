/**
 * A plain-text table for the readable listings (`bench store`, `bench clumping`'s sweep): a
 * header line, then one line per row, each column as wide as its widest cell — the first
 * column left-aligned, the others (numbers) right-aligned. Numbers print with thousands
 * separators; null prints as "—".
 */
export type TableCell = string | number | null;

export function formatTable(header: readonly string[], rows: readonly (readonly TableCell[])[], indent = ''): string[] {
  const text = (c: TableCell): string => (c === null ? '—' : typeof c === 'number' ? c.toLocaleString('en-US') : c);
  const cells = [header.map(String), ...rows.map((r) => r.map(text))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) =>
    `${indent}${r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')}`.trimEnd(),
  );
}
