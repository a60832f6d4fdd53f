// The lifecycle of an instance as the UI shows it (API.md "Lifecycle of an instance" and
// "Lifecycle policies"): durations in the API's form, the time left before status.expiresAt,
// what the server did by itself, and the arithmetic of Extend — the same as `gantry extend`
// (src/cli/extend.h): the new spec.lifecycle.ttl is the effective ttl (the instance's, else its
// profile's default) plus the extension, so status.expiresAt (startedAt + ttl) moves by it.
import type { ComputeInstance, ComputeProfile, ServiceInstance } from '../api/types';

// The lifecycle's parts of the API's types (web/src/api/schema.d.ts).
export type LifecycleStatus = NonNullable<ComputeInstance['status']>;
export type ProfileLifecycle = NonNullable<NonNullable<ComputeProfile['spec']>['lifecycle']>;
export type InstanceLifecycle = NonNullable<NonNullable<ComputeInstance['spec']>['lifecycle']>;

type Instance = ComputeInstance | ServiceInstance;
export const lifecycleStatus = (i: Instance): LifecycleStatus => i.status ?? {};
// Service instances have no lifecycle of their own (their profiles set none).
export const instanceLifecycle = (i: Instance): InstanceLifecycle =>
  ('lifecycle' in (i.spec ?? {}) ? (i.spec as NonNullable<ComputeInstance['spec']>).lifecycle : undefined) ?? {};
export const profileLifecycle = (p: ComputeProfile | null | undefined): ProfileLifecycle => p?.spec?.lifecycle ?? {};

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

// "90s", "30m", "8h", "3d" → seconds; null for anything else (as the server's ParseDuration).
export function parseDuration(text: string): number | null {
  const m = /^([0-9]{1,11})([smhd])$/.exec(text.trim());
  if (!m) return null;
  const n = Number(m[1]);
  if (n <= 0 || n > (36500 * 86400) / UNITS[m[2]]) return null;
  return n * UNITS[m[2]];
}

// The shortest exact form, as the server writes it: 5400 → "90m", 7200 → "2h".
export function formatDuration(seconds: number): string {
  if (seconds > 0 && seconds % 86400 === 0) return `${seconds / 86400}d`;
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

export const DURATION_HELP = 'A whole number and one unit: 90s, 30m, 8h, 3d.';

// The ttl that applies now, in seconds; null when neither the instance nor its profile sets one.
export function effectiveTtl(i: Instance, profile: ComputeProfile | null | undefined): number | null {
  const own = instanceLifecycle(i).ttl;
  const text = own ?? profileLifecycle(profile).ttl?.default;
  return text ? parseDuration(text) : null;
}

// The spec.lifecycle.ttl that makes the instance expire `by` seconds later than it does now.
export function extendedTtl(i: Instance, profile: ComputeProfile | null | undefined, by: number): string | null {
  const ttl = effectiveTtl(i, profile);
  return ttl === null ? null : formatDuration(ttl + by);
}

// Time left until `expiresAt` at `now` (ms): "2h 13m", "59m 58s", "45s"; "expired" once past.
export function timeLeft(expiresAt: string, now: number): string {
  const left = Math.floor((Date.parse(expiresAt) - now) / 1000);
  if (Number.isNaN(left)) return expiresAt;
  if (left <= 0) return 'expired';
  const d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}

const AUTOMATIC: Record<string, string> = { TTLExpired: 'TTL expired', Idle: 'idle', Scheduled: 'scheduled stop' };

// What the server did by itself ("Stopped: TTL expired"); '' when the last change was a person's.
export function automaticAction(i: Instance, phaseText: (phase: string) => string): string {
  const st = lifecycleStatus(i);
  const why = AUTOMATIC[st.reason ?? ''];
  return why ? `${phaseText(st.phase ?? 'NotDeployed')}: ${why}` : '';
}
