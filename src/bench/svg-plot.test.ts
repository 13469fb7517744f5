/** The benchmark plots: well-formed SVG, every finite point drawn, log axes, escaping. */
import { describe, expect, it } from 'vitest';
import { checkSvg, formatTick, renderBarChart, renderLineChart } from './svg-plot.js';

const circles = (svg: string) => (svg.match(/<circle /g) ?? []).length;

describe('renderLineChart', () => {
  it('draws every series as a polyline with one circle per point, and a legend entry', () => {
    const svg = renderLineChart({
      title: 'Latency & rate <test>',
      xLabel: 'crawl rate (%/h)',
      yLabel: 'median latency (ms)',
      series: [
        {
          name: 'incremental',
          points: [
            [1, 40],
            [10, 45],
            [100, 2000],
          ],
        },
        {
          name: 'batch',
          points: [
            [1, 300],
            [10, 310],
            [100, 305],
          ],
        },
      ],
      logX: true,
      logY: true,
      markers: [{ x: 60, label: 'crossover' }],
    });
    expect(checkSvg(svg)).toEqual([]);
    expect((svg.match(/<polyline /g) ?? []).length).toBe(2);
    expect(circles(svg)).toBe(6);
    expect(svg).toContain('data-series="incremental"');
    expect(svg).toContain('data-series="batch"');
    expect(svg).toContain('Latency &amp; rate &lt;test&gt;');
    expect(svg).toContain('>crossover</text>');
    // Log axes: decade ticks covering the data (1 … 10 000 ms on y, 1 … 100 on x).
    for (const t of ['1', '10', '100', '1000', '10k']) expect(svg).toContain(`>${t}</text>`);
  });

  it('places points by value: on a log axis equal ratios are equal distances', () => {
    const svg = renderLineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: 's',
          points: [
            [1, 1],
            [10, 10],
            [100, 100],
          ],
        },
      ],
      logX: true,
      logY: true,
    });
    const pts = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)"/g)].map((m) => [Number(m[1]), Number(m[2])] as const);
    expect(pts).toHaveLength(3);
    const [a, b, c] = pts as [readonly [number, number], readonly [number, number], readonly [number, number]];
    expect(Math.abs(b[0] - a[0] - (c[0] - b[0]))).toBeLessThan(0.2);
    expect(Math.abs(a[1] - b[1] - (b[1] - c[1]))).toBeLessThan(0.2);
    expect(b[1]).toBeLessThan(a[1]); // larger y is higher up
  });

  it('leaves out values a log axis cannot show, and copes with no data', () => {
    const svg = renderLineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: 's',
          points: [
            [0, 5],
            [1, -1],
            [2, Number.NaN],
            [3, 7],
          ],
        },
      ],
      logX: true,
      logY: true,
    });
    expect(checkSvg(svg)).toEqual([]);
    expect(circles(svg)).toBe(1);
    expect(checkSvg(renderLineChart({ title: 'empty', xLabel: 'x', yLabel: 'y', series: [] }))).toEqual([]);
  });

  it('linear axes start at zero for positive data and use round steps', () => {
    const svg = renderLineChart({
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: 's',
          points: [
            [0, 3],
            [5, 17],
          ],
        },
      ],
    });
    expect(checkSvg(svg)).toEqual([]);
    for (const t of ['0', '5', '10', '15', '20']) expect(svg).toContain(`>${t}</text>`);
  });
});

describe('renderBarChart', () => {
  it('draws one bar per category and series', () => {
    const svg = renderBarChart({
      title: 'bars',
      yLabel: 'ops/s',
      categories: ['reads', 'writes'],
      series: [
        { name: 'raw', values: [1000, 800] },
        { name: 'txn', values: [900, 300] },
      ],
    });
    expect(checkSvg(svg)).toEqual([]);
    expect((svg.match(/<rect [^>]*><title>/g) ?? []).length).toBe(4);
    expect(svg).toContain('<title>txn, writes: 300</title>');
  });
});

describe('checkSvg', () => {
  it('finds the usual mistakes', () => {
    expect(checkSvg('<svg><g></svg>')).not.toEqual([]);
    expect(checkSvg('<svg><text>a < b</text></svg>')).not.toEqual([]);
    expect(checkSvg('<svg><text>a & b</text></svg>')).not.toEqual([]);
    expect(checkSvg('<svg></svg><svg></svg>')).not.toEqual([]);
    expect(checkSvg('<g></g>')).not.toEqual([]);
    expect(checkSvg('<svg><text x="1">a &amp; b</text><line/></svg>')).toEqual([]);
  });
});

describe('formatTick', () => {
  it('is short', () => {
    expect(formatTick(1)).toBe('1');
    expect(formatTick(2.5)).toBe('2.5');
    expect(formatTick(1000)).toBe('1000');
    expect(formatTick(20_000)).toBe('20k');
    expect(formatTick(3_000_000)).toBe('3M');
    expect(formatTick(0.01)).toBe('0.01');
  });
});
