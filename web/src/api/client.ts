// The one place the UI talks HTTP to gantryd (same origin). Every refusal becomes an ApiError
// carrying the server's Status message, so screens show what the API said, never a blank page.
//
// Authentication follows notes/auth-contract: the session is an HttpOnly cookie the browser
// sends by itself; mutating requests add X-Gantry-CSRF with the token from login/whoami.
// A 401 on any API call tells the app (onUnauthorized) to show the login screen.

export interface StatusCause { field?: string; message?: string; reason?: string }
export interface KubeStatus {
  kind?: string; status?: string; message?: string; reason?: string; code?: number;
  details?: { causes?: StatusCause[] };
}

export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly causes: StatusCause[];
  constructor(code: number, message: string, reason = '', causes: StatusCause[] = []) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.causes = causes;
  }
}

export const GROUP_PATH = '/apis/paas.gantry.dev/v1';

let csrfToken = '';
export function setCsrfToken(token: string) { csrfToken = token; }

let unauthorizedHandler: (() => void) | null = null;
export function onUnauthorized(handler: (() => void) | null) { unauthorizedHandler = handler; }

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const s = JSON.parse(text) as KubeStatus;
    if (s && s.kind === 'Status') {
      return new ApiError(res.status, s.message || `${res.status} ${res.statusText}`, s.reason ?? '',
        s.details?.causes ?? []);
    }
  } catch { /* not JSON */ }
  return new ApiError(res.status, text.trim() || `${res.status} ${res.statusText}`);
}

function headersFor(method: string, contentType?: string): Record<string, string> {
  const h: Record<string, string> = { Accept: 'application/json' };
  if (contentType) h['Content-Type'] = contentType;
  if (method !== 'GET' && method !== 'HEAD' && csrfToken) h['X-Gantry-CSRF'] = csrfToken;
  return h;
}

export async function request<T>(method: string, path: string, body?: unknown,
  contentType = 'application/json', signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: headersFor(method, body === undefined ? undefined : contentType),
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    signal,
  });
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && !path.startsWith('/auth/')) unauthorizedHandler?.();
    throw err;
  }
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

// A GET whose answer is text in another media type (a usage report as `text/csv`); refusals
// are ApiErrors as for JSON.
export async function getText(path: string, accept: string): Promise<string> {
  const res = await fetch(path, { headers: { Accept: accept }, credentials: 'same-origin' });
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401) unauthorizedHandler?.();
    throw err;
  }
  return res.text();
}

export const get = <T>(path: string, signal?: AbortSignal) => request<T>('GET', path, undefined, undefined, signal);
export const post = <T>(path: string, body: unknown = {}) => request<T>('POST', path, body);
export const put = <T>(path: string, body: unknown) => request<T>('PUT', path, body);
export const patch = <T>(path: string, body: unknown) =>
  request<T>('PATCH', path, body, 'application/merge-patch+json');
export const del = <T>(path: string, body?: unknown) => request<T>('DELETE', path, body);

// DELETE with this body destroys (and deletes) what depends on the object first: a compute
// instance's service instances (instead of a 409 listing them).
export const FOREGROUND_DELETE = { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' };

export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

// Paths of the API's resources.
export function collectionPath(plural: string, project?: string): string {
  return project ? `${GROUP_PATH}/namespaces/${encodeURIComponent(project)}/${plural}` : `${GROUP_PATH}/${plural}`;
}
export function objectPath(plural: string, project: string | undefined, name: string): string {
  return `${collectionPath(plural, project)}/${encodeURIComponent(name)}`;
}

export interface WatchEvent<T> { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'ERROR' | 'BOOKMARK'; object: T }

// Reads a newline-delimited stream (a watch or a followed log) until it ends or `signal` aborts.
async function readLines(res: Response, onLine: (line: string) => void, signal: AbortSignal) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || signal.aborted) break;
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        onLine(line);
      }
    }
    if (buffer) onLine(buffer);
  } finally {
    reader.releaseLock();
  }
}

// Watches `path` (a collection or one object) with ?watch=true, resuming from the last
// resourceVersion when the server ends the stream, until `signal` aborts. Starting without a
// resourceVersion, the current objects arrive first as ADDED. A 410 Expired restarts from
// the current state (onEvent sees ADDED again). Errors other than an abort go to onError,
// and the watch retries after a pause.
export async function watch<T extends { metadata?: { resourceVersion?: string } }>(
  path: string, params: Record<string, string | undefined>, onEvent: (e: WatchEvent<T>) => void,
  signal: AbortSignal, onError?: (e: ApiError) => void, resourceVersion?: string) {
  let rv = resourceVersion;
  while (!signal.aborted) {
    try {
      const res = await fetch(path + query({ ...params, watch: 'true', resourceVersion: rv }), {
        headers: { Accept: 'application/json' }, credentials: 'same-origin', signal,
      });
      if (!res.ok) {
        const err = await errorFrom(res);
        if (res.status === 401) unauthorizedHandler?.();
        throw err;
      }
      await readLines(res, (line) => {
        if (!line.trim()) return;
        const e = JSON.parse(line) as WatchEvent<T>;
        if (e.type === 'ERROR') {
          const s = e.object as unknown as KubeStatus;
          if (s.code === 410) { rv = undefined; return; }
          onError?.(new ApiError(s.code ?? 500, s.message ?? 'watch failed', s.reason));
          return;
        }
        if (e.object?.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
        onEvent(e);
      }, signal);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError) {
        onError?.(err);
        if (err.code === 401 || err.code === 403 || err.code === 404) return;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

// Follows a run's log (…/runs/NAME/log?follow=true): chunks as they are written, until the run
// ends (the server closes the stream) or `signal` aborts.
export async function followLog(path: string, onText: (text: string) => void, signal: AbortSignal) {
  const res = await fetch(`${path}?follow=true`, { credentials: 'same-origin', signal });
  if (!res.ok) throw await errorFrom(res);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || signal.aborted) break;
      onText(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    const causes = err.causes.filter((c) => c.message && !err.message.includes(c.message));
    return causes.length ? `${err.message} (${causes.map((c) => `${c.field}: ${c.message}`).join('; ')})` : err.message;
  }
  if (err instanceof Error) return err.message;
  return String(err);
}
