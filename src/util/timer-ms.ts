/**
 * Durations a Node timer can take. Past 2^31 − 1 ms Node fires a timer at once (every time: a
 * lease of 1e10 ms was rewritten ~700 times a second), so options that become timers are bounded.
 */

/** The longest delay a Node timer takes (2^31 − 1 ms, ~24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

/** Whether `value` is a duration from `min` to MAX_TIMER_MS ms (a whole number of ms with `integer`). */
export function isTimerMs(value: unknown, min = 0, integer = false): value is number {
  return typeof value === 'number' && (integer ? Number.isInteger(value) : Number.isFinite(value)) && value >= min && value <= MAX_TIMER_MS;
}
